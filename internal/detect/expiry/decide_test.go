package expiry

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var (
	t0       = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	deadline = t0.Add(10 * 24 * time.Hour)
	web      = lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}
)

func owned() Policy {
	return Policy{Owner: "ana@example.com", OwnerAddress: "ana@example.com", Deadline: deadline,
		From: `kustos.io/ttl="10d" on Deployment.apps/team-a/web`, Action: ActionDelete}
}

func snap(now time.Time, st State, mod ...func(*Snapshot)) Snapshot {
	s := Snapshot{Now: now, Target: web, UID: "uid-1", Policy: owned(), State: st, Settings: DefaultSettings()}
	s.Settings.CarriesOut = true
	for _, m := range mod {
		m(&s)
	}
	return s
}

// extended is a warned state extended by d at `at`.
func extended(d time.Duration, at time.Time) State {
	s := warnedAt(deadline.Add(-72 * time.Hour))
	s.ExtendedUntil, s.ExtendedAt = deadline.Add(d), at
	return s
}

// recordedAfterExtension is extended(d, at) whose new deadline's warning was recorded at
// attempt, by a look that left the old warning's sent time in place.
func recordedAfterExtension(d time.Duration, at, attempt time.Time) State {
	s := extended(d, at)
	s.WarningFor, s.WarningAttemptAt, s.WarningAttempts = deadline.Add(d), attempt, 1
	return s
}

func warnedAt(at time.Time) State {
	return State{WarningFor: deadline, WarningAttemptAt: at, WarningAttempts: 1, WarnedAt: at}
}

