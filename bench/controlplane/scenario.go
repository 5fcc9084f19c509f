package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kustos-dev/kustos/bench/internal/harness"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/objects"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

const (
	stateNamespace = "kustos-bench"
	// reasonRecommended is the reason of the Events whose latency is measured.
	reasonRecommended = "QuotaResizeRecommended"
	kustosComponent   = "kustos"
	stopGrace         = 30 * time.Second
)

// result is what one scenario measured. Fields are zero when the scenario failed before
// measuring them.
type result struct {
	sc  scenario
	err error // the scenario could not be carried out (setup, start, ...)

	setup, noiseSetup time.Duration // creating namespaces and quotas; creating noise events
	afterIdle         kustosproc.Sample
	end               kustosproc.Sample // read just before SIGTERM
	cpuTotal          time.Duration     // whole life, shutdown included (getrusage)
	exit              string

	latencies    []time.Duration // of the samples that got an Event, in sample order
	expected     int
	duplicates   int // further Kustos Events about a sampled quota
	unexpected   int // Kustos Events about quotas that were not sampled
	preexisting  int // Kustos Events present before the first update
	updateErrors int
	leases       int // Leases in the state namespace at the end
	kustosLog    string
}

func (r result) missing() int { return r.expected - len(r.latencies) }

func runScenario(ctx context.Context, o options, sc scenario, logDir string, logf func(string, ...any)) (r result) {
	r = result{sc: sc, expected: o.samples}

	// The CRDs, as the chart installs them: Kustos runs with its default flags, and the Cleaner
	// detector (on by default) refuses to start without its CRD.
	cp, err := harness.ControlPlane(ctx, o.BinDir, true, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer cp.Stop()

	cs := cp.Setup
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		logf("kube-apiserver %s", v.GitVersion)
	}

	t0 := time.Now()
	quotas, err := objects.CreateQuotas(ctx, cs, namespaceNames(sc.namespaces), o.Workers)
	r.setup = time.Since(t0)
	if err != nil {
		r.err = fmt.Errorf("setup: %w", err)
		return r
	}
	logf("created %d namespaces with quotas at 20%% in %s", sc.namespaces, r.setup.Round(time.Millisecond))
	if sc.noise > 0 {
		t0 = time.Now()
		err := objects.CreateNoise(ctx, cs, sc.noise, namespaceNames(sc.namespaces), o.Workers)
		r.noiseSetup = time.Since(t0)
		if err != nil {
			r.err = fmt.Errorf("setup: %w", err)
			return r
		}
		logf("created %d noise events in %s", sc.noise, r.noiseSetup.Round(time.Millisecond))
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stateNamespace}}, metav1.CreateOptions{}); err != nil {
		r.err = fmt.Errorf("creating namespace %s: %w", stateNamespace, err)
		return r
	}

	r.kustosLog = filepath.Join(logDir, sc.name+".log")
	k, err := startKustos(o.Kustos, cp.Kubeconfig, stateNamespace, r.kustosLog)
	if err != nil {
		r.err = err
		return r
	}
	stopped := false
	stopKustos := func() {
		if stopped {
			return
		}
		stopped = true
		var err error
		r.exit, r.cpuTotal, err = k.Stop(stopGrace)
		if err != nil && r.err == nil {
			r.err = err
		}
	}
	defer stopKustos()
	logf("kustos running (pid %d); idle for %s", k.Pid(), o.idle)

	select {
	case <-ctx.Done():
		r.err = ctx.Err()
		return r
	case <-k.Exited():
	case <-time.After(o.idle):
	}
	if err := k.Running(); err != nil {
		r.err = err
		return r
	}
	if r.afterIdle, err = k.Sample(); err != nil {
		r.err = err
		return r
	}
	logf("after idle: RSS %.1f MiB, peak %.1f MiB, CPU %.2f s", r.afterIdle.RSSMiB(), r.afterIdle.HWMMiB(), r.afterIdle.CPU.Seconds())

	// The watch has its own client: JSON or protobuf makes no difference to when an event
	// arrives.
	wcs, err := cp.WatchClient()
	if err != nil {
		r.err = err
		return r
	}
	sampled := samplePick(sc.namespaces, o.samples, o.seed)
	obs, err := startObserver(ctx, wcs, sampled, logf)
	if err != nil {
		r.err = err
		return r
	}
	defer obs.stop()
	r.preexisting = obs.preexisting
	if r.preexisting > 0 {
		logf("SUSPICIOUS: %d %s events by %s exist before any quota crossed the threshold", r.preexisting, reasonRecommended, kustosComponent)
	}

	// The updates. sent[i] is taken just before the UpdateStatus call of sample i.
	sent := make([]time.Time, len(sampled))
	start := time.Now()
	for i, idx := range sampled {
		if d := time.Until(start.Add(time.Duration(i) * o.interval)); d > 0 {
			time.Sleep(d)
		}
		q := quotas[idx].DeepCopy()
		q.Status.Used[corev1.ResourceRequestsCPU] = resource.MustParse("9500m")
		sent[i] = time.Now()
		if _, err := cs.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
			r.updateErrors++
			logf("updating status of %s/%s: %v", q.Namespace, q.Name, err)
		}
	}
	last := time.Now()
	logf("%d quotas raised to 95%% in %s; waiting up to %s for the events", len(sampled), last.Sub(start).Round(time.Millisecond), o.timeout)
	select {
	case <-obs.all:
	case <-time.After(time.Until(last.Add(o.timeout))):
	case <-ctx.Done():
	}
	// A short look for duplicates and strays after the last expected event.
	select {
	case <-time.After(500 * time.Millisecond):
	case <-ctx.Done():
	}

	if err := k.Running(); err != nil {
		r.err = err
	} else if r.end, err = k.Sample(); err != nil {
		r.err = err
	}
	seen, duplicates, unexpected, watchErr := obs.results()
	for i, idx := range sampled {
		if t, ok := seen[idx]; ok {
			r.latencies = append(r.latencies, t.Sub(sent[i]))
		}
	}
	r.duplicates, r.unexpected = duplicates, unexpected
	if o.verbose {
		var b strings.Builder
		for i, idx := range sampled {
			if t, ok := seen[idx]; ok {
				fmt.Fprintf(&b, " %s", report.MS(t.Sub(sent[i])))
			} else {
				b.WriteString(" missing")
			}
		}
		logf("latencies in ms, in update order:%s", b.String())
	}
	if watchErr != nil && r.err == nil {
		r.err = watchErr
	}
	if leases, err := cs.CoordinationV1().Leases(stateNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		r.leases = len(leases.Items)
	}
	stopKustos()
	logf("events %d/%d (duplicates %d, unexpected %d); peak RSS %.1f MiB; CPU %.2f s (%.2f s with shutdown); kustos %s",
		len(r.latencies), r.expected, r.duplicates, r.unexpected, r.end.HWMMiB(), r.end.CPU.Seconds(), r.cpuTotal.Seconds(), r.exit)
	if m := r.missing(); m > 0 && r.err == nil {
		r.err = fmt.Errorf("%d of %d %s events missing after %s", m, r.expected, reasonRecommended, o.timeout)
	}
	if r.unexpected > 0 && r.err == nil {
		r.err = fmt.Errorf("%d %s events about quotas that stayed at 20%%", r.unexpected, reasonRecommended)
	}
	return r
}

