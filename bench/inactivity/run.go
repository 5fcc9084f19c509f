package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kustos-dev/kustos/bench/internal/harness"
	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/objects"
	"github.com/kustos-dev/kustos/bench/internal/promrun"
)

// result is what one run measured; a field is zero when the run failed before measuring it.
type result struct {
	err error // the run could not be carried through

	setup     time.Duration // namespaces and Deployments
	promSetup time.Duration // Prometheus up with every series scraped
	sources   int           // activity sources Kustos queries (the defaults: 2)

	// The initial pass: every target looked at once after Kustos's start.
	pass           time.Duration
	passReconciles float64
	atPass         kustosproc.Sample

	cycles   []cycle // every cycle the proxy saw
	measured []cycle // the -cycles complete ones after the initial pass
	requests []request
	obs      int // reads of Kustos's /metrics

	activity activityCheck
	end      kustosproc.Sample
	endHeap  float64           // Go heap bytes (live and not yet collected) at the last read
	peak     kustosproc.Sample // largest VmHWM read, and the largest RSS
	cpuTotal time.Duration     // whole life, shutdown included
	exit     string
}

func run(ctx context.Context, o options, logDir, logPath string, logf func(string, ...any)) (r result) {
	r.sources = len(sourceMarkers)
	cp, err := harness.ControlPlane(ctx, o.BinDir, false, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer cp.Stop()
	cs := cp.Setup

	// Setup: the namespaces (each with an owner), then the targets, spread round-robin.
	t0 := time.Now()
	nss := []*corev1.Namespace{objects.Namespace(stateNamespace, nil)}
	for i := 0; i < o.namespaces; i++ {
		nss = append(nss, objects.Namespace(namespaceName(i), map[string]string{annotationOwner: owner(i)}))
	}
	if err := objects.CreateNamespaces(ctx, cs, nss, o.Workers); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	all := make([]target, o.n)
	ds := make([]*appsv1.Deployment, o.n)
	for i := range ds {
		all[i] = targetAt(i, o.namespaces)
		ds[i] = objects.Deployment(all[i].Namespace, all[i].Name, 1, nil)
	}
	if err := objects.CreateDeployments(ctx, cs, ds, o.Workers); err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	r.setup = time.Since(t0)
	logf("created %d namespaces and %d Deployments in %s", o.namespaces, o.n, r.setup.Round(time.Millisecond))

	// Prometheus, scraping the exporter of every target's activity, behind the counting proxy.
	t0 = time.Now()
	tb := promrun.NewTB(logDir, logf)
	defer tb.Finish()
	active := activeTargets(o.n, o.namespaces, o.active)
	exp, err := promrun.NewExporter(tb, all, active)
	if err != nil {
		r.err = err
		return r
	}
	expCtx, stopExp := context.WithCancel(ctx)
	defer stopExp()
	go exp.Serve(expCtx, max(o.scrape/2, 500*time.Millisecond))
	prom, err := promrun.Start(tb, exp, o.scrape, o.n) //nolint:contextcheck // promtest takes no context: tb.finish stops Prometheus
	if err != nil {
		r.err = fmt.Errorf("starting Prometheus: %w", err)
		return r
	}
	proxy, err := startProxy(ctx, prom.URL)
	if err != nil {
		r.err = err
		return r
	}
	defer func() {
		if err := proxy.close(context.WithoutCancel(ctx)); err != nil {
			logf("stopping the proxy: %v", err)
		}
	}()
	r.promSetup = time.Since(t0)
	logf("Prometheus %s up with %d+%d series (scraped every %s) in %s; Kustos asks it through %s; %d targets in use (%d by the ingress, %d by the bastion)",
		prom.URL, o.n, o.n, o.scrape, r.promSetup.Round(time.Millisecond), proxy.URL, len(active), exp.Nginx(), len(active)-exp.Nginx())

	addr, err := kmetrics.FreeAddr(ctx)
	if err != nil {
		r.err = err
		return r
	}
	sc := kmetrics.NewScraper(addr)
	kustosStart := time.Now()
	k, err := startKustos(o, cp.Kubeconfig, addr, proxy.URL, logPath)
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
	logf("kustos running (pid %d, metrics on %s); waiting for its initial pass over %d targets, then %d check cycles of %s",
		k.Pid(), addr, o.n, o.cycles, o.interval)
	obs, err := watch(ctx, o, k, sc, proxy, kustosStart, &r, logf)
	r.obs = len(obs) - 1
	if err != nil {
		tb.Fail()
		r.err = err
		return r
	}
	for _, ob := range obs {
		r.peak.HWMKiB = max(r.peak.HWMKiB, ob.proc.HWMKiB)
		r.peak.RSSKiB = max(r.peak.RSSKiB, ob.proc.RSSKiB)
	}
	r.end, r.endHeap = obs[len(obs)-1].proc, obs[len(obs)-1].heap
	r.requests = proxy.requests()
	r.cycles = analyze(groupCycles(r.requests, o.interval), obs, o.n)
	passAt := kustosStart.Add(r.pass)
	for _, c := range r.cycles {
		if c.start.After(passAt) && c.complete && len(r.measured) < o.cycles {
			r.measured = append(r.measured, c)
		}
		if o.verbose {
			logf("  cycle %d at %s: %d queries %v in %s at the proxy, %s; %s", c.index, c.start.Format("15:04:05.000"),
				c.queries, c.bySource, c.promTime.Round(time.Millisecond), checkString(c), cycleString(c))
		}
	}
	if r.activity, err = readActivity(ctx, cs, active); err != nil {
		r.err = err
		return r
	}
	logf("state Leases: %d; active targets with a last activity %d/%d; idle ones with one %d",
		r.activity.leases, r.activity.seen, len(active), r.activity.idleSeen)
	if bad := r.broken(o); bad != "" {
		tb.Fail() // keeps Prometheus's log in view
	}
	return r
}

// startKustos starts `kustos run` in observer mode with the inactivity detector alone (and the
// quota detector, which always runs and has nothing to do here), asking Prometheus through the
// proxy, its metrics on addr.
func startKustos(o options, kubeconfig, addr, promURL, logPath string) (*kustosproc.Process, error) {
	return kustosproc.Start(o.Kustos, []string{
		"--kubeconfig=" + kubeconfig,
		"--mode=observe",
		"--enable-cleaners=false",
		"--enable-expiry=false",
		"--enable-inactivity",
		"--inactivity-kinds=apps/v1/Deployment",
		"--prometheus-url=" + promURL,
		"--inactivity-check-interval=" + o.interval.String(),
		"--inactivity-timeout=" + o.timeout.String(),
		"--activity-min-step=" + o.minStep.String(),
		"--activity-lookback=" + o.lookback.String(),
		"--state-namespace=" + stateNamespace,
		"--leader-elect=false",
		"--metrics-bind-address=" + addr,
		"--health-probe-bind-address=0",
		"--log-level=" + o.logLevel,
	}, logPath)
}

// watch reads Kustos's /metrics and /proc every -poll: until the initial pass is over (at least
// n reconciles and an idle queue at two consecutive reads; r.pass and r.atPass), then until the
// proxy has seen -cycles more cycles start after it, and the next one (whose check must be over).
// The first observation returned is Kustos's start, every counter zero.
func watch(ctx context.Context, o options, k *kustosproc.Process, sc kmetrics.Scraper, p *countingProxy, start time.Time,
	r *result, logf func(string, ...any)) ([]observation, error) {
	obs := []observation{{at: start}}
	tk := time.NewTicker(o.poll)
	defer tk.Stop()
	var passAt, progress time.Time
	var lastErr error
	deadline := start.Add(o.passTimeout)
	for {
		if err := k.Running(); err != nil {
			return obs, err
		}
		at := time.Now()
		m, err := sc.Scrape(ctx)
		var ob observation
		if err == nil {
			ob, err = observe(at, m)
		}
		if err == nil {
			ob.proc, err = k.Sample()
		}
		if err != nil {
			lastErr = err
		} else {
			obs = append(obs, ob)
			if n := len(obs); passAt.IsZero() && n >= 3 && kmetrics.Settled(obs[n-2].q, obs[n-1].q, float64(o.n)) {
				prev := obs[n-2]
				passAt, r.pass, r.passReconciles, r.atPass = prev.at, prev.at.Sub(start), prev.q.Reconciles, prev.proc
				logf("initial pass done by %s after start (%.0f reconciles); CPU %.2f s, RSS %.1f MiB, peak %.1f MiB",
					r.pass.Round(time.Millisecond), prev.q.Reconciles, prev.proc.CPU.Seconds(), prev.proc.RSSMiB(), prev.proc.HWMMiB())
				deadline = passAt.Add(time.Duration(o.cycles+2)*o.interval + 30*time.Second)
			}
		}
		if !passAt.IsZero() && len(obs) > 1 {
			groups := groupCycles(p.requests(), o.interval)
			after := 0
			for _, g := range groups {
				if g[0].start.After(passAt) {
					after++
				}
			}
			// Done once the cycle after the measured ones has started and finished its check:
			// the proxy records a request when it is answered, so a cycle still asking would
			// look short of queries. Kustos counts a check after its last answer.
			if after > o.cycles && obs[len(obs)-1].checks >= float64(len(groups)) {
				return obs, nil
			}
		}
		if time.Since(progress) >= 10*time.Second {
			if !progress.IsZero() && len(obs) > 1 {
				last := obs[len(obs)-1]
				logf("  %.0f reconciles, %.0f queued, %.0f in progress; %.0f checks, %d requests to Prometheus; RSS %.1f MiB",
					last.q.Reconciles, last.q.Ready, last.q.Active, last.checks, len(p.requests()), last.proc.RSSMiB())
			}
			progress = time.Now()
		}
		if time.Now().After(deadline) {
			what := fmt.Sprintf("the initial pass was not over within %s", o.passTimeout)
			if !passAt.IsZero() {
				what = fmt.Sprintf("fewer than %d check cycles after the initial pass by %s", o.cycles+1, deadline.Format("15:04:05"))
			}
			err := errors.New(what)
			if lastErr != nil {
				err = fmt.Errorf("%w; the last read of Kustos's metrics failed: %w", err, lastErr)
			}
			return obs, err
		}
		select {
		case <-ctx.Done():
			return obs, ctx.Err()
		case <-tk.C:
		}
	}
}

// readActivity lists the inactivity detector's state Leases and compares the targets whose
// Lease holds a last activity with those in use.
func readActivity(ctx context.Context, cs kubernetes.Interface, active []activeTarget) (activityCheck, error) {
	leases, err := cs.CoordinationV1().Leases(stateNamespace).List(ctx, metav1.ListOptions{LabelSelector: labelDetector + "=" + detectorName})
	if err != nil {
		return activityCheck{}, fmt.Errorf("listing the state Leases: %w", err)
	}
	with := map[string]bool{}
	for _, l := range leases.Items {
		if l.Annotations[bagLastActivity] != "" {
			with[l.Labels[labelTargetNamespace]+"/"+l.Annotations[annotationTargetName]] = true
		}
	}
	return compareActivity(active, len(leases.Items), with), nil
}
