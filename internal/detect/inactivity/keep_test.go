package inactivity

import (
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestAlertKeepLinks: an alert carries the keep links minted for its idle period and its own
// time, working a grace past the pause it announces; no alert, no links; links that cannot be
// made leave the alert without them.
func TestAlertKeepLinks(t *testing.T) {
	day := 24 * time.Hour
	now := t0.Add(7 * day)
	key := lifecycle.KeyFor(DetectorName, target)
	var got []time.Time
	links := func(k lifecycle.Key, owner string, idleSince, alertAt, expires time.Time) ([]lifecycle.NoticeLink, error) {
		if k != key || owner != policy().Owner {
			t.Errorf("links for %s of %q, want %s of %q", k, owner, key, policy().Owner)
		}
		got = []time.Time{idleSince, alertAt, expires}
		return []lifecycle.NoticeLink{{Label: "Keep for 1d", URL: "https://kustos.example/keep?token=x"}}, nil
	}
	d := Decide(base(now))
	if !d.Alert {
		t.Fatal("no alert")
	}
	out := Findings(key, target, policy(), base(now).Activity, d, now)
	addKeepLinks(&out, links, key, d, logr.Discard())
	if len(out.Findings) != 1 || out.Findings[0].Notice == nil || len(out.Findings[0].Notice.Links) != 1 {
		t.Fatalf("findings = %+v, want the alert with one link", out.Findings)
	}
	if want := []time.Time{t0, now, now.Add(3*day + KeepLinkGrace)}; len(got) != 3 || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) || !got[2].Equal(want[2]) {
		t.Errorf("minted for (idle since, alert, expires) %v, want %v", got, want)
	}

	quiet := Decide(base(t0.Add(time.Hour)))
	out = Findings(key, target, policy(), base(now).Activity, quiet, now)
	got = nil
	addKeepLinks(&out, links, key, quiet, logr.Discard())
	if got != nil {
		t.Error("links minted without an alert")
	}

	out = Findings(key, target, policy(), base(now).Activity, d, now)
	addKeepLinks(&out, func(lifecycle.Key, string, time.Time, time.Time, time.Time) ([]lifecycle.NoticeLink, error) {
		return nil, errors.New("no randomness")
	}, key, d, logr.Discard())
	if len(out.Findings) != 1 || len(out.Findings[0].Notice.Links) != 0 {
		t.Errorf("an alert whose links failed: %+v", out.Findings)
	}
}

// TestOwnerRecordedWhileAlerted: the state names the owner from the first alert (a keep link
// acts only for them, and a new owner's alerts replace the old owner's), and no longer once the
// target is used again.
func TestOwnerRecordedWhileAlerted(t *testing.T) {
	day := 24 * time.Hour
	idle := t0.Add(7 * day)
	if d := Decide(base(t0.Add(time.Hour))); d.State.Owner != "" {
		t.Errorf("not alerted, owner recorded: %q", d.State.Owner)
	}
	d := Decide(base(idle))
	if !d.Alert || d.State.Owner != "ana@example.org" {
		t.Fatalf("alerted: alert %v, owner %q", d.Alert, d.State.Owner)
	}
	s := base(idle.Add(time.Hour))
	s.State, s.Policy.Owner = d.State, "bo@example.org"
	if d2 := Decide(s); d2.State.Owner != "bo@example.org" {
		t.Errorf("owner changed: recorded %q", d2.State.Owner)
	}
	s = base(idle.Add(2 * time.Hour))
	s.State, s.Activity.Last = d.State, idle.Add(time.Hour)
	if d3 := Decide(s); d3.State.Owner != "" || d3.State.AlertsSent != 0 {
		t.Errorf("used again: owner %q, alerts %d", d3.State.Owner, d3.State.AlertsSent)
	}
}

// TestOwnerPageState: what the owner's page needs from the Lease. An alerted target's state
// records the alerts it will get in all (max-alerts, for "alert 1 of 3"), written only while
// alerted; a target its owner kept or resumed with a link stays named (and so on the owner's
// page, as running again) after it is used again, while the used link ids are remembered; one
// nobody acted on does not.
func TestOwnerPageState(t *testing.T) {
	day := 24 * time.Hour
	idle := t0.Add(7 * day)
	d := Decide(base(idle))
	if !d.Alert || d.State.MaxAlerts != 3 {
		t.Fatalf("alerted: alert %v, max alerts %d, want 3", d.Alert, d.State.MaxAlerts)
	}
	if got := d.State.Bag()["max-alerts"]; got != "3" {
		t.Errorf("bag max-alerts %q, want 3", got)
	}
	if back, bad := ParseState(d.State.Bag()); back.MaxAlerts != 3 || len(bad) != 0 {
		t.Errorf("parsed back: max alerts %d, bad %v", back.MaxAlerts, bad)
	}
	for _, tc := range []struct {
		name      string
		edit      func(*State)
		wantOwner string
	}{
		{name: "used again, no link used", edit: func(*State) {}, wantOwner: ""},
		{name: "used again after a keep", edit: func(s *State) { s.KeepTokens = "0123456789abcdef" }, wantOwner: "ana@example.org"},
		{name: "running again after a resume", edit: func(s *State) { s.ResumeTokens = "0123456789abcdef" }, wantOwner: "ana@example.org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base(idle.Add(2 * time.Hour))
			s.State, s.Activity.Last = d.State, idle.Add(time.Hour)
			tc.edit(&s.State)
			got := Decide(s)
			if got.State.Owner != tc.wantOwner || got.State.AlertsSent != 0 {
				t.Errorf("owner %q (want %q), alerts %d", got.State.Owner, tc.wantOwner, got.State.AlertsSent)
			}
			if _, ok := got.State.Bag()["max-alerts"]; ok {
				t.Errorf("max-alerts written while not alerted: %v", got.State.Bag())
			}
		})
	}
}

// TestAlertAfterKeepIsNew: once a keep has ended the alerts start over from the first, about
// the same idle time. The first alert after the keep must not carry the id of the first alert
// before it: the Event and the notice are deduplicated by id, so the owner would get no alert
// before the last one (seen on the real API server: alert 2 of 2, then the pause). Two looks at
// the same alert keep one id.
func TestAlertAfterKeepIsNew(t *testing.T) {
	day := 24 * time.Hour
	now := t0.Add(7 * day)
	key := lifecycle.KeyFor(DetectorName, target)
	before := Decide(base(now))
	if !before.Alert || before.State.AlertsSent != 1 {
		t.Fatalf("no first alert: %+v", before)
	}
	s := base(now.Add(2 * day))
	s.State = before.State
	s.State.Keep("k1", now.Add(day), now.Add(time.Hour))
	after := Decide(s)
	if !after.Alert || after.State.AlertsSent != 1 {
		t.Fatalf("the keep ended, and no first alert again: %+v", after)
	}
	id := func(d Verdict) string {
		out := Findings(key, target, policy(), s.Activity, d, s.Now)
		if len(out.Findings) != 1 || out.Findings[0].Notice == nil || out.Findings[0].Notice.ID != out.Findings[0].ID {
			t.Fatalf("findings = %+v, want one alert whose notice has the Event's id", out.Findings)
		}
		return out.Findings[0].ID
	}
	if a, b := id(before), id(after); a == b {
		t.Errorf("the first alert after the keep has the id of the one before it: %s", a)
	}
	if a, b := id(after), id(after); a != b {
		t.Errorf("one alert, two ids: %s, %s", a, b)
	}
}
