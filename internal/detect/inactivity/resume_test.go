package inactivity

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestPauseRecorded: a pause Kustos decides records in the state what it changes (the field and
// the value it held when decided) and when, for the target's UID: what a resume restores. A
// deletion records nothing (there is nothing to resume), nor does a target whose pause field
// has no value to restore; a restart forgets the record.
func TestPauseRecorded(t *testing.T) {
	day := 24 * time.Hour
	due := t0.Add(10 * day)
	alerted := State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: t0.Add(9 * day)}
	cases := []struct {
		name                string
		snap                func() Snapshot
		wantField, wantFrom string
		wantAt              time.Time
	}{
		{name: "scale to zero: spec.replicas and its replicas", snap: func() Snapshot {
			s := base(due)
			s.State, s.PauseFrom = alerted, "3"
			return s
		}, wantField: "spec.replicas", wantFrom: "3", wantAt: due},
		{name: "a pause field: the field and the value it held", snap: func() Snapshot {
			s := base(due)
			s.State, s.PauseFrom = alerted, "true"
			s.Settings.Pause = Pause{Field: []string{"spec", "running"}, Value: "false"}
			return s
		}, wantField: "spec.running", wantFrom: "true", wantAt: due},
		{name: "a deletion: nothing to resume", snap: func() Snapshot {
			s := base(due)
			s.State, s.PauseFrom = alerted, "3"
			s.Policy.Action = ActionDelete
			return s
		}},
		{name: "the pause field absent (it runs by default): nothing to restore", snap: func() Snapshot {
			s := base(due)
			s.State = alerted
			s.Settings.Pause = Pause{Field: []string{"spec", "running"}, Value: "false"}
			return s
		}},
		{name: "paused since: the record stays", snap: func() Snapshot {
			s := base(due.Add(time.Hour))
			s.State, s.Running, s.LastDecision = alerted, false, due
			s.State.Paused, s.State.PausedAt, s.State.PauseField, s.State.PauseFrom = true, due, "spec.replicas", "3"
			return s
		}, wantField: "spec.replicas", wantFrom: "3", wantAt: due},
		{name: "its pull request declined: the record is forgotten (a later pause by someone else is not Kustos's to undo)", snap: func() Snapshot {
			s := base(due.Add(time.Hour))
			s.State, s.LastDecision, s.PauseFrom, s.Declined = alerted, due, "3", true
			s.State.PausedAt, s.State.PauseField, s.State.PauseFrom = due, "spec.replicas", "3"
			return s
		}},
		{name: "restarted by someone: the record is forgotten", snap: func() Snapshot {
			s := base(due.Add(time.Hour))
			s.State, s.LastDecision, s.PauseFrom = alerted, due, "2"
			s.State.Paused, s.State.PausedAt, s.State.PauseField, s.State.PauseFrom = true, due, "spec.replicas", "3"
			return s
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.snap()
			d := Decide(s)
			st := d.State
			if st.PauseField != tc.wantField || st.PauseFrom != tc.wantFrom || !st.PausedAt.Equal(tc.wantAt) || st.UID != s.UID {
				t.Errorf("recorded %q=%q at %s (UID %s), want %q=%q at %s (UID %s)", st.PauseField, st.PauseFrom, st.PausedAt, st.UID,
					tc.wantField, tc.wantFrom, tc.wantAt, s.UID)
			}
			if got, _ := ParseState(st.Bag()); got != st {
				t.Errorf("the record does not survive the Lease: %+v, want %+v", got, st)
			}
		})
	}
}

