package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/bench/internal/cleanerwatch"
	"github.com/kustos-dev/kustos/bench/internal/expirysched"
	"github.com/kustos-dev/kustos/bench/internal/harness"
	"github.com/kustos-dev/kustos/bench/internal/kevents"
	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/objects"
	"github.com/kustos-dev/kustos/bench/internal/promrun"
	"github.com/kustos-dev/kustos/bench/internal/workers"
)

const reasonQuota = "QuotaResizeRecommended"

// result is what one run measured; a field is zero when the run failed before measuring it.
type result struct {
	err error

	setup, promSetup time.Duration
	pass             time.Duration      // Kustos's start until every target was looked at once
	steady           time.Duration      // Kustos's start until its first inactivity check after the pass was decided; 0: none
	passReconciles   map[string]float64 // by controller, at the end of the pass
	atPass           kustosproc.Sample  // read right after the pass
	beforeIdle       kustosproc.Sample  // at the start of the idle period
	afterIdle, end   kustosproc.Sample  // at the end of the idle period, at the end
	heapPass         heapReading        // Kustos's heap right after the pass
	heapIdle         heapReading        // at the end of the idle period
	idle             time.Duration      // the idle period as measured
	idleEvents       int                // Kustos Events written during the idle period
	quota            samples            // quota raised to 95% → QuotaResizeRecommended
	cleaner          samples            // Deployment scaled to 0 → Cleaner due
	expiry           expirysched.Group  // scheduled group: ExpiryDue lateness
	cycles           []cycle            // inactivity check cycles after the pass
	churn            *churnResult       // nil: no churn
	events           map[string]int     // every Kustos Event of the run, by reason
	peakHWM          int64              // the largest VmHWM read
	cpuTotal         time.Duration      // whole life, shutdown included
	exit             string
}

// samples is one latency measurement: a latency per sample that got its answer.
type samples struct {
	expected   int
	latencies  []time.Duration
	unexpected int // answers about objects that were not sampled
	errors     int // writes that failed
}

func (s samples) missing() int { return s.expected - len(s.latencies) }

