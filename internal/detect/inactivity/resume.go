package inactivity

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// A resume undoes a pause Kustos made: its owner asks with a resume link (carried out by
// internal/extension, which records the request in the target's Lease), and the next look
// restores the value the pause field held when the pause was decided, through the same
// pipeline as the pause (a pull request for what Git defines, a preconditioned patch
// otherwise, nothing in observer mode, which paused nothing).

// PauseFieldName names the field a pause sets, as the state records it: spec.replicas when the
// target is scaled to zero, the pause field otherwise.
func PauseFieldName(p Pause) string {
	return lifecycle.PathString(pausePath(p))
}

func pausePath(p Pause) []string {
	if len(p.Field) == 0 {
		return []string{"spec", "replicas"}
	}
	return p.Field
}

// pauseValue is the value a pause sets, in its Kubernetes string form.
func pauseValue(p Pause) string {
	if len(p.Field) == 0 {
		return "0"
	}
	return p.Value
}

// recordPause records, with the pause just decided, what it changes: the field, the value it
// holds now and when. A deletion, or a field without a value to restore, records nothing.
func recordPause(s Snapshot, st *State) {
	if s.Policy.Action == ActionDelete || s.PauseFrom == "" || s.PauseFrom == pauseValue(s.Settings.Pause) {
		forgetPause(st)
		return
	}
	st.PausedAt, st.PauseField, st.PauseFrom = s.Now.UTC().Truncate(time.Second), PauseFieldName(s.Settings.Pause), s.PauseFrom
	st.ResumeAt = time.Time{}
}

// forgetPause drops the pause record and a resume request of it; the used link ids stay.
func forgetPause(st *State) {
	st.PausedAt, st.PauseField, st.PauseFrom, st.ResumeAt = time.Time{}, "", "", time.Time{}
}

// BagResumeAt is the state's entry of a resume request: a change of it is what makes the
// detector look at the target at once (the controller's LeaseTrigger).
const BagResumeAt = "resume-at"

// ResumeLinks mints a pause notice's resume links for the Key: the owner they are issued to (as
// recorded), the pause (when it was decided) they answer, and when they stop working. Nil, or no
// links: the pause goes without a notice (observer mode pauses nothing).
type ResumeLinks func(key lifecycle.Key, owner string, pausedAt, expires time.Time) ([]lifecycle.NoticeLink, error)

// ResumeLinkTTL is how long a pause notice's resume links work.
const ResumeLinkTTL = 30 * 24 * time.Hour

// NoticePaused is the kind of a pause's Notice (with its resume links).
const NoticePaused = "inactivity.paused"

// addPauseNotice adds, to the look that first sees the target paused by a pause Kustos decided
// (d.PauseSeen: carried out, or merged and synced), the notice to its owner with the resume
// links. Sent then, not when the pause is decided: a pause refused (--allow) or still proposed
// is no pause to resume. Links that cannot be made, or none (observer mode), leave the pause
// without a notice.
func addPauseNotice(out *lifecycle.Decision, links ResumeLinks, key lifecycle.Key, t lifecycle.Target, p Policy, d Verdict, now time.Time, log logr.Logger) {
	st := d.State
	if links == nil || !d.PauseSeen {
		return
	}
	until := st.PausedAt.Add(ResumeLinkTTL)
	ls, err := links(key, st.Owner, st.PausedAt, until)
	if err != nil {
		log.Error(err, "cannot make resume links; the pause goes without a notice")
		return
	}
	if len(ls) == 0 {
		return
	}
	id := "inactivity-paused|" + string(key) + "|" + st.PausedAt.Format(time.RFC3339)
	msg := fmt.Sprintf("%s is paused: it was not used, and Kustos paused it by setting %s (it was %s; decided at %s).",
		t, st.PauseField, st.PauseFrom, st.PausedAt.Format(time.RFC3339))
	text := msg + fmt.Sprintf(" It can be resumed as it was (%s: %s) with the link below until %s.", st.PauseField, st.PauseFrom, until.Format(time.RFC3339))
	out.Findings = append(out.Findings, lifecycle.Finding{Reason: ReasonPausedNotice, Message: msg, ID: id,
		Notice: &lifecycle.Notice{ID: id, Kind: NoticePaused, To: p.OwnerAddress, Owner: p.Owner,
			Subject: fmt.Sprintf("%s %s is paused: it was not used", t.Kind, t.Name), Text: text, Target: t, At: now, Links: ls}})
}

// ReasonPausedNotice is the Event that goes with a pause's notice to its owner.
const ReasonPausedNotice = "InactivityPaused"

// ReasonResume is the reason of a resume Change (and its Events): the owner asked for the
// target to run again.
const ReasonResume = "InactivityResume"

// ReasonResumeRefused: a resume the owner asked for is not done (the pause field changed since
// the pause); the request is dropped.
const ReasonResumeRefused = "InactivityResumeRefused"

