package inactivity

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var (
	t0     = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	target = lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "lab", Name: "vm-1"}
)

func known(last, covered, at time.Time) activity.Activity {
	return activity.Activity{CheckedAt: at, Last: last, CoveredSince: covered,
		Sources: []activity.SourceStatus{{Name: "nginx", Status: activity.StatusOK}, {Name: "bastion", Status: activity.StatusOK}}}
}

func settings() Settings {
	s := DefaultSettings()
	return s
}

func policy() Policy {
	return Policy{Timeout: 7 * 24 * time.Hour, MaxAlerts: 3, Action: ActionPause, From: `kustos.io/inactivity-timeout="7d" on Namespace/lab`, Owner: "ana@example.org"}
}

// base is a target created four weeks ago, last used at t0, sources covering since t0−2w.
func base(now time.Time) Snapshot {
	return Snapshot{Now: now, Target: target, UID: "u1", Created: t0.Add(-28 * 24 * time.Hour), Running: true,
		Policy: policy(), Activity: known(t0, t0.Add(-14*24*time.Hour), now), Settings: settings()}
}

func TestDecide(t *testing.T) {
	day := 24 * time.Hour
	idle := t0.Add(7 * day) // t0 + timeout
	cases := []struct {
		name string
		snap func() Snapshot
		// want
		next        Next
		at          time.Time
		alert       bool
		change      lifecycle.EditOp
		alertsSent  int
		requeue     time.Duration
		lastAct     time.Time
		paused      bool
		probeFailed int
		unknown     bool
		// withdraw: the pause proposed earlier is withdrawn.
		withdraw bool
	}{
		{name: "opted out: nothing", snap: func() Snapshot { s := base(idle); s.Policy = Policy{Ignored: true}; return s }, next: NextNone, withdraw: true},
		{name: "timeout never: nothing, no requeue", snap: func() Snapshot { s := base(idle); s.Policy.Timeout = 0; return s }, next: NextNone, lastAct: t0, withdraw: true},
		{name: "a source unavailable: unknown, never inactive", snap: func() Snapshot {
			s := base(idle.Add(30 * day))
			s.Activity.Sources[1] = activity.SourceStatus{Name: "bastion", Status: activity.StatusUnavailable, Detail: "no samples"}
			return s
		}, next: NextUnknown, requeue: 5 * time.Minute, lastAct: t0, unknown: true},
		{name: "Prometheus unreachable: unknown", snap: func() Snapshot {
			s := base(idle.Add(30 * day))
			s.Activity.Sources[0].Status = activity.StatusError
			return s
		}, next: NextUnknown, requeue: 5 * time.Minute, lastAct: t0, unknown: true},
		{name: "no check yet (Kustos just started): unknown, nothing reported yet", snap: func() Snapshot {
			s := base(idle)
			s.Activity = activity.Activity{}
			return s
		}, next: NextUnknown, requeue: 5 * time.Minute},
		{name: "a source unavailable, target used recently: unknown, nothing reported", snap: func() Snapshot {
			s := base(t0.Add(time.Hour))
			s.Activity.Sources[0].Status = activity.StatusUnavailable
			return s
		}, next: NextUnknown, requeue: 5 * time.Minute, lastAct: t0},
		{name: "active recently: first alert at last activity + timeout, look again at the check interval", snap: func() Snapshot { return base(t0.Add(time.Hour)) },
			next: NextAlert, at: idle, requeue: 5 * time.Minute, lastAct: t0, withdraw: true},
		{name: "just before the timeout: look again one minute after it", snap: func() Snapshot { return base(idle.Add(-2 * time.Minute)) },
			next: NextAlert, at: idle, requeue: 3 * time.Minute, lastAct: t0, withdraw: true},
		{name: "activity from the Lease counts when Prometheus no longer has it", snap: func() Snapshot {
			s := base(idle.Add(time.Hour))
			s.Activity.Last = time.Time{}
			s.State.LastActivity = t0.Add(2 * day)
			return s
		}, next: NextAlert, at: idle.Add(2 * day), requeue: 5 * time.Minute, lastAct: t0.Add(2 * day), withdraw: true},
		{name: "used again a minute later: counted, but not worth a Lease write (less than 5% of the timeout)", snap: func() Snapshot {
			s := base(t0.Add(2 * time.Hour))
			s.Activity.Last = t0.Add(time.Minute)
			s.State.LastActivity = t0
			return s
		}, next: NextAlert, at: idle.Add(time.Minute), requeue: 5 * time.Minute, lastAct: t0, withdraw: true},
		{name: "used again two hours later: recorded in the Lease", snap: func() Snapshot {
			s := base(t0.Add(3 * time.Hour))
			s.Activity.Last = t0.Add(2 * time.Hour)
			s.State.LastActivity = t0
			return s
		}, next: NextAlert, at: idle.Add(2 * time.Hour), requeue: 5 * time.Minute, lastAct: t0.Add(2 * time.Hour), withdraw: true},
		{name: "never used, created recently: idle since creation", snap: func() Snapshot {
			s := base(idle)
			s.Activity.Last = time.Time{}
			s.Created = t0.Add(3 * day)
			return s
		}, next: NextAlert, at: t0.Add(10 * day), requeue: 5 * time.Minute, withdraw: true},
		{name: "never used, sources cover only since yesterday: idle since then", snap: func() Snapshot {
			s := base(idle)
			s.Activity.Last = time.Time{}
			s.Activity.CoveredSince = idle.Add(-day)
			return s
		}, next: NextAlert, at: idle.Add(6 * day), requeue: 5 * time.Minute, withdraw: true},
		{name: "idle for the timeout: first alert now", snap: func() Snapshot { return base(idle) },
			next: NextAlert, at: idle.Add(day), alert: true, alertsSent: 1, requeue: 5 * time.Minute, lastAct: t0},
		{name: "second alert not due yet", snap: func() Snapshot {
			s := base(idle.Add(12 * time.Hour))
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 1, LastAlertAt: idle}
			return s
		}, next: NextAlert, at: idle.Add(day), alertsSent: 1, requeue: 5 * time.Minute, lastAct: t0},
		{name: "second alert due", snap: func() Snapshot {
			s := base(idle.Add(day))
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 1, LastAlertAt: idle}
			return s
		}, next: NextAlert, at: idle.Add(2 * day), alert: true, alertsSent: 2, requeue: 5 * time.Minute, lastAct: t0},
		{name: "last alert: the pause follows one interval later", snap: func() Snapshot {
			s := base(idle.Add(2 * day))
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 2, LastAlertAt: idle.Add(day)}
			return s
		}, next: NextPause, at: idle.Add(3 * day), alert: true, alertsSent: 3, requeue: 5 * time.Minute, lastAct: t0},
		{name: "all alerts sent, waiting out the last interval", snap: func() Snapshot {
			s := base(idle.Add(2*day + time.Hour))
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: idle.Add(2 * day)}
			return s
		}, next: NextPause, at: idle.Add(3 * day), alertsSent: 3, requeue: 5 * time.Minute, lastAct: t0},
		{name: "pause due: scale to zero", snap: func() Snapshot {
			s := base(idle.Add(3 * day))
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: idle.Add(2 * day)}
			return s
		}, next: NextPause, at: idle.Add(3 * day), change: lifecycle.EditScaleToZero, alertsSent: 3, lastAct: t0},
		{name: "delete due when not persistent", snap: func() Snapshot {
			s := base(idle.Add(3 * day))
			s.Policy.Action = ActionDelete
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: idle.Add(2 * day)}
			return s
		}, next: NextDelete, at: idle.Add(3 * day), change: lifecycle.EditDelete, alertsSent: 3, lastAct: t0},
		{name: "max alerts 0: acts as soon as idle", snap: func() Snapshot {
			s := base(idle)
			s.Policy.MaxAlerts = 0
			return s
		}, next: NextPause, at: idle, change: lifecycle.EditScaleToZero, lastAct: t0},
		{name: "decided (pull request open or declined): nothing more for this idle period", snap: func() Snapshot {
			s := base(idle.Add(10 * day))
			s.ProposalOpen = true
			s.LastDecision = idle.Add(3 * day)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: idle.Add(2 * day)}
			return s
		}, next: NextNone, alertsSent: 3, lastAct: t0},
		{name: "Kustos restarted while alerting (coverage moved, nobody used it): the alerts go on", snap: func() Snapshot {
			s := base(idle.Add(day))
			s.Activity.Last = time.Time{}
			s.Activity.CoveredSince = idle.Add(-time.Hour)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 1, LastAlertAt: idle}
			return s
		}, next: NextAlert, at: idle.Add(2 * day), alert: true, alertsSent: 2, requeue: 5 * time.Minute, lastAct: t0},
		{name: "used after two alerts: alerts reset, new timeout", snap: func() Snapshot {
			s := base(idle.Add(day + time.Hour))
			s.Activity.Last = idle.Add(day)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 2, LastAlertAt: idle.Add(day)}
			return s
		}, next: NextAlert, at: idle.Add(8 * day), requeue: 5 * time.Minute, lastAct: idle.Add(day), withdraw: true},
		{name: "paused: nothing to count", snap: func() Snapshot {
			s := base(idle.Add(20 * day))
			s.Running = false
			s.LastDecision = idle.Add(3 * day)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3}
			return s
		}, next: NextNone, alertsSent: 3, lastAct: t0, paused: true},
		{name: "restarted after the pause: alerts reset, the restart is activity", snap: func() Snapshot {
			s := base(idle.Add(20 * day))
			s.LastDecision = idle.Add(3 * day)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, Paused: true}
			return s
		}, next: NextAlert, at: idle.Add(27 * day), requeue: 5 * time.Minute, lastAct: idle.Add(20 * day), withdraw: true},
		{name: "probe failed once of three: counted", snap: func() Snapshot {
			s := base(t0.Add(time.Hour))
			s.Policy.ProbeURL = "http://exam.lab:8080/healthz"
			s.Probe = &Probe{At: s.Now, Detail: "connection refused"}
			s.State.ProbeArmed = true
			return s
		}, next: NextAlert, at: idle, requeue: 5 * time.Minute, lastAct: t0, probeFailed: 1, withdraw: true},
		{name: "probe failing before the endpoint ever answered (still booting): not counted", snap: func() Snapshot {
			s := base(t0.Add(time.Hour))
			s.Policy.ProbeURL = "http://exam.lab:8080/healthz"
			s.Probe = &Probe{At: s.Now, Detail: "connection refused"}
			s.State.ProbeFailures = 2 // a Lease written before probes were armed
			return s
		}, next: NextAlert, at: idle, requeue: 5 * time.Minute, lastAct: t0, probeFailed: 2, withdraw: true},
		{name: "probe failed the third time: terminated at once", snap: func() Snapshot {
			s := base(t0.Add(time.Hour))
			s.Policy.ProbeURL = "http://exam.lab:8080/healthz"
			s.Probe = &Probe{At: s.Now, Detail: "timeout after 5s"}
			s.State.ProbeFailures, s.State.ProbeArmed = 2, true
			return s
		}, next: NextPause, at: t0.Add(time.Hour), change: lifecycle.EditScaleToZero, lastAct: t0, probeFailed: 3},
		{name: "probe answering again: count reset", snap: func() Snapshot {
			s := base(t0.Add(time.Hour))
			s.Policy.ProbeURL = "http://exam.lab:8080/healthz"
			s.Probe = &Probe{At: s.Now, OK: true}
			s.State.ProbeFailures = 2
			return s
		}, next: NextAlert, at: idle, requeue: 5 * time.Minute, lastAct: t0, withdraw: true},
		{name: "probe target already terminated: nothing more", snap: func() Snapshot {
			s := base(t0.Add(2 * time.Hour))
			s.Policy.ProbeURL = "http://exam.lab:8080/healthz"
			s.Probe = &Probe{At: s.Now, Detail: "refused"}
			s.LastDecision = t0.Add(time.Hour)
			s.State = State{LastActivity: t0, ProbeFailures: 3, ProbeFailedAt: t0.Add(time.Hour), LastProbeAt: t0.Add(time.Hour), ProbeArmed: true}
			return s
		}, next: NextNone, lastAct: t0, probeFailed: 4},
		{name: "deleted and created again under the same name: the old one's alerts do not apply", snap: func() Snapshot {
			s := base(idle.Add(3 * day))
			s.Created = idle
			s.Activity.Last = time.Time{}
			s.LastDecision = idle.Add(-time.Hour) // the old one's, say its deletion
			s.State = State{UID: "u0", LastActivity: t0, AlertsFor: t0, AlertsSent: 2, LastAlertAt: idle.Add(2 * day)}
			return s
		}, next: NextAlert, at: idle.Add(7 * day), requeue: 5 * time.Minute, withdraw: true},
		{name: "first alert due, but the last check predates the timeout: wait for the next check", snap: func() Snapshot {
			s := base(idle.Add(time.Minute))
			s.Activity.CheckedAt = idle.Add(-time.Minute)
			return s
		}, next: NextAlert, at: idle.Add(time.Minute), requeue: 5 * time.Minute, lastAct: t0},
		{name: "pause due, but the last check predates it: wait for the next check", snap: func() Snapshot {
			s := base(idle.Add(3*day + time.Minute))
			s.Activity.CheckedAt = idle.Add(3*day - 2*time.Minute)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: idle.Add(2 * day)}
			return s
		}, next: NextPause, at: idle.Add(3 * day), alertsSent: 3, requeue: 5 * time.Minute, lastAct: t0},
		{name: "the activity the alerts began with fell out of the lookback before the Lease had it: the alerts go on", snap: func() Snapshot {
			s := base(idle.Add(30*time.Minute + day))
			s.Activity.Last = time.Time{} // forgotten by the tracker; the Lease is 30 min behind
			s.State = State{LastActivity: t0, AlertsFor: t0.Add(30 * time.Minute), AlertsSent: 1, LastAlertAt: idle.Add(30 * time.Minute)}
			return s
		}, next: NextAlert, at: idle.Add(30*time.Minute + 2*day), alert: true, alertsSent: 2, requeue: 5 * time.Minute, lastAct: t0},
		{name: "kept by its owner: no second alert while the keep lasts, the next at its end", snap: func() Snapshot {
			s := base(idle.Add(day))
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 1, LastAlertAt: idle, KeptUntil: idle.Add(4 * day), KeptAt: idle.Add(time.Hour), KeepTokens: "0123456789abcdef"}
			return s
		}, next: NextAlert, at: idle.Add(4 * day), alertsSent: 1, requeue: 5 * time.Minute, lastAct: t0, withdraw: true},
		{name: "kept, two minutes before the keep ends: look again at its end", snap: func() Snapshot {
			s := base(idle.Add(4*day - 2*time.Minute))
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 1, LastAlertAt: idle, KeptUntil: idle.Add(4 * day), KeptAt: idle.Add(time.Hour)}
			return s
		}, next: NextAlert, at: idle.Add(4 * day), alertsSent: 1, requeue: 2 * time.Minute, lastAct: t0, withdraw: true},
		{name: "kept while the pause's pull request is open: the pause is withdrawn", snap: func() Snapshot {
			s := base(idle.Add(3*day + time.Hour))
			s.ProposalOpen = true
			s.LastDecision = idle.Add(3 * day)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: idle.Add(2 * day), KeptUntil: idle.Add(10 * day), KeptAt: idle.Add(3*day + 30*time.Minute)}
			return s
		}, next: NextAlert, at: idle.Add(10 * day), alertsSent: 3, requeue: 5 * time.Minute, lastAct: t0, withdraw: true},
		{name: "kept just when the pause came due (recorded, not yet looked at): no pause", snap: func() Snapshot {
			s := base(idle.Add(3 * day))
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: idle.Add(2 * day), KeptUntil: idle.Add(6 * day), KeptAt: idle.Add(3*day - time.Minute)}
			return s
		}, next: NextAlert, at: idle.Add(6 * day), alertsSent: 3, requeue: 5 * time.Minute, lastAct: t0, withdraw: true},
		{name: "the keep ended, still idle: the alerts start over, the first at once", snap: func() Snapshot {
			s := base(idle.Add(10 * day))
			s.LastDecision = idle.Add(3 * day)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: idle.Add(2 * day), KeptUntil: idle.Add(10 * day), KeptAt: idle.Add(3 * day)}
			return s
		}, next: NextAlert, at: idle.Add(11 * day), alert: true, alertsSent: 1, requeue: 5 * time.Minute, lastAct: t0},
		{name: "the keep ended after its last alert: the pause one interval after the last new alert", snap: func() Snapshot {
			s := base(idle.Add(12 * day))
			s.LastDecision = idle.Add(3 * day)
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 2, LastAlertAt: idle.Add(11 * day), KeptAt: idle.Add(3 * day)}
			return s
		}, next: NextPause, at: idle.Add(13 * day), alert: true, alertsSent: 3, requeue: 5 * time.Minute, lastAct: t0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Every row is looked at with a pause proposed (so that a withdrawal shows), and
			// once without: nothing to withdraw then.
			if bare := Decide(tc.snap()); bare.Withdraw != "" || bare.HoldMerge != "" {
				t.Errorf("withdraw %q, hold %q without a proposal", bare.Withdraw, bare.HoldMerge)
			}
			s := tc.snap()
			s.Proposed = &lifecycle.Change{Reason: ReasonInactivityDue, Edit: lifecycle.Edit{Op: lifecycle.EditScaleToZero}}
			d := Decide(s)
			if d.Next != tc.next || !d.At.Equal(tc.at) {
				t.Errorf("next = %s at %s, want %s at %s", d.Next, d.At, tc.next, tc.at)
			}
			if d.Alert != tc.alert {
				t.Errorf("alert = %v, want %v", d.Alert, tc.alert)
			}
			if d.Unknown != tc.unknown {
				t.Errorf("unknown reported = %v, want %v", d.Unknown, tc.unknown)
			}
			switch {
			case tc.change == "" && d.Change != nil:
				t.Errorf("change = %+v, want none", d.Change.Edit)
			case tc.change != "" && d.Change == nil:
				t.Errorf("no change, want %s", tc.change)
			case tc.change != "" && d.Change.Edit.Op != tc.change:
				t.Errorf("change = %s, want %s", d.Change.Edit.Op, tc.change)
			}
			if d.State.AlertsSent != tc.alertsSent || !d.State.LastActivity.Equal(tc.lastAct) ||
				d.State.Paused != tc.paused || d.State.ProbeFailures != tc.probeFailed {
				t.Errorf("state = %+v, want alerts %d, last activity %s, paused %v, probe failures %d",
					d.State, tc.alertsSent, tc.lastAct, tc.paused, tc.probeFailed)
			}
			if d.RequeueAfter != tc.requeue {
				t.Errorf("requeue = %s, want %s", d.RequeueAfter, tc.requeue)
			}
			if (d.Withdraw != "") != tc.withdraw || (d.Withdraw != "" && d.Change != nil) {
				t.Errorf("withdraw = %q with change %v, want withdrawn %v", d.Withdraw, d.Change != nil, tc.withdraw)
			}
			// A pause proposed while a source cannot say whether the target was used is not
			// merged until one can: the merge is the pause.
			if (d.HoldMerge != "") != (tc.next == NextUnknown) {
				t.Errorf("hold merge = %q, want held %v", d.HoldMerge, tc.next == NextUnknown)
			}
			// The pipeline decides again over the state it just wrote until nothing changes:
			// a second look at the same moment must keep the state and send nothing more.
			again := s
			again.State = d.State
			if again2 := Decide(again); again2.State != d.State || again2.Alert || (again2.Change == nil) != (d.Change == nil) {
				t.Errorf("not stable: a second look gives state %+v, alert %v, change %v", again2.State, again2.Alert, again2.Change != nil)
			}
			if d.Change != nil && d.Change.Key != lifecycle.KeyFor(DetectorName, target) {
				t.Errorf("key = %s", d.Change.Key)
			}
		})
	}
}