func run(ctx context.Context, o options, logDir, logPath string, logf func(string, ...any)) (r result) {
	cp, err := harness.ControlPlane(ctx, o.BinDir, true, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer cp.Stop()
	cs := cp.Setup
	crc, watchC, err := objects.Clients(cp.Config)
	if err != nil {
		r.err = err
		return r
	}
	s := newShape(o.namespaces, o.deployments, o.cleaners)
	if o.BinDir != "" {
		// internal/activity/promtest finds prometheus in $KUSTOS_TESTBIN.
		if err := os.Setenv("KUSTOS_TESTBIN", o.BinDir); err != nil {
			r.err = err
			return r
		}
	}

	// Setup: namespaces with quotas, Deployments, Cleaners, noise.
	t0 := time.Now()
	if err := objects.CreateNamespaces(ctx, cs, []*corev1.Namespace{objects.Namespace(stateNamespace, nil), objects.Namespace(scheduledNamespace, nil)}, 2); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	quotas, err := objects.CreateQuotas(ctx, cs, s.namespaceNames(), o.Workers)
	if err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	logf("created %d namespaces with quotas at 20%% in %s", o.namespaces, time.Since(t0).Round(time.Millisecond))
	expires := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	ds := make([]*appsv1.Deployment, o.deployments)
	for i := range ds {
		ds[i] = s.deployment(i, expires)
	}
	if err := objects.CreateDeployments(ctx, cs, ds, o.Workers); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	logf("created %d Deployments (%d expiry, %d inactivity targets) by %s", o.deployments, len(s.expiry), len(s.inactivity), time.Since(t0).Round(time.Millisecond))
	if err := workers.Parallel(ctx, o.cleaners, o.Workers, func(ctx context.Context, j int) error {
		return create(ctx, crc, s.cleaner(j))
	}); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	if err := objects.CreateNoise(ctx, cs, o.events, s.namespaceNames(), o.Workers); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	r.setup = time.Since(t0)
	logf("created %d Cleaners and %d noise Events; setup took %s", o.cleaners, o.events, r.setup.Round(time.Millisecond))

	// Prometheus, scraping the activity of every inactivity target.
	t0 = time.Now()
	tb := promrun.NewTB(logDir, logf)
	defer tb.Finish()
	all, active := s.activity()
	exp, err := promrun.NewExporter(tb, all, active)
	if err != nil {
		r.err = err
		return r
	}
	expCtx, stopExp := context.WithCancel(ctx)
	defer stopExp()
	go exp.Serve(expCtx, max(o.scrape/2, 500*time.Millisecond))
	prom, err := promrun.Start(tb, exp, o.scrape, len(all)) //nolint:contextcheck // promtest takes no context: tb.Finish stops Prometheus
	if err != nil {
		r.err = fmt.Errorf("starting Prometheus: %w", err)
		return r
	}
	r.promSetup = time.Since(t0)
	logf("Prometheus %s up with %d+%d series in %s; %d targets in use", prom.URL, len(all), len(all), r.promSetup.Round(time.Millisecond), len(active))

	// The watches, before Kustos starts.
	wcs, err := cp.WatchClient()
	if err != nil {
		r.err = err
		return r
	}
	ew, err := kevents.Start(ctx, wcs, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer func() {
		if err := ew.Stop(); err != nil && r.err == nil {
			r.err = err
		}
	}()
	cw, err := cleanerwatch.Start(ctx, watchC, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer cw.Stop()

	addr, err := kmetrics.FreeAddr(ctx)
	if err != nil {
		r.err = err
		return r
	}
	pprofAddr := "0"
	if o.heapProfile != "" || o.cpuProfile != "" {
		if pprofAddr, err = kmetrics.FreeAddr(ctx); err != nil {
			r.err = err
			return r
		}
	}
	start := time.Now()
	k, err := startKustos(o, cp.Kubeconfig, addr, pprofAddr, prom.URL, logPath)
	if err != nil {
		r.err = err
		return r
	}
	defer func() {
		var err error
		r.exit, r.cpuTotal, err = k.Stop(stopGrace)
		if err != nil && r.err == nil {
			r.err = err
		}
	}()
	sc := kmetrics.NewScraper(addr)
	pl := startPoller(ctx, sc, k, o.poll)
	defer pl.stop()
	logf("kustos running (pid %d, metrics on %s); waiting for its initial pass", k.Pid(), addr)

	// Phase 1: every target looked at once.
	passAt, err := waitPass(ctx, pl, s, o, start, logf)
	if err != nil {
		r.err = err
		return r
	}
	r.pass = passAt.Sub(start)
	if r.atPass, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	r.passReconciles = pl.last().reconciles()
	r.heapPass = heapNow(ctx, sc)
	logf("initial pass done by %s after start; RSS %.1f MiB (anonymous %.1f), peak %.1f MiB; heap after GC %s",
		r.pass.Round(time.Millisecond), r.atPass.RSSMiB(), r.atPass.AnonMiB(), r.atPass.HWMMiB(), r.heapPass)

	// The idle period starts after the inactivity detector's first check after the pass.
	steadyAt, err := waitSteady(ctx, pl, passAt, len(s.inactivity), 2*o.checkInterval+time.Minute, o.poll)
	if err != nil {
		r.err = err
		return r
	}
	if steadyAt.IsZero() {
		logf("no inactivity check after the initial pass was decided; idling now")
	} else {
		r.steady = steadyAt.Sub(start)
		logf("the inactivity detector's first check after the pass was decided %s after start", r.steady.Round(time.Millisecond))
	}

	// Phase 2: idle, /metrics read rarely.
	pl.setPeriod(o.idlePoll)
	events0 := ew.Count()
	if r.beforeIdle, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	idleStart := time.Now()
	cpuProfiled := make(chan error, 1)
	if o.cpuProfile != "" {
		// The profiler's own cost (sampling at 100 Hz, encoding the profile) is in the idle CPU
		// measured alongside.
		go func() {
			cpuProfiled <- saveProfile(ctx, pprofAddr, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(o.idle.Seconds()))), o.cpuProfile)
		}()
	}
	if err := sleep(ctx, o.idle); err != nil {
		r.err = err
		return r
	}
	if o.cpuProfile != "" {
		if err := <-cpuProfiled; err != nil {
			logf("CPU profile: %v", err)
		} else {
			logf("CPU profile of the idle period written to %s", o.cpuProfile)
		}
	}
	if r.afterIdle, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	r.idle = time.Since(idleStart)
	r.idleEvents = ew.Count() - events0
	pl.setPeriod(o.poll)
	idleEnd := time.Now()
	r.heapIdle = heapNow(ctx, sc)
	if o.heapProfile != "" {
		if err := saveHeapProfile(ctx, pprofAddr, o.heapProfile); err != nil {
			logf("heap profile: %v", err)
		} else {
			logf("heap profile written to %s", o.heapProfile)
		}
	}
	logf("after idle: CPU +%.2f s over %s; RSS %.1f MiB (anonymous %.1f), peak %.1f MiB; heap after GC %s; %d Kustos Events",
		(r.afterIdle.CPU - r.beforeIdle.CPU).Seconds(), r.idle.Round(time.Millisecond), r.afterIdle.RSSMiB(), r.afterIdle.AnonMiB(),
		r.afterIdle.HWMMiB(), r.heapIdle, r.idleEvents)

	// Phase 3: detection latencies. The expiry group's deadlines run meanwhile.
	var wg sync.WaitGroup
	var expiryErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.expiry, expiryErr = expirysched.Run(ctx, expirysched.Params{Namespace: scheduledNamespace, N: o.scheduled, Workers: o.Workers,
			From: o.from, To: o.to, WarningBefore: o.warningBefore, Interval: o.notifyEvery, Timeout: o.timeout, Verbose: o.verbose}, cs, ew, logf)
	}()
	rng := rand.New(rand.NewPCG(o.seed, 0x6b7573746f73)) // "kustos"
	r.quota = quotaLatency(ctx, o, cs, ew, quotas, rng.Perm(len(quotas))[:o.quotaSamples], logf)
	r.cleaner = cleanerLatency(ctx, o, s, cs, cw, rng.Perm(o.cleaners)[:o.cleanerSamples], logf)
	wg.Wait()
	if expiryErr != nil {
		r.err = fmt.Errorf("expiry: %w", expiryErr)
		return r
	}

	// Phase 4: churn.
	if o.churn > 0 {
		cr, err := churn(ctx, o, s, cs, crc, exp, pl, k, logf)
		r.churn = &cr
		if err != nil {
			r.err = fmt.Errorf("churn: %w", err)
			return r
		}
	}

	if r.end, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	r.cycles = findCycles(pl.all(), idleEnd, float64(len(s.inactivity)))
	r.peakHWM = max(r.atPass.HWMKiB, r.afterIdle.HWMKiB, r.end.HWMKiB)
	r.events = ew.ByReason()
	logf("end: CPU %.2f s, RSS %.1f MiB (anonymous %.1f), peak %.1f MiB; Kustos Events by reason %v",
		r.end.CPU.Seconds(), r.end.RSSMiB(), r.end.AnonMiB(), float64(r.peakHWM)/1024, r.events)
	return r
}