// Why a resume link's request is not recorded (RequestResume): detectkit's, shared with the
// expiry detector's pauses.
var (
	ErrResumeUsed  = detectkit.ErrResumeUsed
	ErrResumeAsked = detectkit.ErrResumeAsked
	ErrNotPaused   = detectkit.ErrNotPaused
)

// maxResumeTokens bounds the remembered resume link ids, like maxKeepTokens.
const maxResumeTokens = 16

// ResumeTokenUsed reports that the resume link with token id id was used already.
func (s State) ResumeTokenUsed(id string) bool {
	return slices.Contains(strings.Split(s.ResumeTokens, ","), id)
}

// RequestResume records that the resume link with token id id, issued for the pause decided at
// pausedAt, asked at now for the target to run again. The link must answer the pause the state
// records, which no resume was asked of yet.
func (s *State) RequestResume(id string, pausedAt, now time.Time) error {
	if err := detectkit.CheckResume(s.ResumeTokenUsed(id), s.PausedAt, s.ResumeAt, pausedAt); err != nil {
		return err
	}
	ids := []string{}
	if s.ResumeTokens != "" {
		ids = strings.Split(s.ResumeTokens, ",")
	}
	ids = append(ids, id)
	if len(ids) > maxResumeTokens {
		ids = ids[len(ids)-maxResumeTokens:]
	}
	s.ResumeTokens = strings.Join(ids, ",")
	s.ResumeAt = now.UTC()
	return nil
}

// resume decides a paused target whose owner asked for it to run again: the Change that sets
// the pause field back to the value recorded at the pause (never another), once — a Change
// decided at or after the request is being carried out or proposed, and the target running
// again ends it. The target counts as used at the request: its alerts start over.
func resume(s Snapshot, d *Verdict) {
	st := &d.State
	if want := PauseFieldName(s.Settings.Pause); st.PauseField != want {
		d.ResumeRefused = fmt.Sprintf("%s is not resumed: Kustos paused it by setting %s, and now pauses by setting %s (--inactivity-pause-field changed); set %s back to %s by hand",
			s.Target, st.PauseField, want, st.PauseField, st.PauseFrom)
		d.ResumeRefusedID = "inactivity-resume-refused|" + string(lifecycle.KeyFor(DetectorName, s.Target)) + "|" + st.ResumeAt.UTC().Format(time.RFC3339)
		st.ResumeAt = time.Time{}
		return
	}
	st.LastActivity = latest(st.LastActivity, st.ResumeAt)
	st.AlertsSent, st.AlertsFor, st.LastAlertAt = 0, time.Time{}, time.Time{}
	if !s.LastDecision.Before(st.ResumeAt) {
		return
	}
	path := pausePath(s.Settings.Pause)
	c := &lifecycle.Change{
		Key: lifecycle.KeyFor(DetectorName, s.Target), Detector: DetectorName, Target: s.Target, Reason: ReasonResume, Verb: "resume",
		Edit: lifecycle.Edit{Op: lifecycle.EditSetFields,
			Fields: []lifecycle.FieldChange{{Path: slices.Clone(path), From: pauseValue(s.Settings.Pause), To: st.PauseFrom}}},
		OptOut: &lifecycle.OptOut{Declined: "the target stays paused; its owner can restart it by hand", Annotation: AnnotationIgnore, Value: "true"},
	}
	if s.UID != "" {
		c.Edit.Preconditions = &lifecycle.Preconditions{UID: s.UID}
	}
	c.Summary = fmt.Sprintf("%s is resumed at its owner's request (%s): %s back to %s, as it was when Kustos paused it at %s",
		s.Target, st.ResumeAt.UTC().Format(time.RFC3339), st.PauseField, st.PauseFrom, st.PausedAt.UTC().Format(time.RFC3339))
	c.Evidence = []map[string]string{{"owner": s.Policy.Owner, "pausedAt": st.PausedAt.UTC().Format(time.RFC3339),
		"resumeRequested": st.ResumeAt.UTC().Format(time.RFC3339), "field": st.PauseField, "restores": st.PauseFrom, "message": c.Summary}}
	d.Change = c
}

// notYetPaused handles the record of a pause that has not taken effect: a human declined its
// pull request (the record goes: a later pause by someone else is not Kustos's to undo), or its
// owner asked to resume while it is still proposed (the proposal is withdrawn, and the target
// counts as used at the request).
func notYetPaused(s Snapshot, d *Verdict) {
	st := &d.State
	switch {
	case !st.ResumeAt.IsZero() && s.Proposed != nil:
		d.Withdraw = fmt.Sprintf("%s was resumed by its owner at %s, before the pause took effect", s.Target, st.ResumeAt.UTC().Format(time.RFC3339))
		st.LastActivity = latest(st.LastActivity, st.ResumeAt)
		st.AlertsSent, st.AlertsFor, st.LastAlertAt = 0, time.Time{}, time.Time{}
		forgetPause(st)
	case s.Declined && s.Proposed == nil:
		forgetPause(st)
	}
}