// TestDecide is the schedule's transition table: each row is one look at one target.
func TestDecide(t *testing.T) {
	warnAt := deadline.Add(-72 * time.Hour)
	day := 24 * time.Hour
	tests := []struct {
		name string
		snap Snapshot
		// want
		next         Next
		at           time.Time
		warn, done   bool
		op           lifecycle.EditOp // "" when no Change
		state        State
		requeueAfter time.Duration
	}{
		{name: "namespace opted out", snap: snap(deadline.Add(time.Hour), State{}, func(s *Snapshot) { s.Policy = Policy{Ignored: true} }),
			next: NextNone},
		{name: "no owner: orphan", snap: snap(deadline.Add(time.Hour), State{}, func(s *Snapshot) { s.Policy.Owner, s.Policy.OwnerAddress = "", "" }),
			next: NextOrphan},
		{name: "ttl never: nothing is scheduled, not an orphan", snap: snap(deadline.Add(time.Hour), State{}, func(s *Snapshot) { s.Policy.Deadline, s.Policy.Never = time.Time{}, true }),
			next: NextNone},
		{name: "no lifetime: orphan", snap: snap(deadline.Add(time.Hour), State{}, func(s *Snapshot) { s.Policy.Deadline = time.Time{} }),
			next: NextOrphan},
		{name: "before the warning: look again at deadline − warning-before", snap: snap(t0, State{}),
			next: NextWarn, at: warnAt, requeueAfter: warnAt.Sub(t0)},
		{name: "warning time: the attempt is recorded first, nothing sent", snap: snap(warnAt, State{}),
			next: NextWarn, at: warnAt, state: State{WarningFor: deadline, WarningAttemptAt: warnAt, WarningAttempts: 1}},
		{name: "the same look, once recorded: sent, the action a full interval later at the earliest", snap: snap(warnAt,
			State{WarningFor: deadline, WarningAttemptAt: warnAt, WarningAttempts: 1}),
			next: NextAct, at: deadline, warn: true, requeueAfter: 72 * time.Hour, state: warnedAt(warnAt)},
		{name: "crash between record and confirmation: wait a minute before sending again", snap: snap(warnAt.Add(10*time.Second),
			State{WarningFor: deadline, WarningAttemptAt: warnAt, WarningAttempts: 1}),
			next: NextWarn, at: warnAt.Add(time.Minute), requeueAfter: 50 * time.Second,
			state: State{WarningFor: deadline, WarningAttemptAt: warnAt, WarningAttempts: 1}},
		{name: "after the backoff: a second attempt is recorded", snap: snap(warnAt.Add(2*time.Minute),
			State{WarningFor: deadline, WarningAttemptAt: warnAt, WarningAttempts: 1}),
			next: NextWarn, at: warnAt.Add(2 * time.Minute),
			state: State{WarningFor: deadline, WarningAttemptAt: warnAt.Add(2 * time.Minute), WarningAttempts: 2}},
		{name: "third attempt waits twice as long", snap: snap(warnAt.Add(3*time.Minute),
			State{WarningFor: deadline, WarningAttemptAt: warnAt.Add(2 * time.Minute), WarningAttempts: 2}),
			next: NextWarn, at: warnAt.Add(4 * time.Minute), requeueAfter: time.Minute,
			state: State{WarningFor: deadline, WarningAttemptAt: warnAt.Add(2 * time.Minute), WarningAttempts: 2}},
		{name: "warned: wait for the deadline", snap: snap(warnAt.Add(time.Hour), warnedAt(warnAt)),
			next: NextAct, at: deadline, requeueAfter: deadline.Sub(warnAt.Add(time.Hour)), state: warnedAt(warnAt)},
		{name: "deadline reached: the removal is due", snap: snap(deadline, warnedAt(warnAt)),
			next: NextAct, at: deadline, op: lifecycle.EditDelete, state: warnedAt(warnAt)},
		{name: "pause: scale to zero", snap: snap(deadline, warnedAt(warnAt), func(s *Snapshot) { s.Policy.Action = ActionPause }),
			next: NextAct, at: deadline, op: lifecycle.EditScaleToZero, state: warnedAt(warnAt)},
		{name: "a TTL shorter than the interval: warned at once, acted a full interval later", snap: snap(deadline.Add(-time.Hour),
			State{WarningFor: deadline, WarningAttemptAt: deadline.Add(-time.Hour), WarningAttempts: 1}),
			next: NextAct, at: deadline.Add(23 * time.Hour), warn: true, requeueAfter: day,
			state: State{WarningFor: deadline, WarningAttemptAt: deadline.Add(-time.Hour), WarningAttempts: 1, WarnedAt: deadline.Add(-time.Hour)}},
		{name: "warned an hour before the deadline: not removed at the deadline", snap: snap(deadline, warnedAt(deadline.Add(-time.Hour))),
			next: NextAct, at: deadline.Add(23 * time.Hour), requeueAfter: 23 * time.Hour, state: warnedAt(deadline.Add(-time.Hour))},
		{name: "Kustos was down over the deadline: warn now, never remove at once", snap: snap(deadline.Add(48*time.Hour), State{}),
			next: NextWarn, at: deadline.Add(48 * time.Hour),
			state: State{WarningFor: deadline, WarningAttemptAt: deadline.Add(48 * time.Hour), WarningAttempts: 1}},
		{name: "decided (direct or merged): the owner is told once", snap: snap(deadline.Add(time.Minute), warnedAt(warnAt),
			func(s *Snapshot) { s.LastDecision = deadline }),
			next: NextNone, done: true, state: func() State { s := warnedAt(warnAt); s.NotifiedFor = deadline; return s }()},
		{name: "told already: nothing more", snap: snap(deadline.Add(time.Hour), func() State { s := warnedAt(warnAt); s.NotifiedFor = deadline; return s }(),
			func(s *Snapshot) { s.LastDecision = deadline }),
			next: NextNone, state: func() State { s := warnedAt(warnAt); s.NotifiedFor = deadline; return s }()},
		{name: "observer mode: the ExpiryDue Event was all; nobody is told it was removed", snap: snap(deadline.Add(time.Minute), warnedAt(warnAt),
			func(s *Snapshot) { s.LastDecision = deadline; s.Settings.CarriesOut = false }),
			next: NextNone, state: warnedAt(warnAt)},
		{name: "pull request open: waiting for review", snap: snap(deadline.Add(time.Minute), warnedAt(warnAt),
			func(s *Snapshot) { s.LastDecision = deadline; s.ProposalOpen = true }),
			next: NextAct, at: deadline, state: warnedAt(warnAt)},
		{name: "a human closed the pull request: the environment stays, nobody told it was removed", snap: snap(deadline.Add(time.Hour), warnedAt(warnAt),
			func(s *Snapshot) { s.LastDecision = deadline.Add(time.Minute); s.Declined = true }),
			next: NextNone, state: warnedAt(warnAt)},
		{name: "extended: the old warning does not count, a new one is due before the new deadline", snap: snap(deadline.Add(-time.Hour),
			func() State { s := warnedAt(warnAt); s.ExtendedUntil = deadline.Add(7 * day); return s }()),
			next: NextWarn, at: deadline.Add(4 * day), requeueAfter: 4*day + time.Hour,
			state: func() State { s := warnedAt(warnAt); s.ExtendedUntil = deadline.Add(7 * day); return s }()},
		{name: "extended: the new deadline is written back where the environment is declared", snap: snap(deadline.Add(-time.Hour), extended(7*day, deadline.Add(-2*time.Hour))),
			next: NextWarn, at: deadline.Add(4 * day), op: lifecycle.EditSetAnnotations, state: extended(7*day, deadline.Add(-2*time.Hour))},
		{name: "extended and written back (a decision since): the schedule of the new deadline", snap: snap(deadline.Add(-time.Hour), extended(7*day, deadline.Add(-2*time.Hour)),
			func(s *Snapshot) { s.LastDecision = deadline.Add(-90 * time.Minute) }),
			next: NextWarn, at: deadline.Add(4 * day), requeueAfter: 4*day + time.Hour, state: extended(7*day, deadline.Add(-2*time.Hour))},
		{name: "extended, the new deadline's warning recorded (the old one's sent time still there): this look sends it",
			snap: snap(deadline.Add(6*day+time.Second), recordedAfterExtension(7*day, deadline.Add(-2*time.Hour), deadline.Add(6*day+time.Second)),
				func(s *Snapshot) { s.LastDecision = deadline.Add(-90 * time.Minute) }),
			warn: true, next: NextAct, at: deadline.Add(7*day + time.Second), requeueAfter: day,
			state: func() State {
				s := recordedAfterExtension(7*day, deadline.Add(-2*time.Hour), deadline.Add(6*day+time.Second))
				s.WarnedAt = deadline.Add(6*day + time.Second)
				return s
			}()},
		{name: "extended, the new deadline's warning due: recorded as not sent yet", snap: snap(deadline.Add(6*day+time.Second), extended(7*day, deadline.Add(-2*time.Hour)),
			func(s *Snapshot) { s.LastDecision = deadline.Add(-90 * time.Minute) }),
			next: NextWarn, at: deadline.Add(6*day + time.Second),
			state: func() State {
				s := recordedAfterExtension(7*day, deadline.Add(-2*time.Hour), deadline.Add(6*day+time.Second))
				s.WarnedAt = time.Time{}
				return s
			}()},
		{name: "extended while the removal's pull request is left to people (a person pushed onto it): no write-back on its branch, the schedule of the new deadline",
			snap: snap(deadline.Add(-time.Hour), extended(7*day, deadline.Add(-2*time.Hour)), func(s *Snapshot) { s.ProposalOpen, s.LeftToPeople = true, true }),
			next: NextWarn, at: deadline.Add(4 * day), requeueAfter: 4*day + time.Hour, state: extended(7*day, deadline.Add(-2*time.Hour))},
		{name: "extended, observer mode: nothing is written back", snap: snap(deadline.Add(-time.Hour), extended(7*day, deadline.Add(-2*time.Hour)),
			func(s *Snapshot) { s.Settings.CarriesOut = false }),
			next: NextWarn, at: deadline.Add(4 * day), requeueAfter: 4*day + time.Hour, state: extended(7*day, deadline.Add(-2*time.Hour))},
		{name: "the extension is in Git: nothing to write back", snap: snap(deadline.Add(-time.Hour), extended(7*day, deadline.Add(-2*time.Hour)),
			func(s *Snapshot) { s.Policy.Deadline = deadline.Add(7 * day) }),
			next: NextWarn, at: deadline.Add(4 * day), requeueAfter: 4*day + time.Hour, state: extended(7*day, deadline.Add(-2*time.Hour))},
		{name: "extended, lifetime kept in Kustos's state (a VM): nothing to write back, the schedule of the new deadline",
			snap: snap(deadline.Add(-time.Hour), extended(7*day, deadline.Add(-2*time.Hour)), func(s *Snapshot) { s.Policy.KeptInState = true }),
			next: NextWarn, at: deadline.Add(4 * day), requeueAfter: 4*day + time.Hour, state: extended(7*day, deadline.Add(-2*time.Hour))},
		{name: "quarantine (a VM): a Delete the vSphere actuator carries out as power off, rename, move",
			snap: snap(deadline, warnedAt(warnAt), func(s *Snapshot) { s.Policy.Action = ActionQuarantine }),
			next: NextAct, at: deadline, op: lifecycle.EditDelete, state: warnedAt(warnAt)},
		{name: "an extension shorter than Git's deadline changes nothing", snap: snap(deadline, func() State { s := warnedAt(warnAt); s.ExtendedUntil = deadline.Add(-day); return s }()),
			next: NextAct, at: deadline, op: lifecycle.EditDelete, state: func() State { s := warnedAt(warnAt); s.ExtendedUntil = deadline.Add(-day); return s }()},
		{name: "a new deadline after a decision starts a new cycle", snap: snap(deadline.Add(time.Hour), warnedAt(warnAt),
			func(s *Snapshot) { s.LastDecision = deadline; s.Policy.Deadline = deadline.Add(10 * day) }),
			next: NextWarn, at: deadline.Add(7 * day), requeueAfter: 7*day - time.Hour, state: warnedAt(warnAt)},
		{name: "mail configured, owner without an address: never warned, never removed", snap: snap(deadline.Add(time.Hour), State{},
			func(s *Snapshot) { s.Settings.Mail = true; s.Policy.Owner, s.Policy.OwnerAddress = "ana", "" }),
			next: NextWarn, at: deadline.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.snap)
			if d.Next != tt.next || !d.At.Equal(tt.at) {
				t.Errorf("next = %s at %v, want %s at %v", d.Next, d.At, tt.next, tt.at)
			}
			if d.Warn != tt.warn || d.SendDone != tt.done {
				t.Errorf("warn, done = %v, %v; want %v, %v", d.Warn, d.SendDone, tt.warn, tt.done)
			}
			var op lifecycle.EditOp
			if d.Change != nil {
				op = d.Change.Edit.Op
			}
			if op != tt.op {
				t.Errorf("change = %q, want %q", op, tt.op)
			}
			// The owner and deadline the page lists: TestDecideRecordsOwner.
			got := d.State
			got.Owner, got.Deadline = "", time.Time{}
			if !reflect.DeepEqual(got, tt.state) {
				t.Errorf("state = %+v\nwant    %+v", got, tt.state)
			}
			if d.RequeueAfter != tt.requeueAfter {
				t.Errorf("requeueAfter = %v, want %v", d.RequeueAfter, tt.requeueAfter)
			}
		})
	}
}

