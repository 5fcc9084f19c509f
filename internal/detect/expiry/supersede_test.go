package expiry

import (
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestSupersedes: the deadline is compared as an instant, whatever offset its writer used.
func TestSupersedes(t *testing.T) {
	mk := func(deadline string, op lifecycle.EditOp) lifecycle.Change {
		return lifecycle.Change{Edit: lifecycle.Edit{Op: op}, Evidence: []map[string]string{{"deadline": deadline}}}
	}
	for _, tc := range []struct {
		name       string
		newer, old lifecycle.Change
		want       bool
	}{
		{"a later deadline replaces a declined removal", mk("2026-12-01T00:00:00Z", lifecycle.EditDelete), mk("2026-11-01T00:00:00Z", lifecycle.EditDelete), true},
		{"the same deadline does not", mk("2026-11-01T00:00:00Z", lifecycle.EditDelete), mk("2026-11-01T00:00:00Z", lifecycle.EditDelete), false},
		{"a pause instead of a removal does", mk("2026-11-01T00:00:00Z", lifecycle.EditScaleToZero), mk("2026-11-01T00:00:00Z", lifecycle.EditDelete), true},
		{"the same deadline written at +01:00 does not", mk("2026-11-01T01:00:00+01:00", lifecycle.EditDelete), mk("2026-11-01T00:00:00Z", lifecycle.EditDelete), false},
		{"an earlier deadline that sorts later as text does not", mk("2026-11-01T00:30:00+01:00", lifecycle.EditDelete), mk("2026-11-01T00:00:00Z", lifecycle.EditDelete), false},
		{"a later deadline that sorts earlier as text does", mk("2026-10-31T23:30:00-05:00", lifecycle.EditDelete), mk("2026-11-01T00:00:00Z", lifecycle.EditDelete), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := Supersedes(tc.newer, tc.old); got != tc.want {
				t.Errorf("Supersedes = %v, want %v", got, tc.want)
			}
		})
	}
}