// TestResumeDecide: a resume the owner asked for (recorded in the state) becomes a Change that
// sets the paused field back to exactly the value recorded at the pause, on the same UID, once;
// the target counts as used at the request, so its alerts start over. A row per transition,
// including a crash between the request and the look that carries it out.
func TestResumeDecide(t *testing.T) {
	day := 24 * time.Hour
	pausedAt := t0.Add(10 * day)
	asked := pausedAt.Add(2 * day)
	paused := func(now time.Time) Snapshot {
		s := base(now)
		s.Running, s.PauseFrom, s.LastDecision = false, "0", pausedAt
		s.State = State{UID: "u1", LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: t0.Add(9 * day), Paused: true,
			PausedAt: pausedAt, PauseField: "spec.replicas", PauseFrom: "3", ResumeAt: asked, ResumeTokens: "00000000000000aa", Owner: "ana@example.org"}
		return s
	}
	cases := []struct {
		name string
		snap func() Snapshot
		// want: the Change's field and values (none: no Change), the refusal, the state after.
		path, from, to string
		refused        bool
		withdraw       bool
		lastAct        time.Time
		alertsSent     int
		resumeAt       time.Time
		pauseFrom      string
	}{
		{name: "paused, resume asked: spec.replicas back to 3, the clock starts at the request", snap: func() Snapshot { return paused(asked.Add(time.Second)) },
			path: "spec.replicas", from: "0", to: "3", lastAct: asked, resumeAt: asked, pauseFrom: "3"},
		{name: "a pause field: spec.running back to true", snap: func() Snapshot {
			s := paused(asked.Add(time.Second))
			s.Settings.Pause = Pause{Field: []string{"spec", "running"}, Value: "false"}
			s.PauseFrom, s.State.PauseField, s.State.PauseFrom = "false", "spec.running", "true"
			return s
		}, path: "spec.running", from: "false", to: "true", lastAct: asked, resumeAt: asked, pauseFrom: "true"},
		{name: "crash after the request was recorded, before any look: the restarted Kustos resumes", snap: func() Snapshot {
			s := paused(asked.Add(time.Hour))
			s.Activity.CheckedAt = time.Time{} // no check yet since the restart
			return s
		}, path: "spec.replicas", from: "0", to: "3", lastAct: asked, resumeAt: asked, pauseFrom: "3"},
		{name: "decided already (a pull request open, or a patch the cache has not shown yet): nothing again", snap: func() Snapshot {
			s := paused(asked.Add(time.Minute))
			s.LastDecision = asked.Add(time.Second)
			s.State.LastActivity, s.State.AlertsSent, s.State.AlertsFor, s.State.LastAlertAt = asked, 0, time.Time{}, time.Time{}
			return s
		}, lastAct: asked, resumeAt: asked, pauseFrom: "3"},
		{name: "a second replica looks at the Lease the first just wrote: nothing again", snap: func() Snapshot {
			s := paused(asked.Add(time.Second))
			s.LastDecision = asked.Add(time.Second)
			s.State.LastActivity, s.State.AlertsSent, s.State.AlertsFor, s.State.LastAlertAt = asked, 0, time.Time{}, time.Time{}
			return s
		}, lastAct: asked, resumeAt: asked, pauseFrom: "3"},
		{name: "resumed: seen running, the record and the request are forgotten, the used ids stay", snap: func() Snapshot {
			s := paused(asked.Add(time.Minute))
			s.Running, s.PauseFrom, s.LastDecision = true, "3", asked.Add(time.Second)
			s.State.LastActivity, s.State.AlertsSent, s.State.AlertsFor, s.State.LastAlertAt = asked, 0, time.Time{}, time.Time{}
			return s
		}, lastAct: asked.Add(time.Minute)},
		{name: "the pause field changed since the pause (--inactivity-pause-field): refused, the request dropped", snap: func() Snapshot {
			s := paused(asked.Add(time.Second))
			s.Settings.Pause = Pause{Field: []string{"spec", "running"}, Value: "false"}
			s.PauseFrom = "false"
			return s
		}, refused: true, lastAct: t0, alertsSent: 3, pauseFrom: "3"},
		{name: "deleted and created again (another UID): nothing of the old pause applies", snap: func() Snapshot {
			s := paused(asked.Add(time.Second))
			s.UID = "u2"
			return s
		}, lastAct: t0},
		{name: "pull request mode: asked while the pause is still proposed: withdrawn, used at the request", snap: func() Snapshot {
			s := paused(asked.Add(time.Second))
			s.Running, s.PauseFrom, s.State.Paused = true, "3", false
			s.Proposed = &lifecycle.Change{Reason: ReasonInactivityDue}
			return s
		}, withdraw: true, lastAct: asked},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.snap()
			d := Decide(s)
			switch {
			case tc.to == "" && d.Change != nil:
				t.Errorf("a Change: %+v", d.Change)
			case tc.to != "":
				c := d.Change
				if c == nil || c.Reason != ReasonResume || c.Verb != "resume" || c.Edit.Op != lifecycle.EditSetFields || len(c.Edit.Fields) != 1 {
					t.Fatalf("change = %+v, want a resume setting one field", c)
				}
				f := c.Edit.Fields[0]
				if lifecycle.PathString(f.Path) != tc.path || f.From != tc.from || f.To != tc.to {
					t.Errorf("sets %s from %q to %q, want %s from %q to %q", lifecycle.PathString(f.Path), f.From, f.To, tc.path, tc.from, tc.to)
				}
				if c.Edit.Preconditions == nil || c.Edit.Preconditions.UID != "u1" {
					t.Errorf("preconditions %+v, want the UID paused", c.Edit.Preconditions)
				}
			}
			if (d.Withdraw != "") != tc.withdraw {
				t.Errorf("withdraw = %q, want %v", d.Withdraw, tc.withdraw)
			}
			if (d.ResumeRefused != "") != tc.refused {
				t.Errorf("refused = %q, want refused %v", d.ResumeRefused, tc.refused)
			}
			st := d.State
			if !st.LastActivity.Equal(tc.lastAct) || st.AlertsSent != tc.alertsSent || !st.ResumeAt.Equal(tc.resumeAt) || st.PauseFrom != tc.pauseFrom {
				t.Errorf("state = %+v, want last activity %s, alerts %d, resume asked %s, recorded %q", st, tc.lastAct, tc.alertsSent, tc.resumeAt, tc.pauseFrom)
			}
			if s.UID == "u1" && !st.ResumeTokenUsed("00000000000000aa") {
				t.Error("the used resume link's id was forgotten: a replay would work")
			}
			if tc.to != "" {
				out := Findings(lifecycle.KeyFor(DetectorName, target), target, s.Policy, s.Activity, d, s.Now)
				if len(out.Findings) != 0 {
					t.Errorf("findings with a resume: %+v", out.Findings)
				}
			}
		})
	}
}

