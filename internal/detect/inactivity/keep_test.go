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
	links := func(k lifecycle.Key, idleSince, alertAt, expires time.Time) ([]lifecycle.NoticeLink, error) {
		if k != key {
			t.Errorf("links for %s, want %s", k, key)
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
	addKeepLinks(&out, func(lifecycle.Key, time.Time, time.Time, time.Time) ([]lifecycle.NoticeLink, error) {
		return nil, errors.New("no randomness")
	}, key, d, logr.Discard())
	if len(out.Findings) != 1 || len(out.Findings[0].Notice.Links) != 0 {
		t.Errorf("an alert whose links failed: %+v", out.Findings)
	}
}
