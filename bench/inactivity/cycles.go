package main

import (
	"sort"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
)

// What the bench reads from Kustos's /metrics besides controller-runtime's (bench/internal/
// kmetrics): the inactivity detector's own metrics (internal/metrics).
const (
	metricReconcileCount = "kustos_reconcile_duration_seconds_count" // {detector}
	metricReconcileSum   = "kustos_reconcile_duration_seconds_sum"   // {detector}
	metricCheckCount     = "kustos_activity_check_duration_seconds_count"
	metricCheckSum       = "kustos_activity_check_duration_seconds_sum"
	metricQueries        = "kustos_activity_queries_total" // {source, status}
	metricEvents         = "kustos_events_written_total"   // {reason}
	// The Go runtime's, from controller-runtime's registry: bytes allocated so far, and the heap.
	metricAllocated = "go_memstats_alloc_bytes_total"
	metricHeap      = "go_memstats_heap_alloc_bytes"

	detectorName = "inactivity"
	// controllerPrefix starts the name of the inactivity detector's controllers
	// ("inactivity-deployment-apps").
	controllerPrefix = "inactivity-"
)

// observation is one read of Kustos's /metrics and /proc.
type observation struct {
	at   time.Time
	q    kmetrics.Queue // reconciles of the inactivity detector; its queue and workers
	sum  float64        // seconds spent in its reconciles
	errs float64        // reconcile errors of its controllers

	checks, checkSum float64 // activity checks done and their total duration
	queries, ok      float64 // Prometheus queries Kustos counted, and those that answered ok
	apiRequests      float64
	events           float64
	allocated, heap  float64 // bytes
	proc             kustosproc.Sample
}

// observe reads an observation out of m (proc is added by the caller).
func observe(at time.Time, m kmetrics.Metrics) (observation, error) {
	o := observation{at: at}
	var err error
	o.q, err = kmetrics.ReadQueue(m, metricReconcileCount, kmetrics.LabelIs("detector", detectorName), kmetrics.ControllerHasPrefix(controllerPrefix))
	if err != nil {
		return o, err
	}
	o.sum, _ = m.Sum(metricReconcileSum, kmetrics.LabelIs("detector", detectorName))
	o.errs, _ = m.Sum(kmetrics.Errors, kmetrics.ControllerHasPrefix(controllerPrefix))
	o.checks, _ = m.Sum(metricCheckCount, nil)
	o.checkSum, _ = m.Sum(metricCheckSum, nil)
	o.queries, _ = m.Sum(metricQueries, nil)
	o.ok, _ = m.Sum(metricQueries, kmetrics.LabelIs("status", "ok"))
	o.apiRequests, _ = m.Sum(kmetrics.Requests, nil)
	o.events, _ = m.Sum(metricEvents, nil)
	o.allocated, _ = m.Sum(metricAllocated, nil)
	o.heap, _ = m.Sum(metricHeap, nil)
	return o, nil
}

