package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
)

// What the bench reads from Kustos's /metrics besides controller-runtime's queue metrics.
const (
	// metricHeapLive is the Go runtime's /gc/heap/live:bytes, the heap marked live by the last
	// GC ("heap after GC"), exported by client_golang's Go collector with runtime metrics, which
	// controller-runtime registers.
	metricHeapLive = "go_gc_heap_live_bytes"
	// metricHeapInuse is the heap in use now, garbage not yet collected included.
	metricHeapInuse = "go_memstats_heap_inuse_bytes"
	// metricQueries counts the inactivity detector's Prometheus queries (one per source and check).
	metricQueries = "kustos_activity_queries_total"
)

// The detectors' controllers (their names in controller-runtime's metrics) and what each has to
// look at once in the initial pass.
const (
	ctrlQuota            = "quota"
	ctrlExpiryDeployment = "expiry-deployment.apps"
	ctrlExpiryNamespace  = "expiry-namespace"
	ctrlCleaner          = "cleaner"
	ctrlInactivity       = "inactivity-deployment-apps"
)

// passTargets is, by controller, how many reconciles the initial pass takes at least: every
// quota; every Deployment (expiry and inactivity watch them all, targets or not); every
// namespace; every Cleaner.
func passTargets(s shape) map[string]float64 {
	t := map[string]float64{
		ctrlQuota:            float64(s.namespaces),
		ctrlExpiryDeployment: float64(s.deployments),
		ctrlExpiryNamespace:  float64(s.namespaces),
		ctrlInactivity:       float64(s.deployments),
	}
	if s.cleaners > 0 {
		t[ctrlCleaner] = float64(s.cleaners)
	}
	return t
}

// heapReading is Kustos's Go heap at one read of its metrics.
type heapReading struct {
	live, inuse float64 // bytes
	ok          bool
}

func (h heapReading) String() string {
	if !h.ok {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB (in use %.1f MiB)", h.live/(1<<20), h.inuse/(1<<20))
}

// observation is one read of Kustos's /metrics.
type observation struct {
	at      time.Time
	queues  map[string]kmetrics.Queue // by controller
	queries float64
	heap    heapReading
}

func (ob observation) reconciles() map[string]float64 {
	out := map[string]float64{}
	for c, q := range ob.queues {
		out[c] = q.Reconciles
	}
	return out
}

// observe reads what the bench needs from one scrape; a controller missing from the metrics (not
// started yet) is left out of queues.
func observe(at time.Time, m kmetrics.Metrics) observation {
	ob := observation{at: at, queues: map[string]kmetrics.Queue{}}
	for _, c := range []string{ctrlQuota, ctrlExpiryDeployment, ctrlExpiryNamespace, ctrlCleaner, ctrlInactivity} {
		if q, err := kmetrics.ReadQueue(m, kmetrics.Reconciles, kmetrics.ControllerIs(c), kmetrics.ControllerIs(c)); err == nil {
			ob.queues[c] = q
		}
	}
	ob.queries, _ = m.Sum(metricQueries, nil)
	var okL, okI bool
	ob.heap.live, okL = m.Sum(metricHeapLive, nil)
	ob.heap.inuse, okI = m.Sum(metricHeapInuse, nil)
	ob.heap.ok = okL && okI
	return ob
}

// settled: every controller of targets has, at both reads, at least its number of reconciles, no
// more since, and nothing queued or being reconciled (kmetrics.Settled for each).
func settled(prev, cur observation, targets map[string]float64) bool {
	for c, n := range targets {
		p, ok1 := prev.queues[c]
		q, ok2 := cur.queues[c]
		if !ok1 || !ok2 || !kmetrics.Settled(p, q, n) {
			return false
		}
	}
	return true
}

// poller reads Kustos's /metrics every period, from its start to the end of the run, and keeps
// every read: the initial pass, the heap and the inactivity check cycles are all found in them.
type poller struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	obs    []observation
	err    error // the last read's, nil once one succeeds
	period time.Duration
	proc   *kustosproc.Process
}

func startPoller(ctx context.Context, sc kmetrics.Scraper, k *kustosproc.Process, period time.Duration) *poller {
	ctx, cancel := context.WithCancel(ctx)
	p := &poller{cancel: cancel, done: make(chan struct{}), proc: k, period: period}
	go func() {
		defer close(p.done)
		for {
			at := time.Now()
			m, err := sc.Scrape(ctx)
			p.mu.Lock()
			if err == nil {
				p.obs = append(p.obs, observe(at, m))
			}
			p.err = err
			next := at.Add(p.period)
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(next)):
			}
		}
	}()
	return p
}

