package quota

import (
	"fmt"
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
	switch {
	case d.Withdraw != "" || change != nil || v.Proposed == nil || !IsShrink(*v.Proposed):
	case !r.Observe && !p.Window.Shrink:
		// The namespace (resizer.io/shrink: "false") or the operator (--enable-shrink) took the
		// opt-in back while the shrink was open: it is not wanted any more.
		d.Withdraw = "shrinking is no longer opted in (resizer.io/shrink on the Namespace, or --enable-shrink)"
	default:
		// No grow, and no shrink to replace it with: the open shrink stays unless usage rose
		// into the band or a gate that speaks of need now holds it back.
		d.Withdraw = shrinkUnwanted(verdict, *v.Proposed, q.Status.Hard, q.Status.Used, p, window)
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

// withdrawingGates are the gates whose holding back makes an open shrink unwanted: pods fail
// for want of the quota, or it had to be raised inside the window. The shrink's own cooldown
// (on record since it was proposed) and a window that went incomplete (Prometheus unreachable
// for a while) say nothing about need, and leave it open.
var withdrawingGates = []Gate{GateFailedCreate, GateRecentGrow}

// shrinkUnwanted says why the open shrink proposed is no longer wanted, resource by resource
// ("usage rose: …", "held back: …"); "" when it still is, or when what holds it back says
// nothing about need. A resource the verdict no longer shrinks lies within the tolerance band
// of the window's target (or below the target).
func shrinkUnwanted(v Verdict, proposed lifecycle.Change, hard, used corev1.ResourceList, p Policy, w quotahistory.Window) string {
	shrinks := map[corev1.ResourceName]Shrink{}
	for _, sh := range v.Shrinks {
		shrinks[sh.Resource] = sh
	}
	var why []string
	for _, f := range proposed.Edit.Fields {
		if len(f.Path) != 3 || f.Path[0] != "spec" || f.Path[1] != "hard" {
			continue
		}
		name := corev1.ResourceName(f.Path[2])
		sh, shrinking := shrinks[name]
		if !shrinking {
			if r := usageRose(name, hard, used, p, w); r != "" {
				why = append(why, r)
			}
			continue
		}
		var gates []Gate
		for _, g := range sh.Blocked {
			for _, wg := range withdrawingGates {
				if g == wg {
					gates = append(gates, g)
				}
			}
		}
		if len(gates) > 0 {
			why = append(why, "held back: "+strings.ReplaceAll(joinGates(gates), ",", ", ")+" ("+string(name)+")")
		}
	}
	return strings.Join(why, "; ")
}

// usageRose describes a resource the window no longer shrinks: its peak (or used, when
// higher), the target and the hard value within the band. "" when the window has no
// peak of it or the quota no longer has it: no usage seen is no reason to withdraw.
func usageRose(name corev1.ResourceName, hardList, used corev1.ResourceList, p Policy, w quotahistory.Window) string {
	peak, ok := w.Peaks[name]
	hard, has := hardList[name]
	if !ok || !w.Complete || !has {
		return ""
	}
	u := used[name]
	target := windowTarget(u, peak, true, p.Settings(name).Headroom)
	seen := "peak " + peak.Value.String() + " over the window"
	if u.Cmp(peak.Value) > 0 {
		seen = "used " + u.String()
	}
	where := "is within the band"
	if RatOf(hard).Cmp(target) < 0 {
		where = "is below the target"
	}
	// The target as the quota writes its values, rounded as a proposal would be.
	shown := FormatRat(target)
	if q, err := roundTarget(target, hard, name); err == nil {
		shown = q.String()
	}
	return fmt.Sprintf("usage rose: %s %s, target %s, hard %s %s", name, seen, shown, hard.String(), where)
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
