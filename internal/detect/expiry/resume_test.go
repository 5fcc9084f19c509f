package expiry

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestResumeDecide is the pause-and-resume transition table of a target whose lifetime ends in
// a pause: each row is one look.
func TestResumeDecide(t *testing.T) {
	day := 24 * time.Hour
	warnAt := deadline.Add(-72 * time.Hour)
	pausedAt := deadline.Add(time.Hour)
	resumeAt := pausedAt.Add(2 * day)
	newDeadline := resumeAt.Add(3 * day)
	pause := func(s *Snapshot) { s.Policy.Action = ActionPause }
	// paused is the state after the pause was decided at pausedAt (replicas 3) and done.
	paused := func() State {
		st := warnedAt(warnAt)
		st.PausedAt, st.PauseFrom, st.PauseUID, st.NotifiedFor = pausedAt, "3", "uid-1", deadline
		return st
	}
	// asked is paused, with a "Resume for 3d" link used at resumeAt.
	asked := func() State {
		st := paused()
		if _, err := st.RequestResume("00000000000000aa", pausedAt, 3*day, resumeAt); err != nil {
			t.Fatal(err)
		}
		return st
	}
	at := func(now, last time.Time, st State, replicas string, mod ...func(*Snapshot)) Snapshot {
		return snap(now, st, append([]func(*Snapshot){pause, func(s *Snapshot) { s.LastDecision, s.Replicas = last, replicas }}, mod...)...)
	}
	tests := []struct {
		name string
		snap Snapshot
		// want
		op          lifecycle.EditOp
		fields      []lifecycle.FieldChange
		pausedAt    time.Time // the pause the state records afterwards (zero: none)
		pauseFrom   string
		resumeAt    time.Time
		deadline    time.Time
		notice      bool
		refused     string // part of the refusal (the extension is still written back); "" none
		withdrawing bool
	}{
		{name: "pause recorded: spec.replicas as it was, of this object", snap: at(pausedAt, time.Time{}, warnedAt(warnAt), "3"),
			op: lifecycle.EditScaleToZero, pausedAt: pausedAt, pauseFrom: "3", deadline: deadline},
		{name: "a pause of a target already at zero records nothing to restore", snap: at(pausedAt, time.Time{}, warnedAt(warnAt), "0"),
			op: lifecycle.EditScaleToZero, deadline: deadline},
		{name: "the look after the pause: the notice with resume links", snap: at(pausedAt.Add(time.Minute), pausedAt, func() State {
			st := paused()
			st.NotifiedFor = time.Time{}
			return st
		}(), "0"),
			pausedAt: pausedAt, pauseFrom: "3", deadline: deadline, notice: true},
		{name: "resume asked: spec.replicas back and the new deadline, in one Change", snap: at(resumeAt, pausedAt, asked(), "0"),
			op: lifecycle.EditSetFields, fields: []lifecycle.FieldChange{{Path: []string{"spec", "replicas"}, From: "0", To: "3"},
				{Path: []string{"metadata", "annotations", AnnotationExpiresAt}, To: newDeadline.Format(time.RFC3339)}},
			pausedAt: pausedAt, pauseFrom: "3", resumeAt: resumeAt, deadline: newDeadline},
		{name: "crash between the request and the look: the look after the restart resumes", snap: at(resumeAt.Add(time.Hour), pausedAt, asked(), "0"),
			op: lifecycle.EditSetFields, fields: []lifecycle.FieldChange{{Path: []string{"spec", "replicas"}, From: "0", To: "3"},
				{Path: []string{"metadata", "annotations", AnnotationExpiresAt}, To: newDeadline.Format(time.RFC3339)}},
			pausedAt: pausedAt, pauseFrom: "3", resumeAt: resumeAt, deadline: newDeadline},
		{name: "a lifetime kept in the state: only spec.replicas", snap: at(resumeAt, pausedAt, asked(), "0", func(s *Snapshot) { s.Policy.KeptInState = true }),
			op: lifecycle.EditSetFields, fields: []lifecycle.FieldChange{{Path: []string{"spec", "replicas"}, From: "0", To: "3"}},
			pausedAt: pausedAt, pauseFrom: "3", resumeAt: resumeAt, deadline: newDeadline},
		{name: "crash after the resume was decided, before it took effect: no second Change", snap: at(resumeAt.Add(time.Hour), resumeAt, asked(), "0"),
			pausedAt: pausedAt, pauseFrom: "3", resumeAt: resumeAt, deadline: newDeadline},
		{name: "the resume took effect: the record goes, the new deadline stays", snap: at(resumeAt.Add(time.Hour), resumeAt, asked(), "3",
			func(s *Snapshot) { s.Policy.Deadline = newDeadline }), deadline: newDeadline},
		{name: "the resume was declined: the record goes", snap: at(resumeAt.Add(time.Hour), resumeAt, asked(), "0",
			func(s *Snapshot) { s.Declined = true }), deadline: newDeadline},
		// A refused resume still has its extension written back.
		{name: "deleted and created again: refused", snap: at(resumeAt, pausedAt, asked(), "0", func(s *Snapshot) { s.UID = "uid-2" }),
			op: lifecycle.EditSetAnnotations, deadline: newDeadline, refused: "deleted and created again"},
		{name: "spec.replicas changed since the pause: refused", snap: at(resumeAt, pausedAt, asked(), "2"),
			op: lifecycle.EditSetAnnotations, deadline: newDeadline, refused: "spec.replicas is 2, changed since Kustos set it to 0"},
		{name: "no longer paused (set back by hand): refused", snap: at(resumeAt, pausedAt, asked(), "3"),
			op: lifecycle.EditSetAnnotations, deadline: newDeadline, refused: "runs again already"},
		// The extension's write-back supersedes the proposed pause (a later deadline).
		{name: "asked while the pause is still proposed: the new deadline replaces it, nothing to restore", snap: at(resumeAt, pausedAt, asked(), "3",
			func(s *Snapshot) { s.Proposed, s.ProposalOpen = &lifecycle.Change{Reason: ReasonExpiryDue}, true }),
			op: lifecycle.EditSetAnnotations, deadline: newDeadline},
		{name: "another object by that name, nothing asked: the record goes", snap: at(resumeAt, pausedAt, paused(), "1", func(s *Snapshot) { s.UID = "uid-2" }),
			deadline: deadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.snap)
			var op lifecycle.EditOp
			var fields []lifecycle.FieldChange
			if d.Change != nil {
				op, fields = d.Change.Edit.Op, d.Change.Edit.Fields
			}
			if op != tt.op || !reflect.DeepEqual(fields, tt.fields) {
				t.Errorf("change = %q %v, want %q %v", op, fields, tt.op, tt.fields)
			}
			if op == lifecycle.EditSetFields {
				if d.Change.Verb != "resume" || d.Change.Reason != ReasonResume || d.Change.Edit.Preconditions == nil || d.Change.Edit.Preconditions.UID != "uid-1" {
					t.Errorf("resume Change = %+v, want verb resume, reason %s, the UID as precondition", d.Change, ReasonResume)
				}
				if got := d.Change.Evidence[0]["deadline"]; got != tt.deadline.Format(time.RFC3339) {
					t.Errorf("evidence deadline = %s, want %s (supersedes the pause)", got, tt.deadline.Format(time.RFC3339))
				}
			}
			st := d.State
			if !st.PausedAt.Equal(tt.pausedAt) || st.PauseFrom != tt.pauseFrom || !st.ResumeAt.Equal(tt.resumeAt) {
				t.Errorf("pause record = %v %q resume %v, want %v %q resume %v", st.PausedAt, st.PauseFrom, st.ResumeAt, tt.pausedAt, tt.pauseFrom, tt.resumeAt)
			}
			if !tt.pausedAt.IsZero() && st.PauseUID != "uid-1" {
				t.Errorf("pause of UID %q, want uid-1", st.PauseUID)
			}
			if !d.Deadline.Equal(tt.deadline) {
				t.Errorf("deadline = %v, want %v", d.Deadline, tt.deadline)
			}
			if d.PauseNotice != tt.notice {
				t.Errorf("pause notice = %v, want %v", d.PauseNotice, tt.notice)
			}
			if (tt.refused == "") != (d.ResumeRefused == "") || !strings.Contains(d.ResumeRefused, tt.refused) {
				t.Errorf("refused = %q, want it to say %q", d.ResumeRefused, tt.refused)
			}
			if (d.Withdraw != "") != tt.withdrawing {
				t.Errorf("withdraw = %q, want one: %v", d.Withdraw, tt.withdrawing)
			}
			if back, _ := ParseState(st.Bag()); !reflect.DeepEqual(back.PausedAt, st.PausedAt) || back.PauseFrom != st.PauseFrom ||
				back.PauseUID != st.PauseUID || !back.ResumeAt.Equal(st.ResumeAt) {
				t.Errorf("the Lease's bag loses the pause record: %+v, want %+v", back, st)
			}
		})
	}
}

