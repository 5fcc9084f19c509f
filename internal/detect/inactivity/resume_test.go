package inactivity

import (
	"testing"
	"time"
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
