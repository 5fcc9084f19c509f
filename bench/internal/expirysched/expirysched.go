package expirysched

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kustos-dev/kustos/bench/internal/kevents"
	"github.com/kustos-dev/kustos/bench/internal/objects"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

// The annotations of internal/detect/expiry and the reasons of its Events (spelled out: the
// benches measure the binary, and these are its public interface).
const (
	AnnotationOwner     = "kustos.io/owner"
	AnnotationExpiresAt = "kustos.io/expires-at"

	ReasonWarning = "ExpiryWarning"
	ReasonDue     = "ExpiryDue"
)

// Deployment is an environment: the given replicas, an owner and a deadline.
func Deployment(ns, name string, replicas int32, owner string, expiresAt time.Time) *appsv1.Deployment {
	return objects.Deployment(ns, name, replicas, map[string]string{
		AnnotationOwner:     owner,
		AnnotationExpiresAt: expiresAt.UTC().Format(time.RFC3339),
	})
}

// Deadlines spreads n deadlines evenly over base+from .. base+to, rounded to whole seconds
// (RFC 3339 in kustos.io/expires-at has whole seconds; base should be a whole second too).
func Deadlines(base time.Time, n int, from, to time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		off := from
		if n > 1 {
			off += (to - from) * time.Duration(i) / time.Duration(n-1)
		}
		out[i] = base.Add(off).Round(time.Second)
	}
	return out
}

// Params is a scheduled group: N Deployments due-NNN in Namespace (which exists), deadlines
// From..To after the group's creation starts; Kustos runs with --expiry-warning-before=
// WarningBefore and --notification-interval=Interval.
type Params struct {
	Namespace               string
	N, Workers              int
	From, To                time.Duration
	WarningBefore, Interval time.Duration
	Timeout                 time.Duration // how long to wait for ExpiryDue after the last deadline
	Verbose                 bool          // log every Deployment's lateness
}

// Group is what Run measured.
type Group struct {
	Setup     time.Duration // creating the Deployments
	Scheduled []Scheduled
	Stats     Stats
}