// TestScheduleOverWeeks runs the schedule as the controller does, on a simulated clock over four
// weeks, with the state carried from one look to the next as the Lease carries it: the alerts go
// out one day apart after seven idle days, the pause one day after the last, exactly once; a
// look repeated after a crash (the state not yet written) repeats an alert with the same number,
// never a new one.
func TestScheduleOverWeeks(t *testing.T) {
	var st State
	var alerts, actAt []time.Time // when each alert went out, and when it said the pause comes
	var changes []time.Time
	decided := time.Time{}
	now := t0.Add(time.Hour)
	end := t0.Add(28 * 24 * time.Hour)
	crashed := false
	const every = 5 * time.Minute // the check loop; it looks at every target after each check
	for now.Before(end) {
		s := base(now)
		s.Activity.CheckedAt = now.Truncate(every)
		s.State = st
		s.LastDecision = decided
		d := Decide(s)
		if d.Alert && !crashed && len(alerts) == 1 {
			// A crash after the alert went out, before the Lease recorded it: the next look
			// decides the same alert again (same number, so the same Event id and mail id).
			crashed = true
			again := Decide(s)
			if !again.Alert || again.State.AlertsSent != d.State.AlertsSent {
				t.Fatalf("after a crash: alert %v #%d, want the same alert #%d", again.Alert, again.State.AlertsSent, d.State.AlertsSent)
			}
		}
		if d.Alert {
			alerts = append(alerts, now)
			actAt = append(actAt, d.ActAt)
		}
		if d.Change != nil {
			changes = append(changes, now)
			decided = now
		}
		st = d.State
		next := s.Activity.CheckedAt.Add(every)
		if d.RequeueAfter > 0 && now.Add(d.RequeueAfter).Before(next) {
			next = now.Add(d.RequeueAfter)
		}
		now = next
	}
	day := 24 * time.Hour
	idle := t0.Add(7 * day)
	want := []time.Time{idle, idle.Add(day), idle.Add(2 * day)}
	if len(alerts) != 3 {
		t.Fatalf("alerts at %v, want %v", alerts, want)
	}
	for i := range want {
		// Looked at every check interval (5m): each alert within one interval of its time.
		if d := alerts[i].Sub(want[i]); d < 0 || d > 5*time.Minute {
			t.Errorf("alert %d at %s, want %s (+≤5m)", i+1, alerts[i], want[i])
		}
	}
	if len(changes) != 1 {
		t.Fatalf("pause decided at %v, want exactly once", changes)
	}
	if d := changes[0].Sub(alerts[2].Add(day)); d < 0 || d > 5*time.Minute {
		t.Errorf("paused at %s, want one day after the last alert (%s)", changes[0], alerts[2])
	}
	for i, at := range actAt {
		// Every alert, not only the last, names when the pause comes (late by at most the
		// check intervals the later alerts waited for).
		if d := changes[0].Sub(at); d < 0 || d > 2*every {
			t.Errorf("alert %d said the pause comes at %s; it came at %s", i+1, at, changes[0])
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := State{UID: "u1", LastActivity: t0, AlertsFor: t0, AlertsSent: 2, LastAlertAt: t0.Add(time.Hour), ProbeFailedAt: t0, LastProbeAt: t0, Paused: true, ProbeFailures: 1, ProbeArmed: true,
		KeptUntil: t0.Add(72 * time.Hour), KeptAt: t0.Add(time.Minute), KeepTokens: "0123456789abcdef,fedcba9876543210", Owner: "ana@example.org"}
	got, bad := ParseState(s.Bag())
	if len(bad) > 0 || got != s {
		t.Fatalf("round trip = %+v (bad %v), want %+v", got, bad, s)
	}
	if b := (State{UID: "u1"}).Bag(); len(b) != 0 {
		t.Errorf("a UID alone is kept: %v; nothing to guard, no Lease", b)
	}
	got, bad = ParseState(map[string]string{bagAlertsSent: "many", bagLastActivity: "yesterday", bagLastAlertAt: t0.Format(time.RFC3339)})
	if len(bad) != 2 || got.AlertsSent != 0 || !got.LastActivity.IsZero() || !got.LastAlertAt.Equal(t0) {
		t.Fatalf("bad bag = %+v, %v: want the two unreadable entries dropped and named", got, bad)
	}
}

// TestUnknownMessageNamesNoDetail: the ActivityUnknown Event reaches tenants; Prometheus's error
// text (a Thanos store's address, a parse error quoting the query) stays in the operator's log.
func TestUnknownMessageNamesNoDetail(t *testing.T) {
	a := activity.Activity{CheckedAt: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), Sources: []activity.SourceStatus{
		{Name: "nginx", Status: activity.StatusError, Detail: "Prometheus answered execution: store 10.0.7.12:10901 unreachable"},
		{Name: "bastion", Status: activity.StatusOK},
	}}
	msg := UnknownMessage(a)
	if !strings.Contains(msg, "nginx: error") || strings.Contains(msg, "10.0.7.12") || strings.Contains(msg, "bastion") {
		t.Errorf("UnknownMessage = %q; want the source and its state, without the detail", msg)
	}
}

// TestKeepTokens: each keep link works once; the ids remembered are bounded, the newest kept;
// a later keep never shortens an earlier, longer one.
func TestKeepTokens(t *testing.T) {
	var s State
	s.Keep("0000000000000001", t0.Add(72*time.Hour), t0)
	if !s.KeepTokenUsed("0000000000000001") || s.KeepTokenUsed("0000000000000002") || !s.KeptUntil.Equal(t0.Add(72*time.Hour)) || !s.KeptAt.Equal(t0) {
		t.Fatalf("after one keep: %+v", s)
	}
	s.Keep("0000000000000002", t0.Add(24*time.Hour), t0.Add(time.Hour))
	if !s.KeptUntil.Equal(t0.Add(72*time.Hour)) || !s.KeptAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("a shorter keep shortened a longer one: %+v", s)
	}
	for i := range 40 {
		s.Keep(fmt.Sprintf("%016x", 100+i), t0, t0)
	}
	if s.KeepTokenUsed("0000000000000001") || !s.KeepTokenUsed(fmt.Sprintf("%016x", 139)) || len(strings.Split(s.KeepTokens, ",")) != maxKeepTokens {
		t.Errorf("remembered ids: %q", s.KeepTokens)
	}
	if len(s.Bag()[bagKeepTokens]) > 1024 {
		t.Errorf("the ids do not fit a bag value: %d bytes", len(s.Bag()[bagKeepTokens]))
	}
}
