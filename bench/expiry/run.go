package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kustos-dev/kustos/bench/internal/expirysched"
	"github.com/kustos-dev/kustos/bench/internal/harness"
	"github.com/kustos-dev/kustos/bench/internal/kevents"
	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/objects"
)

// result is what one run measured; a field is zero when the run failed before measuring it.
type result struct {
	err error // the run could not be carried through

	setup       time.Duration // namespaces and idle Deployments
	kustosStart time.Time

	// The initial pass: done by pass after Kustos started, with passReconciles reconciles of
	// Deployments by then; atPass is read right after.
	pass           time.Duration
	passReconciles float64
	atPass         kustosproc.Sample

	// The idle period: afterIdle is read at its end; the rest are increases over it.
	afterIdle      kustosproc.Sample
	idleReconciles float64 // of every controller
	idleRequests   float64 // API requests by Kustos
	idleEvents     int     // Kustos Events

	schedSetup time.Duration
	sched      []expirysched.Scheduled
	stats      expirysched.Stats

	unexpected int      // Kustos Events about idle Deployments, or of other reasons, over the run
	examples   []string // a few of them
	errors     float64  // reconcile errors of the expiry detector
	end        kustosproc.Sample
	cpuTotal   time.Duration // whole life, shutdown included
	exit       string
}

