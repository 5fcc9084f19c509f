package inactivity

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Findings is the pipeline's decision for d: the Change, the state to keep (always; the caller
// drops it when unchanged), the alert (an Event
// and a Notice to the owner) and the ActivityUnknown Event. The controller and the offline plan
// share it.
func Findings(key lifecycle.Key, target lifecycle.Target, p Policy, act activity.Activity, d Verdict, now time.Time) lifecycle.Decision {
	out := lifecycle.Decision{Change: d.Change, RequeueAfter: d.RequeueAfter, Withdraw: d.Withdraw, HoldMerge: d.HoldMerge}
	out.Bag = d.State.Bag()
	if d.Alert {
		idle := d.IdleSince.UTC().Format(time.RFC3339)
		id := "inactivity-alert|" + string(key) + "|" + idle + "|" + strconv.Itoa(d.State.AlertsSent)
		if k := d.State.KeptAt; !k.IsZero() && k.After(d.IdleSince) {
			// After a keep the alerts start over about the same idle time: without the keep in
			// it, alert n would carry the id of alert n before the keep, and the Event and the
			// notice, deduplicated by id, would never reach the owner.
			id += "|kept " + k.UTC().Format(time.RFC3339Nano)
		}
		msg := AlertMessage(target, p, d)
		out.Findings = append(out.Findings, lifecycle.Finding{Reason: ReasonInactive, Message: msg, ID: id,
			Notice: &lifecycle.Notice{ID: id, Kind: NoticeAlert, To: p.OwnerAddress, Owner: p.Owner,
				Subject: fmt.Sprintf("%s %s has been idle since %s (alert %d of %d)", target.Kind, target.Name, idle, d.State.AlertsSent, p.MaxAlerts),
				Text:    msg, Target: target, Deadline: d.ActAt, At: now}})
	}
	if d.ResumeRefused != "" {
		out.Findings = append(out.Findings, lifecycle.Finding{Reason: ReasonResumeRefused, Message: d.ResumeRefused, ID: d.ResumeRefusedID})
	}
	if d.Unknown {
		out.Findings = append(out.Findings, lifecycle.Finding{Reason: ReasonActivityUnknown, Message: UnknownMessage(act),
			ID: "inactivity-unknown|" + string(key) + "|" + d.IdleSince.UTC().Format(time.RFC3339)})
	}
	return out
}

// NoticeAlert is the kind of an alert's Notice.
const NoticeAlert = "inactivity.alert"

// UnknownMessage says why nothing can be declared inactive: which sources, and in which state.
// It goes to the tenant (an Event on the target), so it names no more than the source and its
// status: the detail (Prometheus's error text, which can name internal stores and addresses) is
// the operator's, in Kustos's log and `kustos inactivity plan`.
func UnknownMessage(a activity.Activity) string {
	if a.CheckedAt.IsZero() {
		return "no activity check has completed yet; nothing is declared inactive until one does"
	}
	var parts []string
	for _, s := range a.Sources {
		if s.Status != activity.StatusOK {
			parts = append(parts, fmt.Sprintf("%s: %s", s.Name, s.Status))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		parts = append(parts, "a source has not yet covered this target's idle time")
	}
	return "activity unknown, nothing is declared inactive: " + strings.Join(parts, "; ") + " (the reason is in Kustos's log)"
}

// AlertMessage is an alert's text.
func AlertMessage(t lifecycle.Target, p Policy, d Verdict) string {
	what := "paused"
	if p.Action == ActionDelete {
		what = "deleted"
	}
	left := p.MaxAlerts - d.State.AlertsSent
	return fmt.Sprintf("%s has not been used since %s (timeout %s); alert %d of %d: it will be %s at %s unless it is used before then. Owner %s.",
		t, d.IdleSince.UTC().Format(time.RFC3339), p.From, d.State.AlertsSent, p.MaxAlerts,
		what, d.ActAt.UTC().Format(time.RFC3339), orDash(p.Owner)) + remaining(left)
}

func remaining(left int) string {
	if left <= 0 {
		return " This was the last alert."
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
