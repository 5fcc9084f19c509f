package extension

import (
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Inactivity states on the owner's page (beside the expiry states; StatePROpen and StateQueued
// are shared: a pause or deletion pull request open, or waiting for room).
const (
	StateRunning        = "running"         // watched, not alerted (the Lease names the owner: it was alerted, kept or resumed before)
	StateAlerted        = "alerted"         // alerted about its idle period (Alerts of MaxAlerts)
	StateKept           = "kept"            // its owner kept it (KeptUntil)
	StatePausing        = "pausing"         // the pause is decided and being carried out
	StatePaused         = "paused"          // paused (PausedSince, PauseField, PauseFrom)
	StateResumeProposed = "resume-proposed" // its owner asked for a resume; the pull request restoring it is open
)

// observerNote is the note of an alerted row where Kustos only reports inactivity.
const observerNote = "Kustos only reports inactivity here (observer mode): nothing is paused or deleted, so there is nothing to undo."

// inactivityEnvironment is the row of an inactivity target's Lease rec on the page of the
// owner c names (ok false: not theirs). It only reads: the links are minted, never spent.
func (s *Server) inactivityEnvironment(c OwnerClaim, rec state.Record, parts lifecycle.KeyParts) (OwnerEnvironment, bool, error) {
	st, _ := inactivity.ParseState(rec.Bag)
	if st.Owner == "" || lifecycle.OwnerID(st.Owner) != c.Owner {
		return OwnerEnvironment{}, false, nil // the store checks it too; a page never shows another owner's environment
	}
	now := s.Now()
	kind, group, _ := strings.Cut(parts.KindGroup, ".")
	e := OwnerEnvironment{Detector: inactivity.DetectorName, Kind: kind, Group: group, Namespace: parts.Namespace, Name: parts.Name,
		Extend: []Link{}, IdleSince: st.AlertsFor, LastActivity: st.LastActivity, ResumeRequested: st.ResumeAt}
	if st.AlertsSent > 0 {
		e.Alerts, e.MaxAlerts = st.AlertsSent, st.MaxAlerts
	}
	if !st.PausedAt.IsZero() {
		e.PausedSince, e.PauseField, e.PauseFrom = st.PausedAt, st.PauseField, st.PauseFrom
	}
	n, pr := state.HolderNumber(rec.Holder)
	kept := now.Before(st.KeptUntil)
	switch {
	case pr && !st.ResumeAt.IsZero():
		e.State, e.PullRequest = StateResumeProposed, n
	case pr:
		e.State, e.PullRequest = StatePROpen, n
	case rec.Queued != "":
		e.State = StateQueued
	case st.Paused:
		e.State = StatePaused
	case kept:
		e.State, e.KeptUntil = StateKept, st.KeptUntil
	case !st.PausedAt.IsZero() && s.Resume != nil:
		e.State = StatePausing
	case st.AlertsSent > 0:
		e.State = StateAlerted
	default:
		e.State = StateRunning
	}
	if s.Resume == nil && !st.Paused && (st.AlertsSent > 0 || !st.PausedAt.IsZero()) {
		e.Note = observerNote
	}

	// Keep buttons answer the last alert, as the alert's mail links do, and only while that
	// alert is unanswered: the target is alerted (not paused, not kept since the alert, no resume
	// asked). The links are bound to that alert (its idle period and time), and a keep records
	// its time (KeptAt) after the alert's, so once one is used every link of the alert, the
	// mail's and every page's, keeps nothing: reload and click cannot keep again until the next
	// alert, which comes only after the keep has ended (its count starts over then). They work
	// as long as the mail's would (KeepLinkGrace) from the alert, or from now for an alert
	// whose pause waits for a review.
	if s.Keep != nil && st.AlertsSent > 0 && !st.LastAlertAt.IsZero() && !st.Paused && !kept &&
		st.KeptAt.Before(st.LastAlertAt) && st.ResumeAt.IsZero() && e.State != StateResumeProposed {
		ls, err := s.KeepLinks(rec.Key, st.Owner, st.AlertsFor, st.LastAlertAt, latest(now, st.LastAlertAt).Add(inactivity.KeepLinkGrace))
		if err != nil {
			return e, false, err
		}
		for _, l := range ls {
			e.Keep = append(e.Keep, Link{Period: strings.TrimPrefix(l.Label, "Keep for "), URL: l.URL})
		}
	}
	// A resume button for a pause Kustos made, seen in effect, that no resume was asked of
	// yet: a pause is resumed once (the request is refused once one is recorded, and the
	// record goes when the target runs again), so reload and click cannot do more than the
	// notice's link. Minted for ResumeLinkTTL from now; a pause older than the notice's links
	// can still be resumed from the page.
	if s.Resume != nil && st.Paused && !st.PausedAt.IsZero() && st.ResumeAt.IsZero() {
		ls, err := s.ResumeLinks(rec.Key, st.Owner, st.PausedAt, now.Add(inactivity.ResumeLinkTTL))
		if err != nil {
			return e, false, err
		}
		if len(ls) == 1 {
			e.Resume = ls[0].URL
		}
	}
	return e, true, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