func run(ctx context.Context, o options, logPath string, logf func(string, ...any)) (r result) {
	cp, err := harness.ControlPlane(ctx, o.BinDir, false, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer cp.Stop()
	cs := cp.Setup
	wcs, err := cp.WatchClient()
	if err != nil {
		r.err = err
		return r
	}

	// Setup: the namespaces, then the idle Deployments, spread round-robin over them.
	t0 := time.Now()
	nss := []*corev1.Namespace{objects.Namespace(stateNamespace, nil), objects.Namespace(scheduledNamespace, nil)}
	for i := 0; i < o.namespaces; i++ {
		nss = append(nss, objects.Namespace(namespaceName(i), nil))
	}
	if err := objects.CreateNamespaces(ctx, cs, nss, o.Workers); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	expires := time.Now().Add(o.farFuture).Truncate(time.Second)
	idle := make([]*appsv1.Deployment, o.n)
	for i := range idle {
		idle[i] = expirysched.Deployment(namespaceName(i%o.namespaces), idleName(i), 0, fmt.Sprintf("team-%02d@example.com", i%o.namespaces), expires)
	}
	if err := objects.CreateDeployments(ctx, cs, idle, o.Workers); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	r.setup = time.Since(t0)
	logf("created %d namespaces and %d Deployments expiring at %s in %s", o.namespaces, o.n, expires.Format(time.RFC3339), r.setup.Round(time.Millisecond))

	w, err := kevents.Start(ctx, wcs, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer func() {
		if err := w.Stop(); err != nil && r.err == nil {
			r.err = err
		}
	}()
	addr, err := kmetrics.FreeAddr(ctx)
	if err != nil {
		r.err = err
		return r
	}
	sc := kmetrics.NewScraper(addr)

	// Phase 1: Kustos starts and looks at every Deployment once.
	r.kustosStart = time.Now()
	k, err := startKustos(o, cp.Kubeconfig, addr, logPath)
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
	logf("kustos running (pid %d, metrics on %s); waiting for its initial pass over %d Deployments", k.Pid(), addr, o.n)
	done, q, err := waitPass(ctx, k, sc, o, r.kustosStart, logf)
	if err != nil {
		r.err = err
		return r
	}
	if r.atPass, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	r.pass, r.passReconciles = done.Sub(r.kustosStart), q.Reconciles
	logf("initial pass done by %s after start (%.0f reconciles of Deployments); CPU %.2f s, RSS %.1f MiB, peak %.1f MiB; idle for %s",
		r.pass.Round(time.Millisecond), q.Reconciles, r.atPass.CPU.Seconds(), r.atPass.RSSMiB(), r.atPass.HWMMiB(), o.idle)

	// Phase 2: nothing is due for 30 days.
	m0, err := sc.Scrape(ctx)
	if err != nil {
		r.err = fmt.Errorf("reading Kustos's metrics: %w", err)
		return r
	}
	events0 := w.Count()
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
	m1, err := sc.Scrape(ctx)
	if err != nil {
		r.err = fmt.Errorf("reading Kustos's metrics: %w", err)
		return r
	}
	r.idleEvents = w.Count() - events0
	r.idleReconciles = kmetrics.Delta(m0, m1, metricReconciles)
	r.idleRequests = kmetrics.Delta(m0, m1, metricRequests)
	logf("after idle: CPU %.2f s (+%.2f s), RSS %.1f MiB, peak %.1f MiB; while idle %.0f reconciles, %.0f API requests, %d Events",
		r.afterIdle.CPU.Seconds(), (r.afterIdle.CPU - r.atPass.CPU).Seconds(), r.afterIdle.RSSMiB(), peakMiB(r.atPass, r.afterIdle),
		r.idleReconciles, r.idleRequests, r.idleEvents)

	// Phase 3: a group whose deadlines fall during the run.
	if r.err = schedule(ctx, o, &r, cs, w, logf); r.err != nil {
		return r
	}
	if r.end, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	if m2, err := sc.Scrape(ctx); err == nil {
		r.errors, _ = m2.Sum(metricErrors, kmetrics.ControllerHasPrefix(expiryPrefix))
	}
	r.unexpected, r.examples = w.Tally(func(kind, key, reason string) bool {
		return kind == "Deployment" && strings.HasPrefix(key, scheduledNamespace+"/") && (reason == reasonWarning || reason == reasonDue)
	})
	logf("end: CPU %.2f s, RSS %.1f MiB, peak %.1f MiB; %d unexpected Kustos Events %v",
		r.end.CPU.Seconds(), r.end.RSSMiB(), peakMiB(r.atPass, r.afterIdle, r.end), r.unexpected, r.examples)
	return r
}

// startKustos starts `kustos run` in observer mode with the expiry detector alone (and the
// quota detector, which always runs and has nothing to do here), its metrics on addr.
func startKustos(o options, kubeconfig, addr, logPath string) (*kustosproc.Process, error) {
	return kustosproc.Start(o.Kustos, []string{
		"--kubeconfig=" + kubeconfig,
		"--mode=observe",
		"--enable-cleaners=false",
		"--enable-expiry=true",
		"--lifecycle-kinds=apps/v1/Deployment",
		"--expiry-warning-before=" + o.warningBefore.String(),
		"--notification-interval=" + o.interval.String(),
		"--state-namespace=" + stateNamespace,
		"--leader-elect=false",
		"--metrics-bind-address=" + addr,
		"--health-probe-bind-address=0",
		"--log-level=" + o.logLevel,
	}, logPath)
}

// waitPass reads Kustos's metrics every -poll until passDone, and returns the time of the first
// of the two reads that showed it.
func waitPass(ctx context.Context, k *kustosproc.Process, sc kmetrics.Scraper, o options, start time.Time, logf func(string, ...any)) (time.Time, kmetrics.Queue, error) {
	deadline := start.Add(o.passTimeout)
	t := time.NewTicker(o.poll)
	defer t.Stop()
	var prev kmetrics.Queue
	var prevAt, progress time.Time
	var lastErr error
	for {
		if err := k.Running(); err != nil {
			return time.Time{}, prev, err
		}
		at := time.Now()
		m, err := sc.Scrape(ctx)
		var cur kmetrics.Queue
		if err == nil {
			cur, err = expiryQueue(m)
		}
		switch {
		case err != nil:
			lastErr, prevAt = err, time.Time{}
		case !prevAt.IsZero() && passDone(prev, cur, o.n):
			return prevAt, cur, nil
		default:
			prev, prevAt = cur, at
		}
		if time.Since(progress) >= 10*time.Second {
			if !progress.IsZero() {
				logf("  %.0f reconciles of Deployments, %.0f queued, %.0f in progress", cur.Reconciles, cur.Ready, cur.Active)
			}
			progress = time.Now()
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("the initial pass was not over within %s (%.0f reconciles of %d Deployments, %.0f queued, %.0f in progress)",
				o.passTimeout, prev.Reconciles, o.n, prev.Ready, prev.Active)
			if lastErr != nil {
				err = fmt.Errorf("%w; the last read of its metrics failed: %w", err, lastErr)
			}
			return time.Time{}, prev, err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, prev, ctx.Err()
		case <-t.C:
		}
	}
}

// schedule creates the group of Deployments whose deadlines fall during the run, waits for
// their ExpiryDue Events and analyses them into r (bench/internal/expirysched).
func schedule(ctx context.Context, o options, r *result, cs kubernetes.Interface, w *kevents.Watcher, logf func(string, ...any)) error {
	g, err := expirysched.Run(ctx, expirysched.Params{Namespace: scheduledNamespace, N: o.scheduled, Workers: o.Workers,
		From: o.from, To: o.to, WarningBefore: o.warningBefore, Interval: o.interval, Timeout: o.timeout, Verbose: o.verbose}, cs, w, logf)
	r.schedSetup, r.sched, r.stats = g.Setup, g.Scheduled, g.Stats
	return err
}