// TestRequestResume: a resume link moves the deadline as an extension link of its period would,
// once, and only for the pause it answers.
func TestRequestResume(t *testing.T) {
	day := 24 * time.Hour
	pausedAt := deadline.Add(time.Hour)
	st := State{Deadline: deadline, PausedAt: pausedAt, PauseFrom: "3"}
	now := pausedAt.Add(day)
	until, err := st.RequestResume("00000000000000aa", pausedAt, 3*day, now)
	if err != nil || !until.Equal(now.Add(3*day)) || !st.ExtendedUntil.Equal(until) || !st.ExtendedAt.Equal(now) || !st.ResumeAt.Equal(now) {
		t.Fatalf("RequestResume = %v, %v; state %+v; want the deadline 3d from now (it passed), recorded as an extension", until, err, st)
	}
	for _, tc := range []struct {
		name string
		st   State
		id   string
		at   time.Time
		want error
	}{
		{name: "replay", st: st, id: "00000000000000aa", at: pausedAt, want: detectkit.ErrResumeUsed},
		{name: "another link of the same pause", st: st, id: "00000000000000bb", at: pausedAt, want: detectkit.ErrResumeAsked},
		{name: "a link of an earlier pause", st: State{PausedAt: pausedAt}, id: "00000000000000cc", at: pausedAt.Add(-day), want: detectkit.ErrNotPaused},
		{name: "nothing paused", st: State{}, id: "00000000000000dd", at: pausedAt, want: detectkit.ErrNotPaused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.st.RequestResume(tc.id, tc.at, day, now); !errors.Is(err, tc.want) {
				t.Errorf("RequestResume = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestPauseNoticeLinks: the look after a pause sends the notice with resume links in place of
// the plain one, and the plain one when no links can be made.
func TestPauseNoticeLinks(t *testing.T) {
	pausedAt := deadline.Add(time.Hour)
	d := Verdict{Deadline: deadline, Action: ActionPause, SendDone: true, PauseNotice: true,
		State: State{Owner: "ana@example.com", PausedAt: pausedAt, PauseFrom: "3"}}
	links := func(key lifecycle.Key, owner string, at, until time.Time) ([]lifecycle.NoticeLink, error) {
		if owner != "ana@example.com" || !at.Equal(pausedAt) || !until.Equal(pausedAt.Add(ResumeLinkTTL)) {
			t.Errorf("links for %s, %v, %v", owner, at, until)
		}
		return []lifecycle.NoticeLink{{Label: NoticeResumeLabel("3d"), URL: "https://kustos.example/resume?x"}}, nil
	}
	out, paused := resumeFindings(lifecycle.KeyFor(DetectorName, web), web, owned(), d, pausedAt, links, logr.Discard())
	if !paused || len(out) != 1 || out[0].Notice == nil || out[0].Notice.Kind != NoticePaused || len(out[0].Notice.Links) != 1 ||
		!strings.Contains(out[0].Message, "spec.replicas: 3") {
		t.Fatalf("findings = %+v, %v; want one pause notice with the link", out, paused)
	}
	if _, paused := resumeFindings(lifecycle.KeyFor(DetectorName, web), web, owned(), d, pausedAt, nil, logr.Discard()); paused {
		t.Error("without links the plain notice must stay")
	}
}
