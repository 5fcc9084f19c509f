package activity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Querier is the part of Prometheus's HTTP API (client_golang's v1.API) a check uses.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, error)
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, error)
}

var _ Querier = v1.API(nil)

// Status is what a check found out about a source.
type Status string

const (
	// StatusOK: the source is collecting; its silence about a target is evidence.
	StatusOK Status = "ok"
	// StatusUnavailable: the availability query says the source is not collecting (nothing, or
	// only zeros). Its data may have gaps: no target is declared inactive, and silence counts
	// only from when it collects again.
	StatusUnavailable Status = "unavailable"
	// StatusError: Prometheus could not be asked (unreachable, timeout) or refused the query
	// (a template that is not PromQL). No target is declared inactive; the next successful
	// check covers the time since the last one.
	StatusError Status = "error"
	// StatusPartial: Prometheus answered, with a warning. Thanos's querier answers that way
	// when a store is down (partial_response), Prometheus when a remote-read endpoint fails:
	// the series on the missing part are not in the answer, so silence in it is no evidence.
	// No target is declared inactive; as after an error, the next whole answer covers the
	// time since the last one.
	StatusPartial Status = "partial"
)

// SourceResult is one source's answer in one check.
type SourceResult struct {
	Name   string
	Status Status
	// Detail says why a source is not ok, precisely enough to fix it. It reaches tenants (the
	// ActivityUnknown Event on their targets).
	Detail string
	// Warnings are Prometheus's warnings when it answered with some (StatusPartial), clipped
	// and without URL credentials: for the operator's log and `kustos inactivity plan`, not for
	// Detail, as they may name internal stores and addresses.
	Warnings []string
	// Denied: Prometheus (or the proxy in front of it) refused Kustos's credentials (401) or
	// its identity's query (403), a StatusError that no retry fixes: the operator must.
	Denied bool
	// Last is the last activity per target the source reported within the window.
	Last map[Ref]time.Time
	// Invalid counts result series that name no target (a label missing) or whose value is not
	// a time; they are skipped, and said so.
	Invalid int
	// Query is the PromQL sent (with the availability part), at Step: the check's, or coarser
	// when Prometheus refused the finer one for its samples limit (Requests > 1).
	Query    string
	Step     time.Duration
	Requests int
	// CollectingSince is when the source began collecting without a break up to now, when
	// that is inside the window: its availability query found nothing at an earlier step
	// (the exporter was installed, or down, or Prometheus itself was). Silence before it is
	// no evidence. Zero: collecting through the whole window (or not now).
	CollectingSince time.Time
}

// Result is one check cycle.
type Result struct {
	// At is the evaluation time; Window and Step what the queries covered.
	At           time.Time
	Window, Step time.Duration
	Sources      []SourceResult
	// Queries is the number of Prometheus requests made: one per source, whatever the number of
	// targets.
	Queries int
}

// Checker runs check cycles against Prometheus.
type Checker struct {
	API     Querier
	Sources []Compiled
	// MinStep is the finest step (default 1m); coarser when the window needs it (StepFor).
	MinStep time.Duration
	// Timeout bounds each query (default 30s).
	Timeout time.Duration
}

// availableLabel marks the availability query's samples in the combined query's result;
// gapLabel the last step of the window at which it found nothing (instant mode).
const (
	availableLabel = "kustos_source_available"
	gapLabel       = "kustos_source_gap"
	// gapPoints bounds the steps of the availability-over-the-window subquery.
	gapPoints = 1000
)

// Check asks every source, once each, about the window before now. A source that cannot be
// asked is StatusError; the others are still asked.
func (c *Checker) Check(ctx context.Context, now time.Time, window time.Duration) Result {
	minStep := c.MinStep
	if minStep <= 0 {
		minStep = time.Minute
	}
	step := StepFor(window, minStep)
	res := Result{At: now, Window: window, Step: step}
	for i := range c.Sources {
		sr := c.checkSource(ctx, &c.Sources[i], now, window, step)
		res.Sources = append(res.Sources, sr)
		res.Queries += sr.Requests
	}
	return res
}

// maxCoarsen is how often a check asks again at a coarser step when Prometheus refuses a query
// for the samples it would hold (4× each time: 11,000 steps down to 172).
const maxCoarsen = 3

