package ephemeral

import (
	"context"
	"fmt"
	"time"
)

// Snapshot is what the controller gathered for one Cleaner: when it was created, the objects of
// its evaluated targets, and now. It holds no client; Decide does no I/O.
type Snapshot struct {
	Created time.Time
	Now     time.Time
	// Objects holds, per evaluated target name, the objects found (Kubernetes objects as
	// unstructured maps): none or one for a named target, any number for a selector target.
	Objects map[string][]map[string]any
}

// Result is one condition's outcome at one time.
type Result struct {
	Index int
	Value bool
	// Err is why the condition could not be evaluated; the condition then counts as false.
	Err error
}

// Verdict is what Decide concluded.
type Verdict struct {
	ExpiresAt time.Time
	// Expired: the TTL is reached and the conditions were evaluated.
	Expired bool
	// Results are the conditions' values at Now (nil before the TTL).
	Results []Result
	// Due: the TTL is reached and every condition holds: the cleanup happens now.
	Due bool
	// Next is when to evaluate again if no target changes (zero when Due): the TTL deadline,
	// the earliest time a monotonic search found, or Now + period.
	Next time.Time
	// Searched: Next is the exact time a monotonic search found.
	Searched bool
	// Evaluations counts evaluations of the whole condition set, the search included.
	Evaluations int
}

// Failed reports whether a condition could not be evaluated at Now.
func (d Verdict) Failed() bool {
	for _, r := range d.Results {
		if r.Err != nil {
			return true
		}
	}
	return false
}

// Decide is the Cleaner's decision: before the TTL, look again at the deadline; after it,
// evaluate every condition with time = Now; all true → due; otherwise, when the spec says the
// conditions are monotonic in time, the earliest whole second within the horizon at which they
// hold (Search), else Now + period. ctx bounds the evaluations (each has its own deadline too).
func (s *Spec) Decide(ctx context.Context, snap Snapshot) Verdict {
	d := Verdict{ExpiresAt: snap.Created.Add(s.TTL)}
	if snap.Now.Before(d.ExpiresAt) {
		d.Next = d.ExpiresAt
		return d
	}
	d.Expired = true
	vars, verr := s.variables(snap.Objects)
	d.Results = s.evaluate(ctx, vars, verr, snap.Now)
	d.Evaluations = 1
	if holds(d.Results) {
		d.Due = true
		return d
	}
	d.Next = snap.Now.Add(s.Period)
	if !s.Monotonic || d.Failed() {
		return d
	}
	at, n, ok := s.search(ctx, vars, snap.Now)
	d.Evaluations += n
	if ok {
		d.Next, d.Searched = at, true
	}
	return d
}

// search finds the earliest whole second t in (now, now+horizon] at which every condition holds,
// assuming they are monotonic in time (false, then true for ever): one evaluation at the end
// of the horizon, then a binary search between the last second known false and the first known
// true — ⌈log2(horizon in seconds)⌉ more evaluations, 22 for 30 days. A failing evaluation
// counts as false (nothing is ever scheduled on an error). It returns the evaluations spent.
func (s *Spec) search(ctx context.Context, vars map[string]any, now time.Time) (time.Time, int, bool) {
	lo := now.Unix() // conditions are false at now, so (being monotonic) at the second before it
	hi := now.Add(s.Horizon).Unix()
	if hi <= lo {
		return time.Time{}, 0, false
	}
	n := 1
	if !holds(s.evaluate(ctx, vars, nil, time.Unix(hi, 0))) {
		return time.Time{}, n, false
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		n++
		if holds(s.evaluate(ctx, vars, nil, time.Unix(mid, 0))) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return time.Unix(hi, 0).UTC(), n, true
}

// variables builds the conditions' variables from the gathered objects: a named target's
// object or null, a selector target's {items: [...]}.
func (s *Spec) variables(objects map[string][]map[string]any) (map[string]any, error) {
	vars := make(map[string]any, len(s.Targets)+1)
	for _, t := range s.Targets {
		if !t.Evaluated {
			continue
		}
		objs := objects[t.Name]
		if t.Selector == nil {
			switch len(objs) {
			case 0:
				vars[t.Name] = nil
			case 1:
				vars[t.Name] = objs[0]
			default:
				return nil, fmt.Errorf("target %s names one object but %d were given", t.Name, len(objs))
			}
			continue
		}
		if len(objs) > MaxSelectedItems {
			return nil, fmt.Errorf("target %s selects %d objects, more than %d", t.Name, len(objs), MaxSelectedItems)
		}
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = o
		}
		vars[t.Name] = map[string]any{"items": items}
	}
	return vars, nil
}

// evaluate evaluates every condition with time = at. verr, when set, is the reason none can be.
func (s *Spec) evaluate(ctx context.Context, vars map[string]any, verr error, at time.Time) []Result {
	res := make([]Result, len(s.conditions))
	if verr == nil {
		vars[TimeVariable] = at.UTC()
	}
	for i, p := range s.conditions {
		res[i].Index = i
		if verr != nil {
			res[i].Err = verr
			continue
		}
		res[i].Value, res[i].Err = p.eval(ctx, vars, s.timeout)
	}
	return res
}

func holds(rs []Result) bool {
	for _, r := range rs {
		if r.Err != nil || !r.Value {
			return false
		}
	}
	return true
}
