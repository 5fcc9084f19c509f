package quotahistory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// DefaultSelector selects kube-state-metrics' usage of every ResourceQuota's resources, labelled
// namespace, resourcequota and resource.
const DefaultSelector = `kube_resourcequota{type="used"}`

// Options tunes a Prometheus source. The zero value is usable.
type Options struct {
	// Refresh is how long one answer serves every quota (default 1h): peaks are per day, and a
	// Window call within it is answered from memory. The newest hour is then missing from the
	// peaks, which the detector's max(peak, used) covers with the quota's current use.
	Refresh time.Duration
	// Retry is how soon a failed or partial answer is asked again (default 5m, at most
	// Refresh): in between, every window is incomplete, and one query per Retry at most goes to
	// a Prometheus that is down or struggling, not one per quota.
	Retry time.Duration
	// Timeout bounds the query (default 2m): it reads every sample of every quota's usage over
	// the window.
	Timeout time.Duration
	// Selector is the usage series (default DefaultSelector), e.g. with a job matcher when two
	// kube-state-metrics installations are scraped.
	Selector string
	// Log receives what no reason may carry: the warnings of a partial answer (default: none).
	Log logr.Logger
}

func (o Options) withDefaults() Options {
	if o.Refresh <= 0 {
		o.Refresh = time.Hour
	}
	if o.Retry <= 0 {
		o.Retry = 5 * time.Minute
	}
	o.Retry = min(o.Retry, o.Refresh)
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Selector == "" {
		o.Selector = DefaultSelector
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return o
}

// skew is how far before the refresh the read history ends: a Window call whose now is up to
// this much before another call's (two reconcilers racing) is served by the same answer, and its
// window's start is still covered.
const skew = time.Minute

// Prometheus is the usage history of every quota, read from kube-state-metrics'
// kube_resourcequota in Prometheus, for all quotas at once: per window length, the first refresh
// makes a few queries (5 for a 14-day window: 15 closed days four at a time, and today; at most
// 9) and each later one a single query (two when a day closed since), whatever the number of
// quotas.
//
// The history is kept as the peak of each (namespace, quota, resource) per bucket of
// Step(window), a day, aligned to the Unix epoch (UTC days): bucket b is ((b−1)·step, b·step],
// open on the left as Prometheus's ranges are. A closed bucket's peak never changes, so it is
// read once, by a range query over the closed buckets not read yet (all of them at the first
// refresh, one a day after that):
//
//	max by (namespace, resourcequota, resource) (max_over_time(<selector>[<step>]))
//
// at the buckets' ends, four buckets a query (chunk); `max by` folds the series of two
// kube-state-metrics replicas into one. Each refresh then reads the open bucket, from its start
// to now, with the same query over that span, evaluated once. A refresh so reads up to a day's
// samples, not the whole window's again (at a 30 s scrape, 40,000 series hold 1.7 billion samples over 15 days).
// Reading every sample (not a subquery at a resolution) means a peak between two evaluation
// steps is never missed.
//
// A window's buckets are the one holding its start (so the peak may come from up to a day before
// the window, never missed) to the open one. The bucket before them says that the history
// reaches back past the window's start: a series that has a point there and in every bucket
// after it covers the window; the first bucket with a point says, to a day, where a history that
// does not reach back begins. The open bucket counts as a gap only once it is an hour long. A
// Peak's At is the start of the bucket that held it (the latest such bucket when the peak
// repeats).
type Prometheus struct {
	http     *http.Client
	endpoint string // <--prometheus-url>/api/v1/query_range
	o        Options

	mu      sync.Mutex
	windows map[time.Duration]*entry

	queries atomic.Int64
}

// entry is one window length's history and answer. Its mutex is held through a refresh, so that
// callers arriving meanwhile wait for that answer instead of asking again.
type entry struct {
	mu       sync.Mutex
	store    *store
	snap     *snapshot
	lastUsed time.Time
	scratch  []series // a lookup's, reused
}

// snapshot is one refresh's answer: which buckets the store's series hold for the window, or
// why none.
type snapshot struct {
	// lo is the number of the bucket before the window: points[k] is bucket lo+k.
	lo      int64
	step    time.Duration
	buckets int       // after lo; the last is the open one
	readTo  time.Time // the history is read up to here (skew before the refresh)
	// openShort: the open bucket is under openGrace long, and a missing point in it no gap.
	openShort bool
	until     time.Time // when it is asked again
	// failure, when set, is why no quota's history is known (unreachable, partial answer).
	failure string
}

// openGrace is how long the open bucket must be before a missing point in it counts as a gap: a
// bucket that began a minute ago may hold no scrape yet.
const openGrace = time.Hour

type quotaRef struct{ namespace, name string }

// series is one resource's peaks over a window, as a lookup reads them from the store:
// points[k] is bucket lo+k; NaN where the bucket had no sample.
type series struct {
	resource corev1.ResourceName
	points   []float64
}

// NewPrometheus is a source that reaches Prometheus as the inactivity detector does (a: the
// --prometheus-* flags, with the same HTTP client), asking for whole answers only.
func NewPrometheus(a activity.Access, o Options) (*Prometheus, error) {
	client, err := activity.HTTPClient(a)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	u = u.JoinPath("api", "v1", "query_range")
	return &Prometheus{http: client, endpoint: u.String(), o: o.withDefaults(), windows: map[time.Duration]*entry{}}, nil
}

// Queries is the number of queries sent so far.
func (p *Prometheus) Queries() int64 { return p.queries.Load() }

// Window is what the history knows of quota namespace/quota over [now−window, now]. It never
// fails: what it cannot know comes back incomplete, with the reason.
func (p *Prometheus) Window(ctx context.Context, namespace, quota string, window time.Duration, now time.Time) Window {
	return p.history(ctx, namespace, quota, window, now, false).Window
}

// Daily is the quota's history over the window: the Window and the peak of each day.
type Daily struct {
	Window Window
	// Step is the width of Days' buckets: a day (see Step).
	Step time.Duration
	// Days are the window's buckets, oldest first; a resource missing from one had no sample
	// in it. Empty when nothing is known (Window.Incomplete says why).
	Days []Day
}

// Day is one bucket, (Start, Start+Step] as Prometheus's ranges go, and the peak of each
// resource in it.
type Day struct {
	Start time.Time
	Peaks map[corev1.ResourceName]resource.Quantity
}

// Daily is Window with the peaks of each day gathered by day (Window holds them by resource).
func (p *Prometheus) Daily(ctx context.Context, namespace, quota string, window time.Duration, now time.Time) Daily {
	return p.history(ctx, namespace, quota, window, now, true)
}

// history is Daily, with Days only when days is set: a Window lookup converts only the peaks.
func (p *Prometheus) history(ctx context.Context, namespace, quota string, window time.Duration, now time.Time, days bool) Daily {
	out := Daily{Window: Window{Start: now.Add(-window), End: now}}
	if window <= 0 {
		out.Window.Incomplete = fmt.Sprintf("the window (%s) is not positive", window)
		return out
	}
	e := p.entry(window, now)
	// Held through the read: a lookup reads the store a refresh writes.
	e.mu.Lock()
	defer e.mu.Unlock()
	snap := p.fresh(ctx, e, window, now)
	if snap.failure != "" {
		out.Window.Incomplete = snap.failure
		return out
	}
	out.Step = snap.step
	ss := e.store.peaks(snap, quotaRef{namespace, quota}, e.scratch[:0])
	e.scratch = ss
	if len(ss) == 0 {
		out.Window.Incomplete = fmt.Sprintf("Prometheus holds no usage history of this quota: no %s series with namespace %q, resourcequota %q (is kube-state-metrics scraped?)",
			p.o.Selector, namespace, quota)
		return out
	}
	snap.read(ss, &out, days)
	return out
}

// read fills out from ss, a quota's series.
func (s *snapshot) read(ss []series, out *Daily, days bool) {
	bucketStart := func(k int) time.Time {
		if k > s.buckets {
			return s.readTo.UTC() // the open bucket ends where the history was read
		}
		return time.Unix((s.lo+int64(k)-1)*int64(s.step/time.Second), 0).UTC()
	}
	// The last bucket with a sample of any of the quota's resources: a resource whose samples
	// end before it was taken out of the quota (kube-state-metrics reports what spec.hard
	// holds), and is no longer this quota's history.
	last := 0
	for _, sr := range ss {
		for k := s.buckets; k > last; k-- {
			if !math.IsNaN(sr.points[k]) {
				last = k
				break
			}
		}
	}
	out.Window.Peaks = map[corev1.ResourceName]Peak{}
	out.Window.Days = map[corev1.ResourceName][]DayPeak{}
	if days {
		out.Days = make([]Day, s.buckets)
		for k := range out.Days {
			out.Days[k].Start = bucketStart(k + 1)
		}
	}
	var problems []string
	for _, sr := range ss {
		if math.IsNaN(sr.points[last]) {
			continue
		}
		peak, peakK := math.Inf(-1), 0
		var perDay []DayPeak
		for k := 1; k <= s.buckets; k++ {
			v := sr.points[k]
			if math.IsNaN(v) {
				continue
			}
			if q, err := Quantity(sr.resource, v); err == nil { // else said below, for the peak
				if perDay == nil {
					perDay = make([]DayPeak, 0, s.buckets)
				}
				perDay = append(perDay, DayPeak{Day: bucketStart(k), Value: q})
				if days {
					d := &out.Days[k-1]
					if d.Peaks == nil {
						d.Peaks = map[corev1.ResourceName]resource.Quantity{}
					}
					d.Peaks[sr.resource] = q
				}
			}
			// The latest of equal peaks: the usage was still that high then. A peak that is
			// no quantity (infinite) is refused below.
			if v >= peak {
				peak, peakK = v, k
			}
		}
		if peakK == 0 {
			continue
		}
		q, err := Quantity(sr.resource, peak)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out.Window.Peaks[sr.resource] = Peak{Value: q, At: bucketStart(peakK)}
		out.Window.Days[sr.resource] = perDay
		if p := s.coverage(sr, bucketStart, out.Window.Start); p != "" {
			problems = append(problems, p)
		}
	}
	switch {
	case len(problems) > 0:
		out.Window.Incomplete = strings.Join(problems, "; ")
	case len(out.Window.Peaks) == 0:
		// Samples before the window only: the quota's usage stopped being reported.
		out.Window.Incomplete = "Prometheus holds no usage samples of this quota within the window"
	default:
		out.Window.Complete = true
	}
}

// coverage says what is missing of sr's history over the window: its start, or a gap; "" when
// it covers the window.
func (s *snapshot) coverage(sr series, bucketStart func(int) time.Time, windowStart time.Time) string {
	first := 0
	for first <= s.buckets && math.IsNaN(sr.points[first]) {
		first++
	}
	if first > 0 {
		return fmt.Sprintf("the usage history of %s begins only between %s and %s; the window starts %s",
			sr.resource, bucketStart(first).Format(time.RFC3339), bucketStart(first+1).Format(time.RFC3339),
			windowStart.UTC().Format(time.RFC3339))
	}
	for k := 1; k <= s.buckets; k++ {
		if !math.IsNaN(sr.points[k]) || (k == s.buckets && s.openShort) {
			continue
		}
		j := k
		for j < s.buckets && math.IsNaN(sr.points[j+1]) && (j+1 < s.buckets || !s.openShort) {
			j++
		}
		return fmt.Sprintf("the usage history of %s has no samples between %s and %s",
			sr.resource, bucketStart(k).Format(time.RFC3339), bucketStart(j+1).Format(time.RFC3339))
	}
	return ""
}

// entry is window's entry, new if need be.
func (p *Prometheus) entry(window time.Duration, now time.Time) *entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.windows[window]
	if e == nil {
		// lastUsed now: the sweep below, run by another window's caller before this one
		// locks e, must not take it for an old one.
		e = &entry{lastUsed: now}
		p.windows[window] = e
	}
	// A window length nobody asked about for two refreshes (a namespace's resizer.io/window
	// changed) is dropped: each holds every quota's history.
	for w, other := range p.windows {
		if other != e && other.mu.TryLock() {
			if now.Sub(other.lastUsed) > 2*p.o.Refresh {
				delete(p.windows, w)
			}
			other.mu.Unlock()
		}
	}
	return e
}