// TestDecideRecordsOwner: every scheduled target's state names its owner and its effective
// deadline (an extension included), which the owner's page lists; an orphan, an opted-out or a
// never-expiring target records nothing, and one that was scheduled loses what it recorded.
func TestDecideRecordsOwner(t *testing.T) {
	day := 24 * time.Hour
	long := strings.Repeat("ä", 400) // 800 bytes
	for _, tc := range []struct {
		name      string
		snap      Snapshot
		owner     string
		deadline  time.Time
		label     string
		roundTrip bool
	}{
		{name: "long before the warning", snap: snap(t0, State{}), owner: "ana@example.com", deadline: deadline, roundTrip: true},
		{name: "warned", snap: snap(deadline.Add(-time.Hour), warnedAt(deadline.Add(-72*time.Hour))), owner: "ana@example.com", deadline: deadline},
		{name: "extended: the extension's deadline", snap: snap(deadline.Add(-time.Hour), extended(7*day, deadline.Add(-2*time.Hour))),
			owner: "ana@example.com", deadline: deadline.Add(7 * day)},
		{name: "another owner now", snap: snap(t0, State{Owner: "ana@example.com", Deadline: deadline}, func(s *Snapshot) { s.Policy.Owner = "bo" }),
			owner: "bo", deadline: deadline},
		{name: "a very long owner is cut to 512 bytes of valid UTF-8", snap: snap(t0, State{}, func(s *Snapshot) { s.Policy.Owner = long }),
			owner: long[:512], deadline: deadline, roundTrip: true},
		{name: "a VM: its label too, for the owner's page", snap: snap(t0, State{}, func(s *Snapshot) { s.Policy.Label = `VM "ana-lab" (/DC0/vm/labs, datacenter DC0)` }),
			owner: "ana@example.com", deadline: deadline, label: `VM "ana-lab" (/DC0/vm/labs, datacenter DC0)`, roundTrip: true},
		{name: "orphan: nothing", snap: snap(t0, State{}, func(s *Snapshot) { s.Policy.Owner = "" })},
		{name: "opted out: nothing", snap: snap(t0, State{}, func(s *Snapshot) { s.Policy.Ignored = true })},
		{name: "never: nothing", snap: snap(t0, State{}, func(s *Snapshot) { s.Policy.Deadline, s.Policy.Never = time.Time{}, true })},
		// A target that was scheduled and no longer is: what the Lease recorded goes, so the
		// former owner's page no longer lists it; what was sent stays remembered.
		{name: "was scheduled, now an orphan: cleared", snap: snap(t0, recorded(), func(s *Snapshot) { s.Policy.Owner = "" })},
		{name: "was scheduled, lost its lifetime: cleared", snap: snap(t0, recorded(), func(s *Snapshot) { s.Policy.Deadline = time.Time{} })},
		{name: "was scheduled, now opted out: cleared", snap: snap(t0, recorded(), func(s *Snapshot) { s.Policy.Ignored = true })},
		{name: "was scheduled, now never: cleared", snap: snap(t0, recorded(), func(s *Snapshot) { s.Policy.Deadline, s.Policy.Never = time.Time{}, true })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Decide(tc.snap).State
			if !tc.snap.State.WarnedAt.Equal(st.WarnedAt) || !tc.snap.State.WarningFor.Equal(st.WarningFor) {
				t.Errorf("the warning's record changed: %+v", st)
			}
			if st.Owner != tc.owner || !st.Deadline.Equal(tc.deadline) || st.Label != tc.label {
				t.Errorf("owner, deadline, label = %q, %v, %q; want %q, %v, %q", st.Owner, st.Deadline, st.Label, tc.owner, tc.deadline, tc.label)
			}
			if !tc.roundTrip {
				return
			}
			back, bad := ParseState(st.Bag())
			if len(bad) > 0 || back.Owner != tc.owner || !back.Deadline.Equal(tc.deadline) || back.Label != tc.label || st.Bag()[lifecycle.BagOwner] != tc.owner {
				t.Errorf("round trip: %+v, %v", back, bad)
			}
		})
	}
}