// TestResumeRequest: a resume link's request is recorded once per link, only for the pause it
// answers; a later pause's record does not take an older link.
func TestResumeRequest(t *testing.T) {
	pausedAt := t0.Add(240 * time.Hour)
	st := State{Paused: true, PausedAt: pausedAt, PauseField: "spec.replicas", PauseFrom: "3"}
	if err := st.RequestResume("00000000000000aa", pausedAt, pausedAt.Add(time.Hour)); err != nil || !st.ResumeAt.Equal(pausedAt.Add(time.Hour)) {
		t.Fatalf("request: %v, %+v", err, st)
	}
	if err := st.RequestResume("00000000000000aa", pausedAt, pausedAt.Add(2*time.Hour)); !errors.Is(err, ErrResumeUsed) {
		t.Errorf("replay: %v, want ErrResumeUsed", err)
	}
	if err := st.RequestResume("00000000000000bb", pausedAt, pausedAt.Add(2*time.Hour)); !errors.Is(err, ErrResumeAsked) {
		t.Errorf("a second link of the same pause: %v, want ErrResumeAsked", err)
	}
	other := State{Paused: true, PausedAt: pausedAt.Add(time.Hour), PauseField: "spec.replicas", PauseFrom: "3"}
	if err := other.RequestResume("00000000000000cc", pausedAt, pausedAt.Add(2*time.Hour)); !errors.Is(err, ErrNotPaused) {
		t.Errorf("a link of an earlier pause: %v, want ErrNotPaused", err)
	}
	if err := (&State{}).RequestResume("00000000000000dd", pausedAt, pausedAt); !errors.Is(err, ErrNotPaused) {
		t.Errorf("nothing paused: %v, want ErrNotPaused", err)
	}
}

// TestPauseNotice: the first look that sees the target paused by the pause Kustos decided sends
// its owner the notice with the resume links minted for that pause; the look that decides the
// pause (it may be refused, or only proposed), later looks, and a mode without links send none.
func TestPauseNotice(t *testing.T) {
	day := 24 * time.Hour
	due := t0.Add(10 * day)
	key := lifecycle.KeyFor(DetectorName, target)
	s := base(due)
	s.State, s.PauseFrom = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: t0.Add(9 * day)}, "3"
	var minted []time.Time
	links := func(k lifecycle.Key, owner string, pausedAt, expires time.Time) ([]lifecycle.NoticeLink, error) {
		if k != key || owner != policy().Owner {
			t.Errorf("links for %s of %q", k, owner)
		}
		minted = []time.Time{pausedAt, expires}
		return []lifecycle.NoticeLink{{Label: "Resume", URL: "https://kustos.example/resume?token=x"}}, nil
	}
	notices := func(d Verdict, now time.Time, links ResumeLinks) []lifecycle.Finding {
		out := Findings(key, target, s.Policy, s.Activity, d, now)
		addPauseNotice(&out, links, key, target, s.Policy, d, now, logr.Discard())
		return out.Findings
	}
	decided := Decide(s)
	if decided.Change == nil || len(notices(decided, due, links)) != 0 || minted != nil {
		t.Fatalf("the look that decides the pause: change %v, a notice or links minted (%v)", decided.Change, minted)
	}
	seen := s
	seen.Now, seen.LastDecision, seen.Running, seen.PauseFrom, seen.State = due.Add(time.Minute), due, false, "0", decided.State
	d := Decide(seen)
	fs := notices(d, seen.Now, links)
	if len(fs) != 1 || fs[0].Notice == nil || fs[0].Notice.Kind != NoticePaused || len(fs[0].Notice.Links) != 1 || fs[0].Reason != ReasonPausedNotice {
		t.Fatalf("findings = %+v, want the pause notice with its resume link", fs)
	}
	if !strings.Contains(fs[0].Notice.Text, "spec.replicas: 3") {
		t.Errorf("text %q does not say what a resume restores", fs[0].Notice.Text)
	}
	if len(minted) != 2 || !minted[0].Equal(due) || !minted[1].Equal(due.Add(ResumeLinkTTL)) {
		t.Errorf("minted for %v", minted)
	}
	if fs := notices(d, seen.Now, func(lifecycle.Key, string, time.Time, time.Time) ([]lifecycle.NoticeLink, error) { return nil, nil }); len(fs) != 0 {
		t.Errorf("a notice without links (observer mode): %+v", fs)
	}
	later := seen
	later.Now, later.State = due.Add(time.Hour), d.State
	if fs := notices(Decide(later), later.Now, links); len(fs) != 0 {
		t.Errorf("a look after the pause was seen sent a notice again: %+v", fs)
	}
	byHand := base(due)
	byHand.Running, byHand.PauseFrom = false, "0"
	if fs := notices(Decide(byHand), due, links); len(fs) != 0 {
		t.Errorf("a target someone else paused got a notice: %+v", fs)
	}
}
