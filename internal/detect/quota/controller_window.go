package quota

import (
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// ReasonInvalidQuotaHistory: part of the usage history the state Lease keeps for a quota
// could not be read (Warning, on the quota); those days count as missing.
const ReasonInvalidQuotaHistory = "InvalidQuotaHistory"

// dailyLookDelay is how long after UTC midnight the Lease-kept window looks again on its own at
// the least, so that every day holds a peak even when the quota's usage never changes; each
// quota adds its own share of dailyLookSpread, so that the Lease writes of a large cluster do
// not all fall in the same minute.
const (
	dailyLookDelay  = time.Minute
	dailyLookSpread = time.Hour
)

// dailyLook is when a quota next looks on its own: its own minute of the next UTC day's first
// hour.
func dailyLook(namespace, name string, now time.Time) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace + "/" + name))
	spread := time.Duration(h.Sum32()%uint32(dailyLookSpread/time.Minute)) * time.Minute
	return utcDay(now).AddDate(0, 0, 1).Add(dailyLookDelay + spread).Sub(now)
}

// windowDefaults are the flags' window settings, or the built-in ones when none were given.
func (r *Reconciler) windowDefaults() WindowPolicy {
	if r.Window.Length == 0 {
		return DefaultWindowPolicy()
	}
	return r.Window
}

// decide gathers the window, decides, and turns the verdict into the pipeline's Decision: a
// grow first (closing an open shrink's proposal before it is proposed), else a shrink when the
// mode or the opt-in allows one; the state Lease's bag carries the daily peaks and the gate
// times. stateProblems are what could not be read from the bag.
func (r *Reconciler) decide(q *corev1.ResourceQuota, p Policy, failures []Failure, external *quotahistory.Window, v lifecycle.View, now time.Time) (Verdict, lifecycle.Decision, []string) {
	resources := make([]corev1.ResourceName, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		resources = append(resources, name)
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i] < resources[j] })
	peaks, stateProblems := ReadDailyPeaks(v.Bag, resources)
	var window quotahistory.Window
	switch {
	case external != nil:
		window = *external
	case len(resources) > 0: // without a status there is no usage to record
		stateProblems = append(stateProblems, peaks.Record(q.Status.Used, resources, now, p.Window.Length)...)
		window = peaks.Window(now, p.Window.Length)
	}

	verdict := Decide(Snapshot{
		Now: now, Namespace: q.Namespace, Quota: q.Name, Hard: q.Status.Hard, Used: q.Status.Used,
		Policy: p, State: State{LastModified: v.LastModified, LastGrow: peaks.LastGrow, LastShrink: peaks.LastShrink},
		Failures: failures, Window: window,
	})
	d := lifecycle.Decision{Findings: findings(q, verdict), RequeueAfter: verdict.RequeueAfter}
	change := verdict.Change()
	switch {
	case change != nil && v.Proposed != nil && IsShrink(*v.Proposed):
		// Pods need the room now: the shrink's proposal is closed with a comment, and the grow
		// proposed on the next step of this same look.
		d.Withdraw = "the quota must grow instead: " + change.Summary
		change = nil
	case change == nil && (r.Observe || p.Window.Shrink):
		change = verdict.ShrinkChange()
	}
	if change != nil && (v.Proposed == nil || supersedesProposed(*change, *v.Proposed)) {
		peaks.Note(change, now)
	}
	d.Change = change
	if r.Observe && d.Change == nil {
		d.Findings = append(d.Findings, heldBackShrinks(q, verdict)...)
	}
	for _, problem := range stateProblems {
		d.Findings = append(d.Findings, lifecycle.Finding{Reason: ReasonInvalidQuotaHistory, Message: problem,
			ID: "history|" + string(q.UID) + "|" + problem})
	}
	if len(resources) > 0 {
		d.Bag = peaks.Bag()
	}
	if external == nil {
		next := dailyLook(q.Namespace, q.Name, now)
		if d.RequeueAfter <= 0 || next < d.RequeueAfter {
			d.RequeueAfter = next
		}
	}
	return verdict, d, stateProblems
}

func supersedesProposed(c, proposed lifecycle.Change) bool {
	_, ok := Supersedes(c, proposed)
	return ok
}

// heldBackShrinks are the observer's reports of shrinks a gate holds back, once the window is
// complete (before that every quota would be reported, held back by "window"): each a Warning
// Event QuotaShrinkRecommended naming the gates, once per value and gates.
func heldBackShrinks(q *corev1.ResourceQuota, v Verdict) []lifecycle.Finding {
	var out []lifecycle.Finding
	for _, sh := range v.Shrinks {
		if sh.Proposable() || !sh.WindowComplete || sh.Recommended.Cmp(sh.Current) >= 0 {
			continue
		}
		out = append(out, lifecycle.Finding{Reason: ReasonQuotaShrinkRecommended, Message: sh.Message,
			ID: "shrink|" + string(q.UID) + "|" + string(sh.Resource) + "|" + sh.Recommended.String() + "|" + joinGates(sh.Blocked)})
	}
	return out
}

// logShrinks writes one JSON log line per shrink recommendation whose window is complete, when
// it changes: what it recommends, from which peak, and the gates that hold it back. Observer
// mode, or a namespace that opted in; a proposable one's Change has its own line besides.
func (r *Reconciler) logShrinks(log logr.Logger, p Policy, v Verdict) {
	if !r.Observe && !p.Window.Shrink {
		return
	}
	for _, sh := range v.Shrinks {
		if !sh.WindowComplete || sh.Recommended.Cmp(sh.Current) >= 0 {
			continue
		}
		key := "shrinklog|" + sh.Namespace + "/" + sh.Quota + "/" + string(sh.Resource)
		fingerprint := sh.Recommended.String() + "|" + joinGates(sh.Blocked) + "|" + sh.Peak.Value.String()
		if prev, ok := r.seen(key); ok && prev == fingerprint {
			continue
		}
		r.remember(key, fingerprint)
		e := sh.Evidence()
		kv := []any{"reason", ReasonQuotaShrinkRecommended}
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kv = append(kv, k, e[k])
		}
		log.Info("shrink recommendation", kv...)
	}
}

// reportStateProblems counts and logs what could not be read of a quota's kept history, once
// each (the Warning Event is the Decision's Finding).
func (r *Reconciler) reportStateProblems(log logr.Logger, quota string, problems []string) {
	for _, p := range problems {
		key := "history|" + quota + "|" + p
		if _, seen := r.seen(key); seen {
			continue
		}
		r.remember(key, struct{}{})
		metrics.InvalidInput.WithLabelValues(DetectorName, "state_bag").Inc()
		log.Info("quota usage history cannot be read in part; those days count as missing", "problem", strings.TrimSpace(p))
	}
}