// heapNow reads Kustos's heap once (zero when the read fails).
func heapNow(ctx context.Context, sc kmetrics.Scraper) heapReading {
	m, err := sc.Scrape(ctx)
	if err != nil {
		return heapReading{}
	}
	return observe(time.Now(), m).heap
}

// startKustos starts `kustos run` in observer mode with every detector on, its metrics on addr.
func startKustos(o options, kubeconfig, addr, pprofAddr, promURL, logPath string) (*kustosproc.Process, error) {
	return kustosproc.Start(o.Kustos, []string{
		"--kubeconfig=" + kubeconfig,
		"--mode=observe",
		"--enable-cleaners=true",
		"--enable-expiry=true",
		"--lifecycle-kinds=apps/v1/Deployment",
		"--expiry-warning-before=" + o.warningBefore.String(),
		"--notification-interval=" + o.notifyEvery.String(),
		"--enable-inactivity=true",
		"--inactivity-kinds=apps/v1/Deployment",
		"--prometheus-url=" + promURL,
		"--inactivity-check-interval=" + o.checkInterval.String(),
		"--activity-min-step=" + o.checkInterval.String(),
		"--activity-lookback=1h",
		"--state-namespace=" + stateNamespace,
		"--leader-elect=false",
		"--metrics-bind-address=" + addr,
		"--health-probe-bind-address=0",
		"--pprof-bind-address=" + pprofAddr,
		"--log-level=" + o.logLevel,
	}, logPath)
}

// saveHeapProfile writes Kustos's heap profile, after a GC (gc=1), from its pprof address.
func saveHeapProfile(ctx context.Context, addr, path string) error {
	return saveProfile(ctx, addr, "/debug/pprof/heap?gc=1", path)
}

