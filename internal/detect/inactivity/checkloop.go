package inactivity

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// Checked is the signal the check loop sends after each check: every target is looked at again.
type Checked = event.TypedGenericEvent[struct{}]

// FullSweepEvery is how often (in checks) a check is followed by a look at every object of the
// kind, not only at the targets: a template object is not watched, so a timeout its template
// gains is found at the next full sweep (hourly at the default 5-minute check interval).
// Between full sweeps only the targets are looked at again: in a cluster where one Deployment in
// ten is a lab environment, the nine others cost nothing at each check.
const FullSweepEvery = 12

// setTarget records whether the last look at n found it a target.
func (r *Reconciler) setTarget(n types.NamespacedName, target bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !target {
		delete(r.targets, n)
		return
	}
	if r.targets == nil {
		r.targets = map[types.NamespacedName]bool{}
	}
	r.targets[n] = true
}

// afterCheck is what a check queues: every object of the kind at the first check and every
// FullSweepEvery checks, else the targets.
func (r *Reconciler) afterCheck(ctx context.Context) []reconcile.Request {
	r.mu.Lock()
	r.checks++
	full := r.checks%FullSweepEvery == 1
	var reqs []reconcile.Request
	if !full {
		reqs = make([]reconcile.Request, 0, len(r.targets))
		for n := range r.targets {
			reqs = append(reqs, reconcile.Request{NamespacedName: n})
		}
	}
	r.mu.Unlock()
	if full {
		return r.all(ctx, "")
	}
	return reqs
}

// CheckLoop runs the activity checks (on the leader): one query per source every Interval,
// then every target is looked at again.
type CheckLoop struct {
	Checker  *activity.Checker
	Tracker  *activity.Tracker
	Interval time.Duration
	// Notify are the reconcilers' Checked channels.
	Notify []chan Checked
	Now    func() time.Time
	Log    logr.Logger
}

// NeedLeaderElection: only the leader decides, so only the leader asks Prometheus.
func (l *CheckLoop) NeedLeaderElection() bool { return true }

// Start checks at once, then every Interval, until ctx ends.
func (l *CheckLoop) Start(ctx context.Context) error {
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	for {
		l.CheckOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// CheckOnce runs one check and tells the reconcilers.
func (l *CheckLoop) CheckOnce(ctx context.Context) activity.Result {
	now := l.Now()
	start := time.Now()
	minStep := l.Checker.MinStep
	if minStep <= 0 {
		minStep = time.Minute
	}
	window := l.Tracker.Window(now, l.Interval+2*minStep, activity.Names(l.Checker.Sources))
	res := l.Checker.Check(ctx, now, window)
	l.Tracker.Observe(res)
	metrics.ActivityCheckDuration.Observe(time.Since(start).Seconds())
	for _, s := range res.Sources {
		metrics.ActivityQueries.WithLabelValues(s.Name, s.QueryStatus()).Inc()
		if s.Requests > 1 {
			l.Log.Info("Prometheus refused the query for the samples it would hold; asked again at a coarser step (activity found up to that step later)",
				"source", s.Name, "step", s.Step, "checkStep", res.Step, "requests", s.Requests, "window", res.Window)
		}
		up := 0.0
		if s.Status == activity.StatusOK {
			up = 1
		} else {
			kv := []any{"source", s.Name, "status", s.Status, "detail", s.Detail}
			if len(s.Warnings) > 0 {
				// Prometheus's own text (a Thanos store that did not answer): for the
				// operator, never in the tenants' Events.
				kv = append(kv, "warnings", s.Warnings)
			}
			l.Log.Info("activity source not usable; nothing is declared inactive until it is", kv...)
		}
		metrics.ActivitySourceUp.WithLabelValues(s.Name).Set(up)
		if s.Invalid > 0 {
			metrics.InvalidInput.WithLabelValues(DetectorName, "activity_series").Add(float64(s.Invalid))
			l.Log.Info("activity series skipped: no target labels or no time as value", "source", s.Name, "count", s.Invalid)
		}
	}
	l.Log.V(1).Info("activity checked", "window", res.Window, "step", res.Step, "queries", res.Queries, "took", time.Since(start))
	for _, ch := range l.Notify {
		select {
		case ch <- Checked{}:
		default: // a signal is pending already: one look at every target is enough
		}
	}
	return res
}