// Run creates the group of Deployments whose deadlines fall during the run, waits for their
// ExpiryDue Events (seen by w) and analyses them.
func Run(ctx context.Context, p Params, cs kubernetes.Interface, w *kevents.Watcher, logf func(string, ...any)) (Group, error) {
	var g Group
	base := time.Now().Truncate(time.Second).Add(time.Second)
	dl := Deadlines(base, p.N, p.From, p.To)
	ds := make([]*appsv1.Deployment, len(dl))
	for i := range ds {
		ds[i] = Deployment(p.Namespace, fmt.Sprintf("due-%03d", i), 0, fmt.Sprintf("team-%02d@example.com", i%10), dl[i])
	}
	t0 := time.Now()
	if err := objects.CreateDeployments(ctx, cs, ds, p.Workers); err != nil {
		return g, fmt.Errorf("creating the scheduled Deployments: %w", err)
	}
	g.Setup = time.Since(t0)
	if first := dl[0].Add(-p.WarningBefore); time.Now().After(first) {
		return g, fmt.Errorf("creating %d Deployments took %s: the first warning (at %s) was due before they all existed; raise -from",
			len(ds), g.Setup.Round(time.Millisecond), first.Format("15:04:05"))
	}
	last := dl[len(dl)-1]
	logf("%d Deployments created in %s, deadlines %s–%s (warned %s before, due at the deadline); waiting until %s at most",
		len(ds), g.Setup.Round(time.Millisecond), dl[0].Format("15:04:05"), last.Format("15:04:05"), p.WarningBefore,
		last.Add(p.Timeout).Format("15:04:05"))
	keys := make([]string, len(ds))
	for i, d := range ds {
		keys[i] = d.Namespace + "/" + d.Name
	}
	if _, err := w.Wait(ctx, last.Add(p.Timeout), func() bool {
		for _, key := range keys {
			if w.Get("Deployment", key, ReasonDue).Count == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		return g, err
	}
	// A short look for duplicates.
	select {
	case <-ctx.Done():
		return g, ctx.Err()
	case <-time.After(time.Second):
	}
	g.Scheduled = make([]Scheduled, len(ds))
	for i, key := range keys {
		g.Scheduled[i] = Scheduled{Key: key, Deadline: dl[i], Warn: w.Get("Deployment", key, ReasonWarning), Due: w.Get("Deployment", key, ReasonDue)}
		if p.Verbose {
			s := g.Scheduled[i]
			logf("  %s: deadline %s; warning seen %s, ExpiryDue seen %s after its time", key, s.Deadline.Format("15:04:05"),
				lateString(s.Warn, s.Deadline.Add(-p.WarningBefore)), lateString(s.Due, s.Deadline))
		}
	}
	g.Stats = Analyze(g.Scheduled, p.WarningBefore, p.Interval)
	st := g.Stats
	logf("ExpiryWarning %d/%d: %s late; ExpiryDue %d/%d: %s late; early: %d warnings, %d ExpiryDue",
		len(st.WarnLate), len(ds), report.Latency(st.WarnLate),
		len(st.DueLate), len(ds), report.Latency(st.DueLate),
		st.EarlyWarn, st.EarlyDue)
	return g, nil
}

func lateString(s kevents.Seen, at time.Time) string {
	if s.Count == 0 {
		return "never"
	}
	return report.MS(s.Seen.Sub(at)) + " ms"
}

// Scheduled is one Deployment of the scheduled group and what the watch saw of it.
type Scheduled struct {
	Key       string
	Deadline  time.Time
	Warn, Due kevents.Seen
}

// Stats is what the scheduled group says about Kustos's timing.
type Stats struct {
	WarnLate []time.Duration // warning seen − (deadline − warning-before)
	DueLate  []time.Duration // ExpiryDue seen − due time (the deadline)
	// Missing: never seen; Early: seen, or decided (the Event's lastTimestamp), before its time;
	// Dup: further Events of the same reason about the same Deployment.
	MissingWarn, EarlyWarn, DupWarn int
	MissingDue, EarlyDue, DupDue    int
	// Unwarned: ExpiryDue without an ExpiryWarning. Unknown: the warning came so late (after
	// deadline − interval) that the due time was no longer the deadline; left out of DueLate.
	Unwarned, Unknown int
}

// Analyze: warned at deadline − warningBefore; due at max(deadline, warned + interval), which
// is the deadline itself as long as the warning was seen by deadline − interval (Kustos records
// the warning's time after writing its Event, so it cannot be later than the Event was seen).
func Analyze(ss []Scheduled, warningBefore, interval time.Duration) Stats {
	var st Stats
	for _, s := range ss {
		warnAt := s.Deadline.Add(-warningBefore)
		if s.Warn.Count == 0 {
			st.MissingWarn++
		} else {
			st.DupWarn += s.Warn.Count - 1
			st.WarnLate = append(st.WarnLate, s.Warn.Seen.Sub(warnAt))
			if s.Warn.Seen.Before(warnAt) || s.Warn.Stamp.Before(warnAt) {
				st.EarlyWarn++
			}
		}
		if s.Due.Count == 0 {
			st.MissingDue++
			continue
		}
		st.DupDue += s.Due.Count - 1
		if s.Due.Seen.Before(s.Deadline) || s.Due.Stamp.Before(s.Deadline) {
			st.EarlyDue++
		}
		switch {
		case s.Warn.Count == 0:
			st.Unwarned++
		case s.Warn.Seen.After(s.Deadline.Add(-interval)):
			st.Unknown++
		default:
			st.DueLate = append(st.DueLate, s.Due.Seen.Sub(s.Deadline))
		}
	}
	return st
}

// Broken lists what makes the group's measurement wrong (each fails a run whatever -strict
// says), and notes what is only worth saying; for the ExpiryDue row.
func (st Stats) Broken() (bad, notes []string) {
	if st.MissingDue > 0 {
		bad = append(bad, fmt.Sprintf("%d never due", st.MissingDue))
	}
	if st.EarlyDue > 0 {
		bad = append(bad, fmt.Sprintf("%d due early", st.EarlyDue))
	}
	if st.Unwarned > 0 {
		bad = append(bad, fmt.Sprintf("%d due without a warning", st.Unwarned))
	}
	if st.Unknown > 0 {
		bad = append(bad, fmt.Sprintf("%d warned too late to know the due time", st.Unknown))
	}
	if st.DupDue > 0 {
		notes = append(notes, fmt.Sprintf("%d duplicate ExpiryDue", st.DupDue))
	}
	return bad, notes
}
