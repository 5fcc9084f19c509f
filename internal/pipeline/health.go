package pipeline

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The pipeline's health metrics answer the two questions a platform team acts on and no
// counter answers: is a pull request waiting for reviewers for days, and does a target's
// Change keep failing. Both are per detector only (a bounded label); which targets they are is
// in the Events and the log.
var (
	changeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kustos_change_failures_total",
		Help: "Looks at a target that failed (carrying out or following its Change, reading or writing its state Lease, sending its notice), by detector; each is retried with backoff.",
	}, []string{"detector"})

	descOpen = prometheus.NewDesc("kustos_pull_requests_open",
		"Pull requests Kustos follows that were open at their last look, by detector.", []string{"detector"}, nil)
	descOldest = prometheus.NewDesc("kustos_pull_request_oldest_open_seconds",
		"Age of the oldest pull request Kustos follows that was open at its last look, by detector (0 when none).", []string{"detector"}, nil)
	descFailing = prometheus.NewDesc("kustos_changes_failing",
		"Targets whose last look failed, by detector.", []string{"detector"}, nil)
	descFailingFor = prometheus.NewDesc("kustos_change_failing_seconds",
		"How long the target failing longest has failed at every look, by detector (0 when none).", []string{"detector"}, nil)
	descQueued = prometheus.NewDesc("kustos_proposals_queued",
		"Targets whose Change waits for room in the pull-request budget (--max-open-prs, --max-new-prs-per-hour) or for its group's window, by detector.", []string{"detector"}, nil)
)

func init() {
	ctrlmetrics.Registry.MustRegister(changeFailures, tracked)
}

// staleAfter is how long an entry is kept without a look. An open pull request is looked at
// every poll interval (or when a rate limit resets, within the hour), a failing target at
// least every 17 minutes (controller-runtime's longest backoff): an entry older than this
// belongs to a target nobody looks at any more (deleted, or its detector turned off), and
// reporting it would raise an alert nobody can clear.
const staleAfter = time.Hour

// clock is the collector's time (tests set it).
var clock = time.Now

// tracked is every Pipeline's health, one process-wide collector as the metrics are.
var tracked = &tracker{open: map[trackKey]openEntry{}, failing: map[trackKey]failEntry{}, queued: map[trackKey]time.Time{}, detectors: map[string]bool{}}

var _ prometheus.Collector = (*tracker)(nil)

type trackKey struct {
	detector string
	key      lifecycle.Key
}

type openEntry struct {
	// number is the proposal's: the members of a group share one, which counts once.
	number       int
	opened, seen time.Time
	stale        time.Duration
}

type failEntry struct {
	since, last time.Time
}

// tracker remembers, per Key, the open proposal and the failure streak it last saw.
type tracker struct {
	mu      sync.Mutex
	open    map[trackKey]openEntry
	failing map[trackKey]failEntry
	// queued holds when each waiting Key was last seen waiting.
	queued map[trackKey]time.Time
	// detectors are those that ran in this process: they report 0, not nothing, when all is well.
	detectors map[string]bool
}

// proposalOpen records that k's proposal is open, opened at opened (zero: not known, keep the
// time already recorded or take now), as seen at now.
func (t *tracker) proposalOpen(k trackKey, number int, opened, now time.Time, poll time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.detectors[k.detector] = true
	delete(t.queued, k)
	e, ok := t.open[k]
	e.number = number
	switch {
	case !opened.IsZero():
		e.opened = opened
	case !ok || e.opened.IsZero():
		e.opened = now
	}
	e.seen, e.stale = now, staleAfter+2*poll
	t.open[k] = e
}

// proposalGone records that k has no open proposal.
func (t *tracker) proposalGone(k trackKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.open, k)
}

// proposalQueued records that k's Change waits for room, as seen at now.
func (t *tracker) proposalQueued(k trackKey, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.detectors[k.detector] = true
	t.queued[k] = now
}

// notQueued records that k's Change no longer waits (carried out, withdrawn, decided away).
func (t *tracker) notQueued(k trackKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.queued, k)
}

// looked records how a Run of k ended.
func (t *tracker) looked(k trackKey, now time.Time, failed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.detectors[k.detector] = true
	if !failed {
		delete(t.failing, k)
		return
	}
	changeFailures.WithLabelValues(k.detector).Inc()
	e, ok := t.failing[k]
	if !ok {
		e.since = now
	}
	e.last = now
	t.failing[k] = e
}

// Describe implements prometheus.Collector.
func (t *tracker) Describe(ch chan<- *prometheus.Desc) {
	ch <- descOpen
	ch <- descOldest
	ch <- descFailing
	ch <- descFailingFor
	ch <- descQueued
}

// Collect implements prometheus.Collector: per detector, the open proposals and their oldest
// age, the failing targets and the longest streak, dropping what nobody looked at for long.
func (t *tracker) Collect(ch chan<- prometheus.Metric) {
	now := clock()
	type agg struct {
		n      int
		oldest time.Duration
	}
	open, failing := map[string]*agg{}, map[string]*agg{}
	queued := map[string]int{}
	// The members of a group share one proposal: it counts once, at its oldest age.
	type proposal struct {
		detector string
		number   int
	}
	openAge := map[proposal]time.Duration{}
	add := func(m map[string]*agg, detector string, age time.Duration) {
		a := m[detector]
		a.n++
		if age > a.oldest {
			a.oldest = age
		}
	}
	t.mu.Lock()
	for d := range t.detectors {
		open[d], failing[d] = &agg{}, &agg{}
	}
	for k, e := range t.open {
		if now.Sub(e.seen) > e.stale {
			delete(t.open, k)
			continue
		}
		id := proposal{k.detector, e.number}
		if e.number == 0 {
			id.number = -len(openAge) - 1 // unknown number: its own
		}
		if age, ok := openAge[id]; !ok || now.Sub(e.opened) > age {
			openAge[id] = now.Sub(e.opened)
		}
	}
	for id, age := range openAge {
		add(open, id.detector, age)
	}
	for k, seen := range t.queued {
		if now.Sub(seen) > staleAfter {
			delete(t.queued, k)
			continue
		}
		queued[k.detector]++
	}
	for k, e := range t.failing {
		if now.Sub(e.last) > staleAfter {
			delete(t.failing, k)
			continue
		}
		add(failing, k.detector, now.Sub(e.since))
	}
	t.mu.Unlock()
	for d, a := range open {
		ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(a.n), d)
		ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, max(a.oldest, 0).Seconds(), d)
	}
	for d, a := range failing {
		ch <- prometheus.MustNewConstMetric(descFailing, prometheus.GaugeValue, float64(a.n), d)
		ch <- prometheus.MustNewConstMetric(descFailingFor, prometheus.GaugeValue, max(a.oldest, 0).Seconds(), d)
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(queued[d]), d)
	}
}