// groupCycles splits the proxy's requests into check cycles: Kustos asks its sources one after
// the other at each check, every check interval, so a request that starts more than half an
// interval after the first of the current cycle starts the next one.
func groupCycles(reqs []request, interval time.Duration) [][]request {
	rs := append([]request(nil), reqs...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
	var out [][]request
	for _, r := range rs {
		if n := len(out); n > 0 && r.start.Sub(out[n-1][0].start) <= interval/2 {
			out[n-1] = append(out[n-1], r)
			continue
		}
		out = append(out, []request{r})
	}
	return out
}

// cycle is what one check cycle cost.
type cycle struct {
	index      int       // 1: the check at Kustos's start
	start, end time.Time // the first query arrived at the proxy; the last was answered

	// From the proxy.
	queries  int            // requests to the query endpoints
	bySource map[string]int // of them, per source ("" none, "?" several)
	ranges   int            // of them, range queries
	other    int            // requests to any other path
	failed   int            // answers other than 200
	promTime time.Duration  // the queries' time at the proxy, summed

	// From Kustos's metrics: the next observation after the answers with one more check.
	check      time.Duration
	checkKnown bool

	// decided: the first of two consecutive reads, both after the last answer and before the
	// next cycle, that show at least n reconciles since the last read before that answer, an
	// empty work queue and no worker busy.
	decided    time.Time
	settled    bool
	reconciles float64
	meanRec    time.Duration // mean reconcile time over them
	cpuDecide  time.Duration // Kustos's CPU from the last read before the first query to decided

	// Over the whole cycle: from the last read before its first query to the last read before
	// the next cycle's (complete: false for the last cycle seen).
	complete      bool
	period        time.Duration
	cpu           time.Duration
	apiRequests   float64
	kustosQueries float64 // what Kustos counted (kustos_activity_queries_total)
	okQueries     float64
	events        float64
	errors        float64
	allocated     float64 // bytes the Go runtime allocated
}

// decideWall is the time from the cycle's first query to all targets decided.
func (c cycle) decideWall() time.Duration { return c.decided.Sub(c.start) }

// afterAnswer is the time from the cycle's last answer to all targets decided.
func (c cycle) afterAnswer() time.Duration { return c.decided.Sub(c.end) }

// analyze turns the proxy's cycles and the observations (in time order; the first is Kustos's
// start, all counters zero) into what each cycle cost; n is the number of targets.
func analyze(groups [][]request, obs []observation, n int) []cycle {
	out := make([]cycle, 0, len(groups))
	// before returns the last observation strictly before t (the first one if none is).
	before := func(t time.Time) (int, bool) {
		i := sort.Search(len(obs), func(i int) bool { return !obs[i].at.Before(t) }) - 1
		return max(i, 0), i >= 0
	}
	for gi, g := range groups {
		c := cycle{index: gi + 1, start: g[0].start, bySource: map[string]int{}}
		for _, r := range g {
			if r.end.After(c.end) {
				c.end = r.end
			}
			if !r.isQuery() {
				c.other++
				continue
			}
			c.queries++
			c.bySource[r.source]++
			if r.path == pathQueryRange {
				c.ranges++
			}
			if r.status != 200 {
				c.failed++
			}
			c.promTime += r.end.Sub(r.start)
		}
		next := time.Time{}
		if gi+1 < len(groups) {
			next = groups[gi+1][0].start
		}
		if len(obs) == 0 {
			out = append(out, c)
			continue
		}
		bi, _ := before(c.start)
		base := obs[bi]
		ai, _ := before(c.end)
		answered := obs[ai]
		inCycle := func(i int) bool { return next.IsZero() || obs[i].at.Before(next) }
		for i := bi + 1; i < len(obs) && inCycle(i); i++ {
			if obs[i].checks > base.checks {
				// Exactly one check in between: its duration is the sum's increase.
				c.checkKnown = obs[i].checks-base.checks == 1
				if c.checkKnown {
					c.check = seconds(obs[i].checkSum - base.checkSum)
				}
				break
			}
		}
		for i := ai + 1; i+1 < len(obs) && inCycle(i+1); i++ {
			if !kmetrics.Settled(obs[i].q, obs[i+1].q, answered.q.Reconciles+float64(n)) {
				continue
			}
			d := obs[i]
			c.decided, c.settled = d.at, true
			c.reconciles = d.q.Reconciles - answered.q.Reconciles
			if k := d.q.Reconciles - base.q.Reconciles; k > 0 {
				c.meanRec = seconds((d.sum - base.sum) / k)
			}
			c.cpuDecide = d.proc.CPU - base.proc.CPU
			break
		}
		if !next.IsZero() {
			ni, ok := before(next)
			if ok && ni > bi {
				e := obs[ni]
				c.complete = true
				c.period = e.at.Sub(base.at)
				c.cpu = e.proc.CPU - base.proc.CPU
				c.apiRequests = e.apiRequests - base.apiRequests
				c.kustosQueries = e.queries - base.queries
				c.okQueries = e.ok - base.ok
				c.events = e.events - base.events
				c.errors = e.errs - base.errs
				c.allocated = e.allocated - base.allocated
			}
		}
		out = append(out, c)
	}
	return out
}

// seconds converts a metric's seconds, to the microsecond (the float sums carry rounding noise).
func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond)
}