// setPeriod changes the time between reads from the next one on: reading /metrics costs Kustos
// CPU, which the idle period must not be charged much of.
func (p *poller) setPeriod(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.period = d
}

// last is the latest successful read (zero: none yet).
func (p *poller) last() observation {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.obs) == 0 {
		return observation{}
	}
	return p.obs[len(p.obs)-1]
}

// all is every successful read so far.
func (p *poller) all() []observation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]observation(nil), p.obs...)
}

func (p *poller) lastErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *poller) stop() {
	p.cancel()
	<-p.done
}

// waitPass waits until two consecutive reads show every controller settled (settled) and returns
// the time of the first of them.
func waitPass(ctx context.Context, p *poller, s shape, o options, start time.Time, logf func(string, ...any)) (time.Time, error) {
	targets := passTargets(s)
	deadline := start.Add(o.passTimeout)
	var progress time.Time
	for {
		if err := p.proc.Running(); err != nil {
			return time.Time{}, err
		}
		obs := p.all()
		if n := len(obs); n >= 2 && settled(obs[n-2], obs[n-1], targets) {
			return obs[n-2].at, nil
		}
		if time.Since(progress) >= 15*time.Second {
			if len(obs) > 0 {
				logf("  reconciles so far %v", obs[len(obs)-1].reconciles())
			}
			progress = time.Now()
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("the initial pass was not over within %s; want reconciles %v", o.passTimeout, targets)
			if len(obs) > 0 {
				err = fmt.Errorf("%w, last read %v", err, obs[len(obs)-1].queues)
			}
			if e := p.lastErr(); e != nil {
				err = fmt.Errorf("%w; the last read of its metrics failed: %w", err, e)
			}
			return time.Time{}, err
		}
		if err := sleep(ctx, o.poll); err != nil {
			return time.Time{}, err
		}
	}
}

// waitSteady waits until the first inactivity check that starts after the initial pass (at
// from) is decided, and returns when; the zero time when none was within timeout. The idle
// period starts after it, when the start-up work is over: the first check looks at every object
// of its kinds, and a check that learns a used target's activity for the first time writes it
// to the target's Lease. In the runs of 2026-11-27 those Lease writes fell into an idle minute
// that started at the pass (idle CPU 3.8–4.2%, 1.4% after them).
func waitSteady(ctx context.Context, p *poller, from time.Time, targets int, timeout, poll time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := p.proc.Running(); err != nil {
			return time.Time{}, err
		}
		if cs := findCycles(p.all(), from, float64(targets)); len(cs) > 0 && cs[0].complete {
			return cs[0].decided, nil
		}
		if err := sleep(ctx, poll); err != nil {
			return time.Time{}, err
		}
	}
	return time.Time{}, nil
}

// cycle is one inactivity check after the initial pass, as Kustos's metrics show it.
type cycle struct {
	start    time.Time // the last read before its queries were counted
	decided  time.Time // the first of two reads showing it decided; zero if never
	complete bool
}

func (c cycle) wall() time.Duration { return c.decided.Sub(c.start) }

// findCycles finds the inactivity check cycles that start after from: a cycle starts at the
// last read before kustos_activity_queries_total rose, and is decided at the first of two
// consecutive later reads, before the next cycle starts, that show at least targets reconciles
// of the inactivity controller since its start and its queue idle (after a check Kustos queues
// every target once). The resolution is the poll interval.
func findCycles(obs []observation, from time.Time, targets float64) []cycle {
	rise := func(i int) bool { return obs[i].queries > obs[i-1].queries }
	var out []cycle
	for i := 1; i < len(obs); i++ {
		if !rise(i) || !obs[i-1].at.After(from) {
			continue
		}
		c := cycle{start: obs[i-1].at}
		base := obs[i-1].queues[ctrlInactivity].Reconciles
		j := i
		for ; j+1 < len(obs); j++ {
			// A check's queries may be counted over two consecutive reads; a rise after that is
			// the next check.
			if j > i+1 && rise(j) {
				j--
				break
			}
			a, b := obs[j].queues[ctrlInactivity], obs[j+1].queues[ctrlInactivity]
			if a.Reconciles-base >= targets && a.Reconciles == b.Reconciles && a.Idle() && b.Idle() {
				c.decided, c.complete = obs[j].at, true
				break
			}
		}
		out = append(out, c)
		i = j
	}
	return out
}