// fresh is the answer for window at now: e's while it is fresh, else a new one. e.mu is held.
func (p *Prometheus) fresh(ctx context.Context, e *entry, window time.Duration, now time.Time) *snapshot {
	e.lastUsed = now
	if s := e.snap; s != nil && !now.Before(s.readTo) && now.Before(s.until) {
		return s
	}
	if e.store == nil {
		e.store = newStore(window)
	}
	s := p.refresh(ctx, e.store, window, now)
	e.snap = s
	switch {
	case s.failure != "" && ctx.Err() != nil:
		// Not kept when the caller gave up (shutting down): that says nothing of Prometheus.
		// Nor is the answer before it: the store may be half rewritten.
		e.snap = nil
	case s.failure != "":
		// Said once per failed refresh (at most one a Retry), for every quota: the reason
		// reaches no Event or pull request, since an incomplete window is reported nowhere
		// else, and an operator must learn why no quota shrinks.
		p.o.Log.Info("quota usage history unavailable: every window stays incomplete, and no quota shrinks, until it is asked again",
			"reason", s.failure, "window", lifecycle.FormatDuration(window), "retryAt", s.until.UTC().Format(time.RFC3339))
	}
	return s
}

// errBadAnswer: Prometheus's answer broke off or was not what its API returns.
var errBadAnswer = errors.New("the answer could not be read")

