package inactivity

import (
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
)

// TestChangeEvidence: a pause or deletion carries what a reviewer reads at a glance: each
// source's last activity (in configuration order; empty when it saw none, "?" when it did not
// answer), the check it was read at, since when every source covered the target, and the
// timeout.
func TestChangeEvidence(t *testing.T) {
	day := 24 * time.Hour
	due := t0.Add(10 * day)
	tests := []struct {
		name string
		snap func() Snapshot
		want map[string]string
	}{
		{name: "pause due: nginx saw it last, bastion never", snap: func() Snapshot {
			s := base(due)
			s.Activity.Sources[0].Last = t0
			s.State = State{LastActivity: t0, AlertsFor: t0, AlertsSent: 3, LastAlertAt: t0.Add(9 * day)}
			return s
		}, want: map[string]string{"sources": "nginx=2026-11-02T09:00:00Z,bastion=", "checkedAt": "2026-11-12T09:00:00Z",
			"coveredSince": "2026-10-19T09:00:00Z", "timeout": "7d", "idleSince": "2026-11-02T09:00:00Z"}},
		{name: "exam probe failed while a source did not answer: that source is unknown", snap: func() Snapshot {
			s := base(due)
			s.Policy.ProbeURL = "http://exam.lab.svc"
			s.Probe = &Probe{At: due, OK: false, Detail: "timeout"}
			s.State = State{ProbeArmed: true, ProbeFailures: 2, LastProbeAt: due.Add(-time.Minute)}
			s.Activity.Sources[1] = activity.SourceStatus{Name: "bastion", Status: activity.StatusError, Detail: "refused"}
			s.Activity.Sources[0].Last = t0.Add(time.Hour)
			return s
		}, want: map[string]string{"sources": "nginx=2026-11-02T10:00:00Z,bastion=?", "checkedAt": "2026-11-12T09:00:00Z", "timeout": "7d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.snap())
			if d.Change == nil || len(d.Change.Evidence) != 1 {
				t.Fatalf("change = %+v, want one with one evidence entry", d.Change)
			}
			ev := d.Change.Evidence[0]
			for k, v := range tc.want {
				if ev[k] != v {
					t.Errorf("evidence[%q] = %q, want %q", k, ev[k], v)
				}
			}
		})
	}
}