// samplePick draws k distinct quota indexes out of n with a seeded RNG.
func samplePick(n, k int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 0x6b7573746f73)) // "kustos"
	return rng.Perm(n)[:k]
}

// observer watches Kustos's recommendation Events and notes when the first one about each
// sampled quota arrives.
type observer struct {
	preexisting int
	all         chan struct{} // closed once every sampled quota has an Event

	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	index      map[string]int // namespace → sampled quota index
	seen       map[int]time.Time
	duplicates int
	unexpected int
	err        error
}

func startObserver(ctx context.Context, cs kubernetes.Interface, sampled []int, logf func(string, ...any)) (*observer, error) {
	sel := fields.OneTermEqualSelector("reason", reasonRecommended).String()
	list, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing %s events: %w", reasonRecommended, err)
	}
	o := &observer{
		all:   make(chan struct{}),
		done:  make(chan struct{}),
		index: make(map[string]int, len(sampled)),
		seen:  make(map[int]time.Time, len(sampled)),
	}
	for _, e := range list.Items {
		if e.Source.Component == kustosComponent {
			o.preexisting++
		}
	}
	for _, idx := range sampled {
		o.index[namespaceName(idx)] = idx
	}
	wctx, cancel := context.WithCancel(ctx)
	o.cancel = cancel
	rv := list.ResourceVersion
	opts := func(rv string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true}
	}
	w, err := cs.CoreV1().Events(metav1.NamespaceAll).Watch(wctx, opts(rv))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching %s events: %w", reasonRecommended, err)
	}
	go func() {
		defer close(o.done)
		for {
			var closed bool
			rv, closed = o.drain(wctx, w, rv)
			w.Stop()
			if !closed || o.failed() {
				return
			}
			// The server closed the watch: resume where it left off.
			logf("event watch closed by the server; resuming at resourceVersion %s", rv)
			var werr error
			if w, werr = cs.CoreV1().Events(metav1.NamespaceAll).Watch(wctx, opts(rv)); werr != nil {
				if wctx.Err() == nil {
					o.fail(fmt.Errorf("resuming the event watch: %w", werr))
				}
				return
			}
		}
	}()
	return o, nil
}

// drain handles the events of one watch until ctx ends (closed false) or the watch closes
// (closed true), and returns the last resourceVersion seen.
func (o *observer) drain(ctx context.Context, w watch.Interface, rv string) (_ string, closed bool) {
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv, false
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return rv, true
		}
		now := time.Now()
		switch ev.Type {
		case watch.Error:
			o.fail(fmt.Errorf("event watch failed: %v", ev.Object))
			return rv, false
		case watch.Bookmark:
			if m, err := metaRV(ev.Object); err == nil {
				rv = m
			}
			continue
		case watch.Added, watch.Modified:
		default:
			continue
		}
		e, isEvent := ev.Object.(*corev1.Event)
		if !isEvent {
			continue
		}
		rv = e.ResourceVersion
		if e.Source.Component == kustosComponent && ev.Type == watch.Added {
			o.note(e, now)
		}
	}
}

func metaRV(obj any) (string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", errors.New("no metadata")
	}
	return m.GetResourceVersion(), nil
}

func (o *observer) note(e *corev1.Event, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	idx, sampledNS := o.index[e.InvolvedObject.Namespace]
	if !sampledNS || e.InvolvedObject.Kind != "ResourceQuota" || e.InvolvedObject.Name != quotaName {
		o.unexpected++
		return
	}
	if _, dup := o.seen[idx]; dup {
		o.duplicates++
		return
	}
	o.seen[idx] = at
	if len(o.seen) == len(o.index) {
		close(o.all)
	}
}

func (o *observer) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = err
	}
}

func (o *observer) failed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err != nil
}

func (o *observer) results() (map[int]time.Time, int, int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := make(map[int]time.Time, len(o.seen))
	for k, v := range o.seen {
		seen[k] = v
	}
	return seen, o.duplicates, o.unexpected, o.err
}

func (o *observer) stop() {
	o.cancel()
	<-o.done
}