// failure words err for a reviewer: unreachable, too slow, or an error answer, without
// credentials.
func failure(err error, timeout time.Duration) string {
	var perr *v1.Error
	switch {
	case errors.As(err, &perr):
		return "the usage-history query failed: " + activity.Describe(err)
	case errors.Is(err, errBadAnswer):
		return "Prometheus's answer to the usage-history query could not be read: " + lifecycle.Clip(err.Error(), 300)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("Prometheus did not answer the usage-history query within %s", timeout)
	default:
		return "Prometheus unreachable: " + strings.TrimPrefix(activity.Describe(err), "Prometheus could not be asked: ")
	}
}

// queryRange sends query over [start, end] at step and hands each series of the answer to
// visit as it is read.
func (p *Prometheus) queryRange(ctx context.Context, query string, start, end time.Time, step time.Duration, visit func(*rangeSeries)) ([]string, error) {
	form := url.Values{
		"query": {query},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
		// Whole answers only, as activity.NewAPI asks: Thanos's querier otherwise leaves out
		// the series of a store that is down, with only a warning.
		"partial_response": {"false"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	p.queries.Add(1)
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// Prometheus answers its errors 400 or 422 with a body that says why; anything else that
	// is not 2xx comes from something else (a proxy's 401, a 503) and is reported by its code,
	// as client_golang does.
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity {
		typ, kind := v1.ErrServer, "server"
		if resp.StatusCode/100 == 4 {
			typ, kind = v1.ErrClient, "client"
		}
		return nil, &v1.Error{Type: typ, Msg: fmt.Sprintf("%s error: %d", kind, resp.StatusCode)}
	}
	ans, err := decodeRange(resp.Body, visit)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", errBadAnswer, err)
	}
	if ans.err != nil {
		return ans.warnings, ans.err
	}
	return ans.warnings, nil
}