// recorded is the state of a warned target as Decide recorded it.
func recorded() State {
	st := warnedAt(deadline.Add(-72 * time.Hour))
	st.Owner, st.Deadline, st.Label = "ana@example.com", deadline, "web"
	return st
}

func TestDecideChange(t *testing.T) {
	d := Decide(snap(deadline, warnedAt(deadline.Add(-72*time.Hour))))
	c := d.Change
	if c == nil {
		t.Fatal("no change")
	}
	if c.Key != "expiry/Deployment.apps/team-a/web" || c.Target != web || c.Reason != ReasonExpiryDue {
		t.Errorf("change = %+v", c)
	}
	if c.Edit.Preconditions == nil || c.Edit.Preconditions.UID != "uid-1" || c.Edit.Preconditions.ResourceVersion != "" {
		t.Errorf("preconditions = %+v, want the UID only", c.Edit.Preconditions)
	}
	want := `Deployment.apps/team-a/web expired at 2026-11-11T12:00:00Z (kustos.io/ttl="10d" on Deployment.apps/team-a/web); owner ana@example.com was warned at 2026-11-08T12:00:00Z; removing it`
	if c.Summary != want {
		t.Errorf("summary =\n%s\nwant\n%s", c.Summary, want)
	}
}

// TestDecideQuarantineWording: a VM is named by its label (name, folder, datacenter), not its
// UUID, in the Change, the warning and the done message, which say it is quarantined, not
// removed, and how to keep it when its lifetime lives in Kustos's state.
func TestDecideQuarantineWording(t *testing.T) {
	vm := lifecycle.Target{Group: "vsphere.kustos.io", Version: "v1", Kind: "VirtualMachine", Name: "4213c3c0-0a3b-4b2d-9b5c-1a2b3c4d5e6f"}
	p := owned()
	p.Action, p.Label, p.KeptInState, p.From = ActionQuarantine, `VM "build-42" (/DC0/vm/ci, datacenter DC0)`, true, `EC_TTL="10d" in the notes of VM "build-42"`
	p.Facts = map[string]string{"vm": "build-42", "path": "/DC0/vm/ci/build-42", "datacenter": "DC0"}
	d := Decide(snap(deadline, warnedAt(deadline.Add(-72*time.Hour)), func(s *Snapshot) { s.Target, s.Policy, s.UID = vm, p, "" }))
	c := d.Change
	if c == nil || c.Edit.Op != lifecycle.EditDelete || c.Edit.Preconditions != nil {
		t.Fatalf("change = %+v", c)
	}
	want := `VM "build-42" (/DC0/vm/ci, datacenter DC0) expired at 2026-11-11T12:00:00Z (EC_TTL="10d" in the notes of VM "build-42"); owner ana@example.com was warned at 2026-11-08T12:00:00Z; quarantining it (power off, rename, move into the quarantine folder; never destroyed)`
	if c.Summary != want {
		t.Errorf("summary =\n%s\nwant\n%s", c.Summary, want)
	}
	if ev := c.Evidence[0]; ev["vm"] != "build-42" || ev["path"] != "/DC0/vm/ci/build-42" || ev["datacenter"] != "DC0" || ev["owner"] != "ana@example.com" {
		t.Errorf("evidence = %v", ev)
	}
	warn := WarningMessage(vm, p, deadline, deadline)
	for _, w := range []string{`VM "build-42"`, "quarantined (powered off", "use an extension link"} {
		if !strings.Contains(warn, w) {
			t.Errorf("warning %q lacks %q", warn, w)
		}
	}
	if strings.Contains(warn, vm.Name) || strings.Contains(warn, "in Git") {
		t.Errorf("warning %q names the UUID or Git", warn)
	}
	if done := DoneMessage(vm, p, deadline, ActionQuarantine); !strings.Contains(done, `VM "build-42"`) || !strings.Contains(done, "was quarantined") {
		t.Errorf("done = %q", done)
	}
}

