package expiry

import (
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// A pause at the deadline (kustos.io/on-expiry: pause) can be resumed by its owner, like an
// inactivity pause: the pause records spec.replicas as it was, and the notice that the target
// was paused carries one-time resume links (internal/extension). An expired environment that
// runs again would be paused again at the next look, so each link is also an extension: "Resume
// for 3d" moves the deadline as the extension link of that period would (recorded the same way,
// bounded by --extension-max), and the next look restores the recorded replicas, together with
// the new deadline (kustos.io/expires-at) where the environment is declared, in one Change.

// ReasonResume is the reason of a resume Change (and its Events): the owner asked for the
// paused target to run again, for a new lifetime.
const ReasonResume = "ExpiryResume"

// ReasonResumeRefused: a resume the owner asked for is not done (the target was replaced, or
// spec.replicas changed since the pause); the extension stands, the request is dropped.
const ReasonResumeRefused = "ExpiryResumeRefused"

// PauseField is the field an expiry pause sets, as its state records it.
const PauseField = "spec.replicas"

// NoticeResumeLabel is how a resume link of the pause notice is labelled, by its period.
func NoticeResumeLabel(period string) string { return "Resume for " + period }

// ResumeLinks mints the resume links of a pause's notice for the Key: issued to owner (as
// recorded), answering the pause decided at pausedAt, working until expires; one per extension
// period. Nil: the pause notice goes without them.
type ResumeLinks func(key lifecycle.Key, owner string, pausedAt, expires time.Time) ([]lifecycle.NoticeLink, error)

// ResumeLinkTTL is how long a pause notice's resume links work.
const ResumeLinkTTL = 30 * 24 * time.Hour

// recordPause records, with the pause just decided, the replicas it sets to zero and for which
// object. Replicas not known, or already zero, leave nothing to restore: nothing is recorded.
func recordPause(s Snapshot, st *State) {
	forgetPause(st)
	if s.Replicas == "" || s.Replicas == "0" {
		return
	}
	st.PausedAt, st.PauseFrom, st.PauseUID = s.Now.UTC().Truncate(time.Second), s.Replicas, s.UID
}

// forgetPause drops the pause record and a resume request of it; the used link ids stay.
func forgetPause(st *State) {
	st.PausedAt, st.PauseFrom, st.PauseUID, st.ResumeAt = time.Time{}, "", "", time.Time{}
}

// RequestResume records that the resume link with token id id, issued for the pause decided at
// pausedAt, asked at now for the target to run again for d: the link must answer the pause the
// state records, unused, and no resume of it was asked yet (detectkit.CheckResume's errors).
// The deadline moves as an extension link's would: by d from the deadline, or from now when
// that passed, never to before an extension already granted. It returns the new deadline.
func (s *State) RequestResume(id string, pausedAt time.Time, d time.Duration, now time.Time) (time.Time, error) {
	if err := detectkit.CheckResume(slices.Contains(s.UsedTokens, id), s.PausedAt, s.ResumeAt, pausedAt); err != nil {
		return time.Time{}, err
	}
	base := s.Deadline
	if base.Before(now) {
		base = now
	}
	until := base.Add(d).UTC().Truncate(time.Second)
	if s.ExtendedUntil.After(until) {
		until = s.ExtendedUntil
	}
	s.ExtendedUntil, s.ExtendedAt, s.ResumeAt = until, now.UTC(), now.UTC()
	s.UsedTokens = append(s.UsedTokens, id)
	return until, nil
}

// resume applies a recorded pause and its resume request to d, after the schedule: the Change
// that restores the recorded replicas (and records the new deadline) once, when the target is
// still in the pause; a refusal when it is not; the record's end when the target runs again.
func resume(s Snapshot, d *Verdict) {
	st := &d.State
	if st.PausedAt.IsZero() {
		return
	}
	key := lifecycle.KeyFor(DetectorName, s.Target)
	refuse := func(why string) {
		d.ResumeRefused = fmt.Sprintf("%s is not resumed: %s; its new deadline %s stands", s.Target, why, d.Deadline.UTC().Format(time.RFC3339))
		d.ResumeRefusedID = "expiry-resume-refused|" + string(key) + "|" + st.ResumeAt.UTC().Format(time.RFC3339)
		forgetPause(st)
	}
	switch {
	case s.UID != "" && st.PauseUID != "" && s.UID != st.PauseUID:
		if st.ResumeAt.IsZero() {
			forgetPause(st) // another object by that name: the pause was not of it
			return
		}
		refuse(fmt.Sprintf("it was deleted and created again since Kustos paused it (UID %s, paused %s)", s.UID, st.PauseUID))
	case st.ResumeAt.IsZero():
	case s.Proposed != nil && s.Proposed.Reason == ReasonExpiryDue:
		// Asked while the pause is still proposed: the new deadline withdraws the proposal, and
		// there is nothing to restore.
		forgetPause(st)
	case !s.LastDecision.Before(st.ResumeAt):
		// The resume was decided: carried out once the target runs again, or declined.
		if s.Declined || (s.Replicas != "" && s.Replicas != "0") {
			forgetPause(st)
		}
	case s.Replicas == st.PauseFrom:
		refuse(fmt.Sprintf("it runs again already (%s is %s, set back since Kustos paused it)", PauseField, s.Replicas))
	case s.Replicas != "" && s.Replicas != "0":
		refuse(fmt.Sprintf("%s is %s, changed since Kustos set it to 0 at %s; set it to %s by hand if wanted",
			PauseField, s.Replicas, st.PausedAt.UTC().Format(time.RFC3339), st.PauseFrom))
	default:
		d.Change, d.Withdraw = resumeChange(s, *d), ""
	}
}

// resumeChange sets spec.replicas back to the recorded value and, where the environment is
// declared (not for a lifetime Kustos keeps itself), kustos.io/expires-at to the new deadline:
// one pull request or patch, so the target never runs with the deadline that paused it.
func resumeChange(s Snapshot, d Verdict) *lifecycle.Change {
	st := d.State
	at := d.Deadline.UTC().Format(time.RFC3339)
	fields := []lifecycle.FieldChange{{Path: []string{"spec", "replicas"}, From: "0", To: st.PauseFrom}}
	if !s.Policy.KeptInState && d.Deadline.After(s.Policy.Deadline) {
		fields = append(fields, lifecycle.FieldChange{Path: []string{"metadata", "annotations", AnnotationExpiresAt}, To: at})
	}
	c := &lifecycle.Change{
		Key: lifecycle.KeyFor(DetectorName, s.Target), Detector: DetectorName, Target: s.Target, Reason: ReasonResume, Verb: "resume",
		Edit:   lifecycle.Edit{Op: lifecycle.EditSetFields, Fields: fields},
		OptOut: &lifecycle.OptOut{Declined: "the target stays paused; its owner can restart it by hand", Annotation: LabelIgnore, Value: "true"},
	}
	if s.UID != "" {
		c.Edit.Preconditions = &lifecycle.Preconditions{UID: s.UID}
	}
	c.Summary = fmt.Sprintf("%s is resumed at its owner's request (%s): %s back to %s, as it was when Kustos paused it at %s; it now expires at %s",
		s.Target, st.ResumeAt.UTC().Format(time.RFC3339), PauseField, st.PauseFrom, st.PausedAt.UTC().Format(time.RFC3339), at)
	c.Evidence = []map[string]string{{"owner": s.Policy.Owner, "pausedAt": st.PausedAt.UTC().Format(time.RFC3339),
		"resumeRequested": st.ResumeAt.UTC().Format(time.RFC3339), "field": PauseField, "restores": st.PauseFrom,
		"deadline": at, "message": c.Summary}}
	return c
}

// NoticePaused is the kind of a pause's notice with its resume links.
const NoticePaused = "expiry.paused"

// resumeFindings are a Verdict's resume Events and Notices: the refusal of a resume, and the
// notice that the target was paused with its resume links (in place of the plain "paused" one;
// links that cannot be made leave that one).
func resumeFindings(key lifecycle.Key, t lifecycle.Target, p Policy, d Verdict, now time.Time, links ResumeLinks, log logr.Logger) (out []lifecycle.Finding, paused bool) {
	if d.ResumeRefused != "" {
		log.Info("resume refused", "why", d.ResumeRefused)
		out = append(out, lifecycle.Finding{Reason: ReasonResumeRefused, Message: d.ResumeRefused, ID: d.ResumeRefusedID})
	}
	if !d.PauseNotice || links == nil {
		return out, false
	}
	st := d.State
	until := st.PausedAt.Add(ResumeLinkTTL)
	ls, err := links(key, st.Owner, st.PausedAt, until)
	if err != nil {
		log.Error(err, "cannot make resume links; the pause notice goes without them")
		return out, false
	}
	if len(ls) == 0 {
		return out, false
	}
	id := "expiry-paused|" + string(key) + "|" + st.PausedAt.Format(time.RFC3339)
	msg := DoneMessage(t, p, d.Deadline, d.Action) + fmt.Sprintf(" It can be resumed as it was (%s: %s) with a link below until %s; each moves its deadline by the period it names.",
		PauseField, st.PauseFrom, until.Format(time.RFC3339))
	n := notice(id, NoticePaused, t, p, d, msg, now)
	n.Links = ls
	return append(out, lifecycle.Finding{Reason: ReasonExpired, Message: msg, ID: id, Notice: n}), true
}
