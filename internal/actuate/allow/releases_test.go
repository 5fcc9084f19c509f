package allow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestReleaseRemovalNotAllowed: uninstalling a helm release is a deletion like any other, an
// opt-in per detector (helm.sh/releases). Refused, the uninstaller is never called; any other
// Change passes on unchecked (the actuator behind checks its own).
func TestReleaseRemovalNotAllowed(t *testing.T) {
	release := lifecycle.ReleaseTarget("team-a", "preview")
	tests := []struct {
		name       string
		policy     string // --allow
		detector   string
		target     lifecycle.Target
		wantPassed bool
	}{
		{name: "no policy: nothing is uninstalled", detector: "ephemeral", target: release},
		{name: "no policy: expiry's neither", detector: "expiry", target: release},
		{name: "another detector's releases", policy: "expiry:delete:helm.sh/releases", detector: "ephemeral", target: release},
		{name: "other deletions of the detector", policy: "ephemeral:delete:secrets,ephemeral:delete:configmaps", detector: "ephemeral", target: release},
		{name: "the Cleaner's, spelt cleaner", policy: "cleaner:delete:helm.sh/releases", detector: "ephemeral", target: release, wantPassed: true},
		{name: "expiry's", policy: "expiry:delete:helm.sh/releases", detector: "expiry", target: release, wantPassed: true},
		{name: "not a release: passed on", detector: "ephemeral", target: lifecycle.Target{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "cm"}, wantPassed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := &recorder{}
			a := allow.ReleaseRemovals{Allow: mustParse(t, tc.policy), Next: next}
			c := lifecycle.Change{Key: lifecycle.KeyFor(tc.detector, tc.target), Detector: tc.detector, Target: tc.target, Edit: lifecycle.Edit{Op: lifecycle.EditDelete}}
			out, err := a.Apply(t.Context(), c, time.Now(), lifecycle.ProposeOptions{})
			if tc.wantPassed {
				if err != nil || !out.Applied || next.calls != 1 {
					t.Fatalf("Apply = %+v, %v (%d calls on); want it passed on", out, err, next.calls)
				}
				return
			}
			if !errors.Is(err, lifecycle.ErrDeleteNotAllowed) || out.Applied || next.calls != 0 {
				t.Fatalf("Apply = %+v, %v (%d calls on); want ErrDeleteNotAllowed and no uninstall", out, err, next.calls)
			}
			// The entry to type spells the detector as people do: cleaner, never ephemeral.
			want := fmt.Sprintf("--allow=%s:delete:helm.sh/releases", lifecycle.DetectorLabel(tc.detector))
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "team-a/preview") || strings.Contains(err.Error(), "ephemeral") {
				t.Errorf("error %q does not name the release and %q (or says ephemeral)", err, want)
			}
		})
	}
}

// recorder is the actuator behind ReleaseRemovals: it counts what reaches it.
type recorder struct{ calls int }

func (r *recorder) Apply(context.Context, lifecycle.Change, time.Time, lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	r.calls++
	return lifecycle.Outcome{Applied: true}, nil
}