func (c *Checker) checkSource(ctx context.Context, s *Compiled, now time.Time, window, step time.Duration) SourceResult {
	out := SourceResult{Name: s.Name}
	var a asked
	for {
		out.Requests++
		out.Step = step
		a = c.ask(ctx, s, now, window, step)
		out.Query = a.query
		if !tooManySamples(a.queryErr) || out.Requests > maxCoarsen {
			break
		}
		// Prometheus would hold more samples than its --query.max-samples allows: the steps
		// of the window times the series the query touches (a two-week first check over
		// 10,000 environments). The same question at a step 4× coarser: activity is found up
		// to that step later, never earlier, and only this check (the first after a start)
		// is that coarse.
		step = (4 * step).Truncate(time.Second)
	}
	if a.renderErr != nil {
		out.Status, out.Detail = StatusError, fmt.Sprintf("rendering the query: %v", a.renderErr)
		return out
	}
	if a.queryErr != nil {
		out.Status, out.Detail = StatusError, describe(a.queryErr)
		out.Denied = denied(a.queryErr)
		return out
	}
	if len(a.warnings) > 0 {
		// Any warning, about the data or the availability part (one request holds both):
		// Thanos answers 200 and a warning when a store did not answer, and the series it
		// holds are simply not in the result. Targets whose activity sat there would look
		// idle, so the whole answer is unknown.
		out.Status, out.Warnings = StatusPartial, clipWarnings(a.warnings)
		out.Detail = fmt.Sprintf("Prometheus answered with %d warning(s), so its answer may be partial, e.g. a Thanos store or a remote-read endpoint did not answer; the warnings are in Kustos's log", len(a.warnings))
		return out
	}
	return decode(s, out, a, now, window, step)
}

// tooManySamples: Prometheus refused a query for the samples it would load into memory.
func tooManySamples(err error) bool {
	var perr *v1.Error
	return errors.As(err, &perr) && perr.Type == v1.ErrExec && strings.Contains(perr.Msg, "too many samples")
}

// asked is one request of a source's check: the combined query and its availability part, the
// step of its availability-break part, Prometheus's answer, and the render or query error.
type asked struct {
	query, avail        string
	gapStep             time.Duration
	val                 model.Value
	warnings            v1.Warnings
	renderErr, queryErr error
}

