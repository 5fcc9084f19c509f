package quotahistory

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/activity"
)

// store is what one window length's refreshes have read: per series, the peak of each closed
// bucket in a ring (bucket b at b mod len), and of the open bucket.
type store struct {
	step   int64 // seconds
	window time.Duration
	series map[seriesRef]*ring
	quotas map[quotaRef][]*ring // a quota's series, by resource name
	// from and to are the closed buckets read, inclusive; none when to < from.
	from, to int64
}

type seriesRef struct {
	namespace, quota string
	resource         corev1.ResourceName
}

// ring is one series' peaks. float64, not Quantity: 40,000 series × 17 buckets stay a few MB.
type ring struct {
	resource corev1.ResourceName
	closed   []float64
	open     float64
}

func newStore(window time.Duration) *store {
	step, _ := Step(window)
	return &store{step: int64(step / time.Second), window: window, series: map[seriesRef]*ring{}, quotas: map[quotaRef][]*ring{}, from: 1, to: 0}
}

// slots is the ring's length: the buckets of a window, the one before, and one to spare.
func (st *store) slots() int64 {
	_, n := Step(st.window)
	return int64(n) + 3
}

func (st *store) slot(b int64) int64 { return ((b % st.slots()) + st.slots()) % st.slots() }

// ring is the series' ring, new (every bucket unknown) when the series was not seen before.
func (st *store) ring(ref seriesRef) *ring {
	r := st.series[ref]
	if r == nil {
		r = &ring{resource: ref.resource, closed: make([]float64, st.slots()), open: math.NaN()}
		for i := range r.closed {
			r.closed[i] = math.NaN()
		}
		st.series[ref] = r
		q := quotaRef{ref.namespace, ref.quota}
		st.quotas[q] = append(st.quotas[q], r)
		slices.SortFunc(st.quotas[q], func(a, b *ring) int { return strings.Compare(string(a.resource), string(b.resource)) })
	}
	return r
}

// peaks appends to ss quota's series over s's buckets, leaving out those with no point there.
// Their points are taken from ss's backing arrays when it has them (a lookup's scratch).
func (st *store) peaks(s *snapshot, quota quotaRef, ss []series) []series {
	for _, r := range st.quotas[quota] {
		var points []float64
		if len(ss) < cap(ss) {
			points = ss[:len(ss)+1][len(ss)].points[:0]
		}
		known := false
		for k := range s.buckets {
			v := r.closed[st.slot(s.lo+int64(k))]
			points = append(points, v)
			known = known || !math.IsNaN(v)
		}
		points = append(points, r.open)
		if known || !math.IsNaN(r.open) {
			ss = append(ss, series{resource: r.resource, points: points})
		}
	}
	return ss
}

// ceilDiv is ⌈a/b⌉ for b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) == (b < 0) {
		q++
	}
	return q
}

// refresh reads what st lacks for window at now (the closed buckets not read yet, and the open
// bucket) and makes the answer.
func (p *Prometheus) refresh(ctx context.Context, st *store, window time.Duration, now time.Time) *snapshot {
	step := time.Duration(st.step) * time.Second
	read := now.Add(-skew).Truncate(time.Second)
	open := ceilDiv(read.Unix(), st.step)                // (open−1)·step < read ≤ open·step
	lo := ceilDiv(read.Add(-window).Unix(), st.step) - 1 // the bucket before the one holding the start
	openStart := time.Unix((open-1)*st.step, 0)
	s := &snapshot{lo: lo, step: step, buckets: int(open - lo), readTo: read, until: now.Add(p.o.Refresh),
		openShort: read.Sub(openStart) < openGrace}
	fail := func(msg string) *snapshot {
		s.failure, s.until = msg, now.Add(p.o.Retry)
		return s
	}
	// The closed buckets not read yet: after the first refresh, the one that closed since.
	from := lo
	if st.to >= st.from && st.from <= lo && st.to >= lo-1 {
		from = st.to + 1
	} else {
		st.from, st.to = 1, 0 // nothing of use: read from lo, and trust nothing kept before
	}
	size := chunk(open - lo)
	for from <= open-1 {
		to := min(from+size-1, open-1)
		if msg := p.readClosed(ctx, st, p.peakQuery(step), from, to); msg != "" {
			// What this query read is not trusted: its buckets are read again next time; the
			// chunks before it are kept.
			return fail(msg)
		}
		if st.to < st.from {
			st.from = from
		}
		st.to = to
		st.from = max(st.from, st.to-st.slots()+1)
		from = to + 1
		if from > open-1 {
			st.sweep()
		}
	}

	// The open bucket, from its start to read, as one point.
	query := p.peakQuery(read.Sub(openStart))
	for _, r := range st.series {
		r.open = math.NaN()
	}
	qctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	warnings, err := p.queryRange(qctx, query, read, read, step, func(rs *rangeSeries) {
		if ref, ok := refOf(rs); ok && len(rs.Values) > 0 {
			st.ring(ref).open = rs.Values[len(rs.Values)-1].V
		}
	})
	if msg := p.answerFailure(err, warnings); msg != "" {
		return fail(msg)
	}

	return s
}

