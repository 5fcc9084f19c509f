package expiry

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// findings are the Events and Notices of a Verdict: the warning (with extension links minted
// by links, when set) and the note that it happened.
func findings(key lifecycle.Key, target lifecycle.Target, policy Policy, last Verdict, now time.Time,
	links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error), log logr.Logger) []lifecycle.Finding {
	var out []lifecycle.Finding
	if last.Warn {
		id := "expiry-warning|" + string(key) + "|" + last.Deadline.Format(time.RFC3339)
		msg := WarningMessage(target, policy, last.Deadline, last.At)
		n := notice(id, NoticeWarning, target, policy, last, msg, now)
		if links != nil {
			ls, err := links(key, last.Deadline, last.At.Add(LinkGrace))
			if err != nil {
				log.Error(err, "cannot make extension links; the warning goes without them")
			}
			n.Links = ls
		}
		out = append(out, lifecycle.Finding{Reason: ReasonExpiryWarning, Message: msg, ID: id, Notice: n})
	}
	if last.SendDone {
		id := "expiry-done|" + string(key) + "|" + last.Deadline.Format(time.RFC3339)
		msg := DoneMessage(target, policy, last.Deadline, last.Action)
		out = append(out, lifecycle.Finding{Reason: ReasonExpired, Message: msg, ID: id,
			Notice: notice(id, NoticeDone, target, policy, last, msg, now)})
	}
	return out
}

// Notice kinds.
const (
	NoticeWarning = "expiry.warning"
	NoticeDone    = "expiry.done"
)

func notice(id, kind string, t lifecycle.Target, p Policy, d Verdict, text string, now time.Time) *lifecycle.Notice {
	name := t.Kind + " " + t.Name
	if p.Label != "" {
		name = p.Label
	}
	subject := fmt.Sprintf("%s expires at %s", name, d.Deadline.UTC().Format(time.RFC3339))
	at := d.At
	if kind == NoticeDone {
		subject = fmt.Sprintf("%s expired and was %s", name, pastTense(d.Action))
		at = now
	}
	return &lifecycle.Notice{ID: id, Kind: kind, To: p.OwnerAddress, Owner: p.Owner, Subject: subject, Text: text,
		Target: t, Deadline: d.Deadline, At: at}
}

func pastTense(a Action) string {
	if a == ActionPause {
		return "paused"
	}
	if a == ActionUninstall {
		return "uninstalled"
	}
	if a == ActionQuarantine {
		return "quarantined"
	}
	return "removed"
}

// WarningMessage is the warning's text: which environment, its deadline and where it comes
// from, and the earliest time it is removed.
func WarningMessage(t lifecycle.Target, p Policy, deadline, actAt time.Time) string {
	keep := fmt.Sprintf("set %s in Git or opt its namespace out", AnnotationExpiresAt)
	if p.KeptInState {
		keep = "use an extension link, or write a longer lifetime into it"
	}
	return fmt.Sprintf("%s expires at %s (%s) and will be %s at %s at the earliest; owner %s. To keep it longer, %s.",
		p.label(t), deadline.UTC().Format(time.RFC3339), p.From, actionWords(p.Action), actAt.UTC().Format(time.RFC3339), p.Owner, keep)
}

// DoneMessage tells the owner it happened.
func DoneMessage(t lifecycle.Target, p Policy, deadline time.Time, a Action) string {
	return fmt.Sprintf("%s expired at %s and was %s; owner %s.", p.label(t), deadline.UTC().Format(time.RFC3339), actionWords(a), p.Owner)
}

// actionWords is what happens to an environment, in a message.
func actionWords(a Action) string {
	switch a {
	case ActionPause:
		return "paused (scaled to zero)"
	case ActionQuarantine:
		return "quarantined (powered off, renamed and moved into the quarantine folder; not destroyed)"
	}
	return "removed"
}