// ask renders s's query for window and step and sends it.
func (c *Checker) ask(ctx context.Context, s *Compiled, now time.Time, window, step time.Duration) asked {
	a := asked{gapStep: step}
	// An increase between two scrapes s1 < s2 is seen by a step t with t−Range < s1 and t ≥ s2:
	// with Range = minRange (≥ two scrapes) + step, every such pair has a step that sees it, so
	// no activity falls between two steps. The time reported is then at most Range late, never
	// early: a target looks used a little longer, never idle sooner.
	rng := s.minRange + step
	vars := QueryVars{Window: promDuration(window), Step: promDuration(step), Range: promDuration(rng)}
	avail, err := s.render(s.available, vars)
	a.avail = avail
	if err == nil {
		var data string
		data, err = s.render(s.data, vars)
		// One request: the data, and the availability marked with a label of its own. `or`
		// keeps the marked samples because no data series carries that label.
		a.query = fmt.Sprintf(`(%s) or label_replace(%s, %q, "1", "", "")`, data, avail, availableLabel)
		if s.Mode != ModeRange {
			// The last step of the window at which the availability query found nothing
			// (empty, or only zeros): silence before it is no evidence. At most
			// gapPoints steps, so that an availability query over many series (a count of
			// every environment's gauge) stays far below Prometheus's samples limit over a
			// two-week lookback; the break is then found a coarser step late, never early.
			// A range query sees it in the availability series' own points instead.
			a.gapStep = GapStep(window, step)
			a.query += fmt.Sprintf(` or label_replace(max_over_time(timestamp(vector(1) unless on() ((%s) != 0))[%s:%s]), %q, "1", "", "")`,
				avail, vars.Window, promDuration(a.gapStep), gapLabel)
		}
	}
	if err != nil {
		a.renderErr = err
		return a
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if s.Mode == ModeRange {
		a.val, a.warnings, a.queryErr = c.API.QueryRange(qctx, a.query, v1.Range{Start: now.Add(-window), End: now, Step: step})
	} else {
		a.val, a.warnings, a.queryErr = c.API.Query(qctx, a.query, now)
	}
	return a
}

// decode reads Prometheus's answer a to s's query at step into out.
func decode(s *Compiled, out SourceResult, a asked, now time.Time, window, step time.Duration) SourceResult {
	rng := s.minRange + step
	avail, gapStep := a.avail, a.gapStep
	out.Last = map[Ref]time.Time{}
	available := false
	refOf := func(m model.Metric) (Ref, bool) {
		ref := Ref{Namespace: string(m[model.LabelName(s.Labels.Namespace)]), Name: string(m[model.LabelName(s.Labels.Name)])}
		return ref, ref.Namespace != "" && ref.Name != ""
	}
	keep := func(m model.Metric, at time.Time) {
		ref, ok := refOf(m)
		if !ok {
			out.Invalid++
			return
		}
		if at.After(out.Last[ref]) {
			out.Last[ref] = at
		}
	}
	// A value that names a target but is no time within what the query covers (a count, a
	// time in the future) means the query is not what instant mode wants: that target's
	// activity is unknown, and so is the source's (fail safe), said with an example.
	earliest := now.Add(-window - rng - step)
	var notTimes int
	var example string
	switch v := a.val.(type) {
	case model.Vector:
		for _, smp := range v {
			if smp.Metric[availableLabel] != "" {
				available = available || usable(smp.Value)
				continue
			}
			if smp.Metric[gapLabel] != "" {
				if gap, ok := unixTime(smp.Value, now); ok {
					out.CollectingSince = gap.Add(gapStep)
					// Prometheus aligns a subquery's steps to multiples of gapStep (20 minutes
					// over a two-week window), so the last one with nothing can lie just before
					// now: the step after it is ahead of the check. The source collects now,
					// so it began between the two; now is the latest, never early. A time
					// ahead would make every target's silence count only from then (a source
					// installed, or a Prometheus started, just before Kustos: alerts up to 20
					// minutes late).
					if out.CollectingSince.After(now) {
						out.CollectingSince = now.UTC()
					}
				}
				continue
			}
			at, ok := unixTime(smp.Value, now)
			ref, named := refOf(smp.Metric)
			switch {
			case !named:
				out.Invalid++
			case !ok || at.Before(earliest):
				notTimes++
				if example == "" {
					example = fmt.Sprintf("%s/%s: %s", ref.Namespace, ref.Name, smp.Value)
				}
			case at.After(out.Last[ref]):
				out.Last[ref] = at
			}
		}
	case model.Matrix:
		start := now.Add(-window)
		availableAt := map[int64]bool{} // the steps (0 at start) with a usable availability point
		for _, ss := range v {
			if ss.Metric[availableLabel] != "" {
				// Available now: a usable point at the last step.
				if n := len(ss.Values); n > 0 && !ss.Values[n-1].Timestamp.Time().Before(now.Add(-step)) && usable(ss.Values[n-1].Value) {
					available = true
				}
				for _, p := range ss.Values {
					if usable(p.Value) {
						// By the nearest step: Prometheus keeps milliseconds, now has more.
						availableAt[int64(math.Round(float64(p.Timestamp.Time().Sub(start))/float64(step)))] = true
					}
				}
				continue
			}
			for j := len(ss.Values) - 1; j >= 0; j-- {
				if p := ss.Values[j]; usable(p.Value) && p.Value > 0 {
					keep(ss.Metric, p.Timestamp.Time().UTC())
					break
				}
			}
		}
		out.CollectingSince = collectingSince(availableAt, start, now, step)
	case nil:
		out.Status, out.Detail = StatusError, "Prometheus answered without a result"
		return out
	default:
		out.Status, out.Detail = StatusError, fmt.Sprintf("the query returned a %s, not an instant vector (mode %s)", a.val.Type(), s.Mode)
		return out
	}
	if notTimes > 0 {
		out.Status, out.Last = StatusError, nil
		out.Detail = fmt.Sprintf("its data query returned %d value(s) that are no Unix time between %s and now (e.g. %s): in instant mode it must return each target's last activity, e.g. with timestamp()",
			notTimes, earliest.UTC().Format(time.RFC3339), lifecycle.Clip(example, 120))
		return out
	}
	if !available {
		out.Status = StatusUnavailable
		out.Detail = fmt.Sprintf("its availability query returned no sample other than 0: %s", lifecycle.Clip(avail, 200))
		out.Last = nil
		return out
	}
	out.Status = StatusOK
	return out
}

// GapStep is the step at which an instant-mode check looks for a break in a source's
// availability over window: step, or coarser so that there are at most 1,000 points.
// CollectingSince is then up to one GapStep late (later coverage: never idle sooner), and never
// after the check.
func GapStep(window, step time.Duration) time.Duration {
	return max(step, (window/gapPoints + time.Second).Truncate(time.Second))
}

// collectingSince is the step after the last step k of a range query (start + k·step, up to
// end) at which the availability series had no usable point; zero when it had one at each.
func collectingSince(availableAt map[int64]bool, start, end time.Time, step time.Duration) time.Time {
	if step <= 0 {
		return time.Time{}
	}
	for k := int64(end.Sub(start) / step); k >= 0; k-- {
		if !availableAt[k] {
			return start.Add(time.Duration(k+1) * step).UTC()
		}
	}
	return time.Time{}
}

// usable: a value that is a number.
func usable(v model.SampleValue) bool {
	f := float64(v)
	return !math.IsNaN(f) && !math.IsInf(f, 0) && f != 0
}

// unixTime reads a sample value as a Unix time no later than now (plus a minute of clock skew).
func unixTime(v model.SampleValue, now time.Time) (time.Time, bool) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f > float64(now.Add(time.Minute).Unix()) {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}

// maxWarnings bounds the warnings kept of one answer (a querier may send one per store).
const maxWarnings = 5

// clipWarnings are ws for the log: at most maxWarnings, each clipped, without URL credentials.
func clipWarnings(ws v1.Warnings) []string {
	out := make([]string, 0, min(len(ws), maxWarnings+1))
	for i, w := range ws {
		if i == maxWarnings {
			out = append(out, fmt.Sprintf("(and %d more)", len(ws)-maxWarnings))
			break
		}
		out = append(out, lifecycle.Clip(redact(w), 300))
	}
	return out
}

// QueryStatus is the status label of kustos_activity_queries_total: the Status, except
// "denied" for a refused credential or query, so that it can alert apart from an outage.
func (s SourceResult) QueryStatus() string {
	if s.Denied {
		return "denied"
	}
	return string(s.Status)
}

// httpStatus is the status of an answer without a Prometheus error body (a proxy's), which
// the client reports as "client error: 401"; 0 for any other error.
func httpStatus(err error) int {
	var perr *v1.Error
	if !errors.As(err, &perr) || perr.Type != v1.ErrClient {
		return 0
	}
	switch {
	case strings.HasSuffix(perr.Msg, ": 401"):
		return http.StatusUnauthorized
	case strings.HasSuffix(perr.Msg, ": 403"):
		return http.StatusForbidden
	}
	return 0
}

// denied reports a refused credential (401) or query (403).
func denied(err error) bool {
	s := httpStatus(err)
	return s == http.StatusUnauthorized || s == http.StatusForbidden
}

// describe says what went wrong asking Prometheus, without the URL's credentials.
func describe(err error) string {
	var perr *v1.Error
	if errors.As(err, &perr) {
		switch httpStatus(err) {
		case http.StatusUnauthorized:
			return "Prometheus refused the credentials (401 Unauthorized): check --prometheus-bearer-token-file or the user in --prometheus-url"
		case http.StatusForbidden:
			return "Prometheus denied the query (403 Forbidden): the token's identity lacks a permission the server or its proxy checks"
		}
		return fmt.Sprintf("Prometheus answered %s: %s", perr.Type, lifecycle.Clip(perr.Msg, 300))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "Prometheus did not answer in time"
	}
	return "Prometheus could not be asked: " + lifecycle.Clip(redact(err.Error()), 300)
}