// TestSchedule runs the schedule as the pipeline does — each look's State written back, looks
// at every requeue time — for lifetimes, warning windows, intervals and outages, and checks
// what owners rely on: exactly one warning per deadline, the Change never before the deadline
// nor less than the interval after the warning was sent, then one message that it happened.
func TestSchedule(t *testing.T) {
	hour, day := time.Hour, 24*time.Hour
	tests := []struct {
		name                      string
		ttl, before, interval     time.Duration
		downFrom, downTo          time.Duration // after creation; no looks in between
		wantWarnAfter, wantActAft time.Duration // after creation
	}{
		{name: "10 days, defaults", ttl: 10 * day, before: 3 * day, interval: day, wantWarnAfter: 7 * day, wantActAft: 10 * day},
		{name: "a TTL shorter than the warning window and the interval", ttl: hour, before: 3 * day, interval: day,
			wantWarnAfter: 0, wantActAft: day},
		{name: "a warning window shorter than the interval", ttl: 10 * day, before: hour, interval: day,
			wantWarnAfter: 10*day - hour, wantActAft: 11*day - hour},
		{name: "down over the warning time and the deadline", ttl: 10 * day, before: 3 * day, interval: day,
			downFrom: 6 * day, downTo: 12 * day, wantWarnAfter: 12 * day, wantActAft: 13 * day},
		{name: "no interval", ttl: 2 * day, before: day, interval: 0, wantWarnAfter: day, wantActAft: 2 * day},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created := t0
			s := DefaultSettings()
			s.WarningBefore, s.NotificationInterval, s.CarriesOut = tt.before, tt.interval, true
			p := owned()
			p.Deadline = created.Add(tt.ttl)
			var st State
			var lastDecision time.Time
			var warns, dones []time.Time
			var acted time.Time
			now := created
			for looks := 0; looks < 100; looks++ {
				if now.After(created.Add(tt.downFrom)) && now.Before(created.Add(tt.downTo)) {
					now = created.Add(tt.downTo)
				}
				// One Run: looks again at once while the state changes, as the pipeline does.
				var d Verdict
				for i := 0; ; i++ {
					d = Decide(Snapshot{Now: now, Target: web, Policy: p, State: st, LastDecision: lastDecision, Settings: s})
					if d.Warn {
						warns = append(warns, now)
					}
					if d.SendDone {
						dones = append(dones, now)
					}
					if d.Change != nil {
						if !acted.IsZero() {
							t.Fatalf("a second Change at %v", now)
						}
						acted, lastDecision = now, now
						continue
					}
					if reflect.DeepEqual(d.State, st) || i > 5 {
						break
					}
					st = d.State
				}
				if d.RequeueAfter <= 0 {
					if d.Next == NextNone {
						break
					}
					t.Fatalf("no requeue at %v: %+v", now, d)
				}
				now = now.Add(d.RequeueAfter)
			}
			if len(warns) != 1 || len(dones) != 1 || acted.IsZero() {
				t.Fatalf("warnings %v, done messages %v, acted %v: want one each", warns, dones, acted)
			}
			if got := warns[0].Sub(created); got != tt.wantWarnAfter {
				t.Errorf("warned %v after creation, want %v", got, tt.wantWarnAfter)
			}
			if got := acted.Sub(created); got != tt.wantActAft {
				t.Errorf("acted %v after creation, want %v", got, tt.wantActAft)
			}
			if acted.Before(p.Deadline) || acted.Before(warns[0].Add(tt.interval)) {
				t.Errorf("acted at %v: before the deadline %v or the interval after the warning %v", acted, p.Deadline, warns[0])
			}
		})
	}
}