// peakQuery is the peak of each quota's resource over the span before the evaluation time.
func (p *Prometheus) peakQuery(span time.Duration) string {
	return fmt.Sprintf("max by (namespace, resourcequota, resource) (max_over_time(%s[%s]))", p.o.Selector, model.Duration(span))
}

// maxChunks bounds the queries that read the closed buckets, and chunkBuckets is the most buckets
// one of them reads while that bound allows: at a 30 s scrape, 40,000 series hold 460 million
// samples over 4 days, a query Prometheus answers well within its default 2m --query.timeout;
// and a refresh that fails half-way keeps the chunks it read.
const maxChunks, chunkBuckets = 8, 4

// chunk is how many closed buckets one query reads when n are to be read.
func chunk(n int64) int64 { return max(chunkBuckets, ceilDiv(n, maxChunks)) }

// readClosed reads the closed buckets from..to of every series into st; a failure or partial
// answer in words, else "".
func (p *Prometheus) readClosed(ctx context.Context, st *store, query string, from, to int64) string {
	for _, r := range st.series {
		for b := from; b <= to; b++ {
			r.closed[st.slot(b)] = math.NaN()
		}
	}
	qctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	step := time.Duration(st.step) * time.Second
	warnings, err := p.queryRange(qctx, query, time.Unix(from*st.step, 0), time.Unix(to*st.step, 0), step, func(rs *rangeSeries) {
		ref, ok := refOf(rs)
		if !ok {
			return
		}
		r := st.ring(ref)
		for _, pt := range rs.Values {
			if b := int64(math.Round(float64(pt.T) / 1000 / float64(st.step))); b >= from && b <= to {
				r.closed[st.slot(b)] = pt.V
			}
		}
	})
	return p.answerFailure(err, warnings)
}

// sweep forgets the series with no point in the closed buckets read (a quota deleted more than a
// window ago).
func (st *store) sweep() {
	for ref, r := range st.series {
		gone := math.IsNaN(r.open)
		for b := st.from; gone && b <= st.to; b++ {
			gone = math.IsNaN(r.closed[st.slot(b)])
		}
		if gone {
			delete(st.series, ref)
			q := quotaRef{ref.namespace, ref.quota}
			rs := slices.DeleteFunc(st.quotas[q], func(x *ring) bool { return x == r })
			if len(rs) == 0 {
				delete(st.quotas, q)
			} else {
				st.quotas[q] = rs
			}
		}
	}
}

// refOf names the series of rs; false when a label is missing.
func refOf(rs *rangeSeries) (seriesRef, bool) {
	m := &rs.Metric
	if m.Namespace == "" || m.ResourceQuota == "" || m.Resource == "" {
		return seriesRef{}, false
	}
	return seriesRef{m.Namespace, m.ResourceQuota, corev1.ResourceName(m.Resource)}, true
}

// answerFailure words a query's failure or partial answer; "" for a whole answer.
func (p *Prometheus) answerFailure(err error, warnings []string) string {
	switch {
	case err != nil:
		return failure(err, p.o.Timeout)
	case len(warnings) > 0:
		// Thanos's querier answers 200 with a warning when a store did not answer, and that
		// store's series are simply missing: a quota would look unused. The reason reaches
		// Events in tenants' namespaces and the warnings can name the stores behind
		// Prometheus, so their words go to Kustos's log, clipped, for the operator.
		p.o.Log.Info("Prometheus answered the quota usage-history query partially: every window stays incomplete until Retry",
			"warnings", activity.ClipWarnings(warnings))
		return fmt.Sprintf("Prometheus answered the usage-history query only partially (%d warning(s), in Kustos's log): missing series would look like low usage", len(warnings))
	}
	return ""
}
