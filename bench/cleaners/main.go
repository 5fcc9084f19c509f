package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/bench/internal/cleanerwatch"
	"github.com/kustos-dev/kustos/bench/internal/harness"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/objects"
	"github.com/kustos-dev/kustos/bench/internal/report"
	"github.com/kustos-dev/kustos/bench/internal/workers"
)

const stopGrace = 30 * time.Second

type options struct {
	harness.Flags

	logLevel                     string
	n, namespaces, samples, late int
	idle, interval, timeout      time.Duration
	evalTimeout, latePeriod      time.Duration
	lateFrom, lateTo             time.Duration
	seed                         uint64
	verbose                      bool
}

func main() {
	harness.Main(harness.Bench[options]{Name: "cleaners", Parse: parseFlags, NoVersion: true, Run: func(s *harness.Session, o options) harness.Result {
		r := run(s.Ctx, o, s.LogPath, s.Logf)
		table := r.table()
		return harness.Result{Err: r.err, Report: render(r, o), Failed: table.Broken(), Missed: table.Missed()}
	}})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := harness.NewFlagSet("cleaners", stderr)
	var o options
	o.Register(fs, harness.BinHelp, harness.KeepLogsHelp)
	fs.IntVar(&o.n, "n", 10000, "idle Cleaners, each with three ConfigMap targets")
	fs.IntVar(&o.namespaces, "namespaces", 100, "namespaces the idle Cleaners are spread over")
	fs.DurationVar(&o.evalTimeout, "eval-timeout", 10*time.Minute, "how long Kustos may take to evaluate every idle Cleaner once")
	fs.DurationVar(&o.idle, "idle", 30*time.Second, "idle period after every Cleaner was evaluated")
	fs.IntVar(&o.samples, "samples", 100, "Cleaners whose condition is made true, one latency sample each")
	fs.DurationVar(&o.interval, "interval", 50*time.Millisecond, "time between two sampled updates")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the due statuses after the last update")
	fs.IntVar(&o.late, "late", 20, "Cleaners per lateness group (monotonic, periodic)")
	fs.DurationVar(&o.lateFrom, "late-from", 15*time.Second, "earliest time, after their creation, at which a lateness Cleaner becomes due")
	fs.DurationVar(&o.lateTo, "late-to", 30*time.Second, "latest such time; the group's due times are spread evenly in between, on whole seconds")
	fs.DurationVar(&o.latePeriod, "late-period", 20*time.Second, "retry.period of the periodic lateness group")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the RNG that picks the sampled Cleaners")
	harness.LogLevelFlag(fs, &o.logLevel)
	fs.BoolVar(&o.verbose, "v", false, "print every sample's latency and every lateness")
	if err := o.Parse(fs, args); err != nil {
		return o, err
	}
	switch {
	case o.n < 1 || o.namespaces < 1 || o.Workers < 1 || o.late < 1:
		return o, errors.New("-n, -namespaces, -workers and -late must be at least 1")
	case o.samples < 1 || o.samples > o.n:
		return o, fmt.Errorf("-samples=%d: must be between 1 and -n", o.samples)
	case o.idle < 0 || o.interval < 0 || o.timeout <= 0 || o.evalTimeout <= 0:
		return o, errors.New("-idle and -interval must not be negative, -timeout and -eval-timeout must be positive")
	case o.lateFrom < 5*time.Second || o.lateTo < o.lateFrom || o.latePeriod < 10*time.Second:
		// A Cleaner's retry.period must be at least 10s.
		return o, errors.New("want 5s ≤ -late-from ≤ -late-to and -late-period ≥ 10s")
	}
	return o, nil
}

// result is what one run measured; a field is zero when the run failed before measuring it.
type result struct {
	err error // the run could not be carried through

	setup              time.Duration
	kustosStart        time.Time
	evaluated          int
	firstEval, allEval time.Duration // after Kustos started
	dueEarly, deleted  int           // idle Cleaners due before any change; Cleaners deleted
	atEval, afterIdle  kustosproc.Sample
	idleWrites         int           // status writes during the idle period
	idleLastWrite      time.Duration // when the last of them was seen, into the idle period

	probe       []time.Duration // round trips of status writes to an inert Cleaner
	sampled     int
	latencies   []time.Duration // of the samples that were seen due, in sample order
	unexpected  int             // idle Cleaners due that were not sampled
	patchErrors int

	mono, periodic lateness
	end            kustosproc.Sample // just before SIGTERM
	cpuTotal       time.Duration     // whole life, shutdown included
}