func TestStateBagRoundTrip(t *testing.T) {
	st := State{WarningFor: deadline, WarningAttemptAt: t0.Add(time.Nanosecond), WarningAttempts: 2, WarnedAt: t0.Add(time.Second),
		ExtendedUntil: deadline.Add(time.Hour), ExtendedAt: t0.Add(time.Minute), UsedTokens: []string{"a1", "b2"}, NotifiedFor: deadline,
		Kept: Kept{Owner: "ana", TTL: "1w", Since: t0}}
	got, bad := ParseState(st.Bag())
	if len(bad) != 0 || !reflect.DeepEqual(got, st) {
		t.Errorf("round trip = %+v (bad %v), want %+v", got, bad, st)
	}
	if b := (State{}).Bag(); len(b) != 0 {
		t.Errorf("empty state bag = %v", b)
	}
	got, bad = ParseState(map[string]string{bagWarnedAt: "yesterday", bagWarningAttempts: "-1", bagWarningFor: deadline.Format(time.RFC3339)})
	if len(bad) != 2 || !got.WarnedAt.IsZero() || got.WarningAttempts != 0 || !got.WarningFor.Equal(deadline) {
		t.Errorf("unreadable entries: state %+v, bad %v", got, bad)
	}
	many := State{}
	for i := 0; i < 40; i++ {
		many.UsedTokens = append(many.UsedTokens, "0123456789abcdef")
	}
	if n := len(splitTokens(many.Bag()[bagUsedTokens])); n != maxUsedTokens {
		t.Errorf("kept %d token ids, want %d", n, maxUsedTokens)
	}
}