// saveProfile writes what Kustos's pprof endpoint at addr serves on uri to path.
func saveProfile(ctx context.Context, addr, uri, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+uri, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", uri, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// quotaLatency raises the sampled quotas to 95% use, o.interval apart, and times each until the
// watch delivers Kustos's QuotaResizeRecommended Event about it (as bench/controlplane does).
func quotaLatency(ctx context.Context, o options, cs kubernetes.Interface, ew *kevents.Watcher, quotas []*corev1.ResourceQuota,
	picked []int, logf func(string, ...any)) samples {
	res := samples{expected: len(picked)}
	sent := make([]time.Time, len(picked))
	keys := make([]string, len(picked))
	start := time.Now()
	for n, idx := range picked {
		if d := time.Until(start.Add(time.Duration(n) * o.interval)); d > 0 {
			time.Sleep(d)
		}
		q := quotas[idx].DeepCopy()
		q.Status.Used[corev1.ResourceRequestsCPU] = resource.MustParse("9500m")
		keys[n] = q.Namespace + "/" + q.Name
		sent[n] = time.Now()
		if _, err := cs.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
			res.errors++
			logf("updating status of %s: %v", keys[n], err)
		}
	}
	last := time.Now()
	_, _ = ew.Wait(ctx, last.Add(o.timeout), func() bool {
		for _, key := range keys {
			if ew.Get("ResourceQuota", key, reasonQuota).Count == 0 {
				return false
			}
		}
		return true
	})
	sampled := map[string]bool{}
	for n, key := range keys {
		sampled[key] = true
		if s := ew.Get("ResourceQuota", key, reasonQuota); s.Count > 0 {
			res.latencies = append(res.latencies, s.Seen.Sub(sent[n]))
		}
	}
	res.unexpected, _ = ew.Tally(func(kind, key, reason string) bool {
		return kind != "ResourceQuota" || reason != reasonQuota || sampled[key]
	})
	logf("quota: %d/%d QuotaResizeRecommended Events; %s", len(res.latencies), res.expected, latencyString(res.latencies))
	return res
}

// cleanerLatency scales the sampled Cleaners' Deployments to zero, o.interval apart, and times
// each until the watch delivers the Cleaner's status with lastEvaluation.due (as bench/cleaners
// does with a ConfigMap). Observer mode: nothing is deleted.
func cleanerLatency(ctx context.Context, o options, s shape, cs kubernetes.Interface, cw *cleanerwatch.Watcher, picked []int,
	logf func(string, ...any)) samples {
	res := samples{expected: len(picked)}
	if len(picked) == 0 {
		return res
	}
	sent := make([]time.Time, len(picked))
	keys := make([]string, len(picked))
	patch := []byte(`{"spec":{"replicas":0}}`)
	start := time.Now()
	for n, j := range picked {
		if d := time.Until(start.Add(time.Duration(n) * o.interval)); d > 0 {
			time.Sleep(d)
		}
		i := s.cleanerTarget(j)
		keys[n] = s.namespaceOf(i) + "/" + cleanerName(j)
		sent[n] = time.Now()
		if _, err := cs.AppsV1().Deployments(s.namespaceOf(i)).Patch(ctx, deploymentName(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			res.errors++
			logf("scaling %s/%s to 0: %v", s.namespaceOf(i), deploymentName(i), err)
		}
	}
	last := time.Now()
	_, _ = cw.Wait(ctx, last.Add(o.timeout), func() bool {
		for _, key := range keys {
			if cw.Get(key).Due.IsZero() {
				return false
			}
		}
		return true
	})
	sampled := map[string]bool{}
	for n, key := range keys {
		sampled[key] = true
		if d := cw.Get(key).Due; !d.IsZero() {
			res.latencies = append(res.latencies, d.Sub(sent[n]))
		}
	}
	for j := 0; j < o.cleaners; j++ {
		key := s.namespaceOf(s.cleanerTarget(j)) + "/" + cleanerName(j)
		if !sampled[key] && !cw.Get(key).Due.IsZero() {
			res.unexpected++
		}
	}
	logf("Cleaners: %d/%d due; %s", len(res.latencies), res.expected, latencyString(res.latencies))
	return res
}

// create creates obj, retrying the transient failures a loaded API server answers with.
func create(ctx context.Context, c client.Client, obj client.Object) error {
	if err := workers.Retry(ctx, func() error { return c.Create(ctx, obj) }); err != nil {
		return fmt.Errorf("creating %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