// lateness is how late after its due time T each Cleaner of a group was seen due.
type lateness struct {
	wall    []time.Duration // the watch delivered the due status − T
	evalAt  []time.Duration // status.lastEvaluation.time (whole seconds) − T
	missing int
	early   int // seen due before T
}

func run(ctx context.Context, o options, logPath string, logf func(string, ...any)) (r result) {
	cp, err := harness.ControlPlane(ctx, o.BinDir, true, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer cp.Stop()

	setupC, watchC, err := objects.Clients(cp.Config)
	if err != nil {
		r.err = err
		return r
	}

	// Setup: namespaces, then per Cleaner its three ConfigMaps and itself.
	t0 := time.Now()
	nsNames := []string{stateNamespace, lateNamespace}
	for i := 0; i < o.namespaces; i++ {
		nsNames = append(nsNames, namespaceName(i))
	}
	if err := workers.Parallel(ctx, len(nsNames), o.Workers, func(ctx context.Context, i int) error {
		return createNamespace(ctx, setupC, nsNames[i])
	}); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	if err := workers.Parallel(ctx, o.n, o.Workers, func(ctx context.Context, i int) error {
		return createCleaner(ctx, setupC, idleCleaner(i, o.namespaces))
	}); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	if err := create(ctx, setupC, probeCleaner()); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	r.setup = time.Since(t0)
	logf("created %d namespaces, %d ConfigMaps and %d Cleaners in %s", o.namespaces, 3*o.n, o.n, r.setup.Round(time.Millisecond))
	// creationTimestamp has whole seconds: past 2 s, every TTL of 1 s has passed.
	time.Sleep(2 * time.Second)

	w, err := cleanerwatch.Start(ctx, watchC, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer w.Stop()

	// Phase 1: Kustos starts, evaluates every Cleaner once, then idles.
	r.kustosStart = time.Now()
	k, err := startKustos(o.Kustos, cp.Kubeconfig, logPath, o.logLevel)
	if err != nil {
		r.err = err
		return r
	}
	defer func() {
		_, cpu, err := k.Stop(stopGrace)
		r.cpuTotal = cpu
		if err != nil && r.err == nil {
			r.err = err
		}
	}()
	logf("kustos running (pid %d); waiting for %d Cleaners to be evaluated", k.Pid(), o.n)
	idleKeys := make([]string, o.n)
	for i := range idleKeys {
		cl := idleCleaner(i, o.namespaces)
		idleKeys[i] = cl.Namespace + "/" + cl.Name
	}
	progress := time.Now()
	ok, err := w.Wait(ctx, r.kustosStart.Add(o.evalTimeout), func() bool {
		n, _ := w.Counts()
		if time.Since(progress) >= 10*time.Second {
			progress = time.Now()
			logf("  %d/%d evaluated", n, o.n)
		}
		return n >= o.n
	})
	if err == nil {
		r.atEval, err = k.Sample()
	}
	if err != nil {
		r.err = err
		return r
	}
	r.evaluated, _ = w.Counts()
	var firstEval, lastEval time.Time
	for _, key := range idleKeys {
		s := w.Get(key)
		if !s.Due.IsZero() {
			r.dueEarly++
		}
		if e := s.Evaluated; !e.IsZero() {
			if firstEval.IsZero() || e.Before(firstEval) {
				firstEval = e
			}
			if e.After(lastEval) {
				lastEval = e
			}
		}
	}
	if !firstEval.IsZero() {
		r.firstEval, r.allEval = firstEval.Sub(r.kustosStart), lastEval.Sub(r.kustosStart)
	}
	if !ok {
		r.err = fmt.Errorf("only %d of %d Cleaners evaluated within %s", r.evaluated, o.n, o.evalTimeout)
		return r
	}
	logf("all %d evaluated %s after start (first after %s); CPU %.2f s, RSS %.1f MiB, peak %.1f MiB; idle for %s",
		o.n, r.allEval.Round(time.Millisecond), r.firstEval.Round(time.Millisecond), r.atEval.CPU.Seconds(), r.atEval.RSSMiB(), r.atEval.HWMMiB(), o.idle)
	_, writes0 := w.Counts()
	idleStart := time.Now()
	if o.verbose {
		traced := 0
		w.SetTrace(func(old, cl *v1alpha1.Cleaner) {
			traced++
			if traced <= 3 {
				logf("  status write while idle, %s/%s:\n    before %s\n    after  %s", cl.Namespace, cl.Name, statusJSON(old), statusJSON(cl))
			}
		})
	}
	select {
	case <-ctx.Done():
		r.err = ctx.Err()
		return r
	case <-time.After(o.idle):
	}
	if r.afterIdle, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	_, writes1 := w.Counts()
	w.SetTrace(nil)
	r.idleWrites = writes1 - writes0
	if r.idleWrites > 0 {
		r.idleLastWrite = w.LastWriteAt().Sub(idleStart)
	}
	logf("after idle: CPU %.2f s (+%.2f s), RSS %.1f MiB, peak %.1f MiB, %d status writes while idle (the last %s into it)",
		r.afterIdle.CPU.Seconds(), (r.afterIdle.CPU - r.atEval.CPU).Seconds(), r.afterIdle.RSSMiB(), r.afterIdle.HWMMiB(),
		r.idleWrites, r.idleLastWrite.Round(time.Millisecond))

	// The API server's own latency for the write the samples wait for.
	if r.probe, r.err = probeWrites(ctx, setupC, o.samples/5+1, o.interval); r.err != nil {
		return r
	}
	logf("status write round trip of an inert Cleaner: p50 %s ms, max %s ms", report.MS(kustosproc.Percentile(r.probe, 50)), report.MS(kustosproc.Percentile(r.probe, 100)))
	// Phase 2: the target "a" of sampled Cleaners gets data.done "yes".
	if r.err = reevaluate(ctx, o, &r, setupC, w, idleKeys, logf); r.err != nil {
		return r
	}
	// Phase 3: Cleaners that become due at a known time, monotonic and periodic.
	if r.err = late(ctx, o, &r, setupC, w, logf); r.err != nil {
		return r
	}
	if r.end, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	for _, key := range idleKeys {
		if w.Get(key).Deleted {
			r.deleted++
		}
	}
	logf("end: CPU %.2f s, RSS %.1f MiB, peak %.1f MiB", r.end.CPU.Seconds(), r.end.RSSMiB(), r.end.HWMMiB())
	return r
}

func reevaluate(ctx context.Context, o options, r *result, c client.Client, w *cleanerwatch.Watcher, idleKeys []string, logf func(string, ...any)) error {
	rng := rand.New(rand.NewPCG(o.seed, 0x6b7573746f73)) // "kustos"
	sampled := rng.Perm(o.n)[:o.samples]
	r.sampled = len(sampled)
	isSampled := make(map[string]bool, len(sampled))
	sent := make([]time.Time, len(sampled))
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"done":"yes"}}`))
	start := time.Now()
	for i, idx := range sampled {
		if d := time.Until(start.Add(time.Duration(i) * o.interval)); d > 0 {
			time.Sleep(d)
		}
		key := idleKeys[idx]
		isSampled[key] = true
		ns, name, _ := strings.Cut(key, "/")
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = ns, name+"-a"
		sent[i] = time.Now()
		if err := c.Patch(ctx, cm, patch); err != nil {
			r.patchErrors++
			logf("patching ConfigMap %s/%s: %v", ns, cm.Name, err)
		}
	}
	last := time.Now()
	logf("%d target ConfigMaps set to done in %s; waiting up to %s for the due statuses", len(sampled), last.Sub(start).Round(time.Millisecond), o.timeout)
	allDue := func() bool {
		for _, idx := range sampled {
			if w.Get(idleKeys[idx]).Due.IsZero() {
				return false
			}
		}
		return true
	}
	if _, err := w.Wait(ctx, last.Add(o.timeout), allDue); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond) // a short look for strays
	var b strings.Builder
	for i, idx := range sampled {
		if s := w.Get(idleKeys[idx]); !s.Due.IsZero() {
			r.latencies = append(r.latencies, s.Due.Sub(sent[i]))
			fmt.Fprintf(&b, " %s", report.MS(s.Due.Sub(sent[i])))
		} else {
			b.WriteString(" missing")
		}
	}
	for _, key := range idleKeys {
		if !isSampled[key] && !w.Get(key).Due.IsZero() {
			r.unexpected++
		}
	}
	if o.verbose {
		logf("latencies in ms, in update order:%s", b.String())
	}
	logf("due %d/%d: %s; %d unexpected", len(r.latencies), len(sampled),
		report.Latency(r.latencies), r.unexpected)
	return nil
}

// probeWrites times n status writes (read first, not timed) to the inert Cleaner probeName,
// interval apart: what one write of a Cleaner's status costs at the API server now.
func probeWrites(ctx context.Context, c client.Client, n int, interval time.Duration) ([]time.Duration, error) {
	var out []time.Duration
	for i := 0; i < n; i++ {
		cl := &v1alpha1.Cleaner{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: lateNamespace, Name: probeName}, cl); err != nil {
			return nil, fmt.Errorf("reading the probe Cleaner: %w", err)
		}
		next := metav1.NewTime(time.Now().Add(time.Duration(i+1) * time.Hour))
		cl.Status.NextScheduledEvaluation = &next
		t0 := time.Now()
		if err := c.Status().Update(ctx, cl); err != nil {
			return nil, fmt.Errorf("writing the status of the probe Cleaner: %w", err)
		}
		out = append(out, time.Since(t0))
		time.Sleep(interval)
	}
	return out, nil
}

func late(ctx context.Context, o options, r *result, c client.Client, w *cleanerwatch.Watcher, logf func(string, ...any)) error {
	base := time.Now().Truncate(time.Second).Add(time.Second)
	due := make([]time.Time, o.late)
	var cleaners []*v1alpha1.Cleaner
	for i := range due {
		off := o.lateFrom
		if o.late > 1 {
			off += (o.lateTo - o.lateFrom) * time.Duration(i) / time.Duration(o.late-1)
		}
		due[i] = base.Add(off).Round(time.Second)
		cleaners = append(cleaners,
			lateCleaner(fmt.Sprintf("monotonic-%02d", i), due[i], v1alpha1.Retry{Monotonic: true, Period: "1h"}),
			lateCleaner(fmt.Sprintf("periodic-%02d", i), due[i], v1alpha1.Retry{Period: o.latePeriod.String()}))
	}
	if err := workers.Parallel(ctx, len(cleaners), o.Workers, func(ctx context.Context, i int) error {
		return createCleaner(ctx, c, cleaners[i])
	}); err != nil {
		return fmt.Errorf("creating the lateness Cleaners: %w", err)
	}
	deadline := due[len(due)-1].Add(o.latePeriod + 10*time.Second)
	logf("%d monotonic and %d periodic (period %s) Cleaners due between %s and %s; waiting until %s",
		o.late, o.late, o.latePeriod, due[0].Format("15:04:05"), due[len(due)-1].Format("15:04:05"), deadline.Format("15:04:05"))
	if _, err := w.Wait(ctx, deadline, func() bool {
		for _, cl := range cleaners {
			if w.Get(cl.Namespace + "/" + cl.Name).Due.IsZero() {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	for i, cl := range cleaners {
		g := &r.mono // cleaners alternate: monotonic, periodic
		if i%2 == 1 {
			g = &r.periodic
		}
		s := w.Get(cl.Namespace + "/" + cl.Name)
		if s.Due.IsZero() {
			g.missing++
			if o.verbose && s.Last != nil {
				logf("  %s: never due; status %s", cl.Name, statusJSON(s.Last))
			}
			continue
		}
		at := due[i/2]
		if s.Due.Before(at) || s.DueEval.Time.Before(at) {
			g.early++
		}
		g.wall = append(g.wall, s.Due.Sub(at))
		g.evalAt = append(g.evalAt, s.DueEval.Sub(at))
		if o.verbose {
			logf("  %s: due at %s, seen due %s later (lastEvaluation.time %s)", cl.Name, at.Format("15:04:05"), report.MS(s.Due.Sub(at))+" ms", s.DueEval.Format("15:04:05"))
		}
	}
	logf("monotonic: seen due p50 %s ms, max %s ms after T; periodic: p50 %s ms, max %s ms",
		report.MS(kustosproc.Percentile(r.mono.wall, 50)), report.MS(kustosproc.Percentile(r.mono.wall, 100)), report.MS(kustosproc.Percentile(r.periodic.wall, 50)), report.MS(kustosproc.Percentile(r.periodic.wall, 100)))
	return nil
}

func statusJSON(cl *v1alpha1.Cleaner) string {
	b, err := json.Marshal(cl.Status)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