func TestDecideWriteBack(t *testing.T) {
	d := Decide(snap(deadline.Add(-time.Hour), extended(7*24*time.Hour, deadline.Add(-2*time.Hour))))
	c := d.Change
	if c == nil || c.Edit.Op != lifecycle.EditSetAnnotations || c.Reason != ReasonExpiryExtended {
		t.Fatalf("change = %+v", c)
	}
	if got := c.Edit.Annotations[AnnotationExpiresAt]; got != "2026-11-18T12:00:00Z" || len(c.Edit.Annotations) != 1 {
		t.Errorf("annotations = %v", c.Edit.Annotations)
	}
	if _, ok := Supersedes(*c, *Decide(snap(deadline, warnedAt(deadline.Add(-72*time.Hour)))).Change); !ok {
		t.Error("a write-back does not supersede an open removal")
	}
	if _, ok := Supersedes(*c, *c); ok {
		t.Error("a write-back supersedes itself")
	}
}

// TestDecideWithdraw: a removal proposed for a deadline that no longer holds is withdrawn — the
// deadline moved later (a new expires-at merged in Git), the namespace opted out, the lifetime
// removed — and only a removal: the write-back of an extension, or a removal still due, is not.
func TestDecideWithdraw(t *testing.T) {
	removal := Decide(snap(deadline, warnedAt(deadline.Add(-72*time.Hour)))).Change
	if removal == nil {
		t.Fatal("no removal due at the deadline")
	}
	writeBack := Decide(snap(deadline.Add(-time.Hour), extended(7*24*time.Hour, deadline.Add(-2*time.Hour)))).Change
	later := func(s *Snapshot) { s.Policy.Deadline = deadline.Add(7 * 24 * time.Hour) }
	for _, tc := range []struct {
		name     string
		snap     Snapshot
		proposed *lifecycle.Change
		want     string // a part of Withdraw; "" when none
	}{
		{"the removal is still due: followed", snap(deadline.Add(time.Minute), warnedAt(deadline.Add(-72*time.Hour)), func(s *Snapshot) {
			s.ProposalOpen, s.LastDecision = true, deadline
		}), removal, ""},
		{"a later expires-at: withdrawn", snap(deadline.Add(time.Minute), warnedAt(deadline.Add(-72*time.Hour)), later, func(s *Snapshot) {
			s.ProposalOpen, s.LastDecision = true, deadline
		}), removal, "its deadline is now 2026-11-18T12:00:00Z"},
		{"opted out: withdrawn", snap(deadline.Add(time.Minute), State{}, func(s *Snapshot) { s.Policy = Policy{Ignored: true} }), removal, "opted out of expiry"},
		{"ttl now never: withdrawn", snap(deadline.Add(time.Minute), State{}, func(s *Snapshot) { s.Policy.Deadline, s.Policy.Never = time.Time{}, true }), removal, "now never expires"},
		{"lifetime removed: withdrawn", snap(deadline.Add(time.Minute), State{}, func(s *Snapshot) { s.Policy.Deadline = time.Time{} }), removal, "no longer has an owner and a lifetime"},
		{"an extension's write-back is never withdrawn", snap(deadline.Add(time.Minute), extended(7*24*time.Hour, deadline.Add(-2*time.Hour)), func(s *Snapshot) {
			s.ProposalOpen, s.LastDecision = true, deadline
		}), writeBack, ""},
		{"nothing proposed: nothing to withdraw", snap(deadline.Add(time.Minute), State{}, later), nil, ""},
		// The pipeline asks before it records the close as a decline: a person's close must
		// stay a decline, not become Kustos's withdrawal ("not due before 0001-01-01").
		{"its PR closed by a person, not yet recorded: not withdrawn", snap(deadline.Add(time.Minute), warnedAt(deadline.Add(-72*time.Hour)), func(s *Snapshot) {
			s.ProposalOpen, s.LastDecision = false, deadline
		}), removal, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.snap
			s.Proposed = tc.proposed
			d := Decide(s)
			if (tc.want == "") != (d.Withdraw == "") || !strings.Contains(d.Withdraw, tc.want) || (d.Withdraw != "" && d.Change != nil) {
				t.Errorf("withdraw %q (change %v), want %q", d.Withdraw, d.Change != nil, tc.want)
			}
		})
	}
}
