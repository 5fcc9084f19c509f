package inactivity

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// A keep is the owner's answer to an alert (a keep link, carried out by internal/extension): the
// target is not alerted, paused or deleted before KeptUntil, and after it the alerts start over.
// It is a promise recorded in the target's Lease, not a new policy: kustos.io/inactivity-timeout
// is not changed, and the idle time counts on through the keep.

// kept applies a recorded keep to d: while it lasts nothing is sent or decided (a pause or
// deletion proposed before it is withdrawn) and the next look is at its end; once it has ended
// the alert count starts over. It reports whether the keep decided d.
func kept(s Snapshot, d *Verdict, idleAt time.Time, check time.Duration) bool {
	st := &d.State
	if st.KeptUntil.IsZero() {
		return false
	}
	if !s.Now.Before(st.KeptUntil) {
		// Ended: the alerts start over, from the first, as for a target that just became idle.
		// KeptAt stays: links of the alerts before the keep keep nothing any more.
		st.KeptUntil, st.AlertsSent, st.LastAlertAt = time.Time{}, 0, time.Time{}
		return false
	}
	if s.Proposed != nil {
		d.Withdraw = fmt.Sprintf("%s is kept by its owner until %s", s.Target, st.KeptUntil.UTC().Format(time.RFC3339))
	}
	d.Next, d.At = NextAlert, latest(st.KeptUntil, idleAt)
	if s.Policy.MaxAlerts == 0 {
		d.Next = next(s.Policy.Action)
	}
	d.RequeueAfter = min(st.KeptUntil.Sub(s.Now), check)
	return true
}

// maxKeepTokens bounds the remembered keep link ids (16 hex digits each, 17 bytes with the
// comma: 32 fit a Lease bag value many times over). Links expire a week after the alert's
// pause would have come; a target alerted often enough to use more within that time loses the
// oldest ids, whose links have expired long before.
const maxKeepTokens = 32

// KeepTokenUsed reports that the keep link with token id id was used already.
func (s State) KeepTokenUsed(id string) bool {
	return slices.Contains(strings.Split(s.KeepTokens, ","), id)
}

// Keep records that the keep link with token id id kept the target until until, at now.
func (s *State) Keep(id string, until, now time.Time) {
	ids := []string{}
	if s.KeepTokens != "" {
		ids = strings.Split(s.KeepTokens, ",")
	}
	ids = append(ids, id)
	if len(ids) > maxKeepTokens {
		ids = ids[len(ids)-maxKeepTokens:]
	}
	s.KeepTokens = strings.Join(ids, ",")
	if until.After(s.KeptUntil) {
		s.KeptUntil = until.UTC()
	}
	s.KeptAt = now.UTC()
}

// KeepLinkGrace is how long a keep link works past the pause or deletion its alert announced:
// in PR mode that waits for a review, and a keep withdraws it until then.
const KeepLinkGrace = 7 * 24 * time.Hour

// KeepLinks mints an alert's keep links for the Key: the owner they are issued to (as recorded),
// the idle period and the alert (its time) they answer, and when they stop working. Nil: alerts
// carry none (no extension server).
type KeepLinks func(key lifecycle.Key, owner string, idleSince, alertAt, expires time.Time) ([]lifecycle.NoticeLink, error)

// addKeepLinks puts keep links into the alert of out (d's), when there is one; an alert whose
// links cannot be made goes without them.
func addKeepLinks(out *lifecycle.Decision, links KeepLinks, key lifecycle.Key, d Verdict, log logr.Logger) {
	if links == nil || !d.Alert {
		return
	}
	for i := range out.Findings {
		n := out.Findings[i].Notice
		if out.Findings[i].Reason != ReasonInactive || n == nil {
			continue
		}
		ls, err := links(key, d.State.Owner, d.IdleSince, d.State.LastAlertAt, d.ActAt.Add(KeepLinkGrace))
		if err != nil {
			log.Error(err, "cannot make keep links; the alert goes without them")
		}
		n.Links = ls
	}
}

// recordOwner keeps the owner in the state while the target is alerted, kept or paused, and
// while the state remembers links its owner used (a keep or a resume): the owner's page lists
// the target by it, so an owner who kept or resumed it sees it running again. Only then: a
// target nobody was told about needs no owner in its Lease.
func recordOwner(st *State, owner string) {
	if st.AlertsFor.IsZero() && st.KeptUntil.IsZero() && st.PausedAt.IsZero() && st.KeepTokens == "" && st.ResumeTokens == "" {
		st.Owner = ""
		return
	}
	st.Owner = lifecycle.RecordedOwner(owner)
}
