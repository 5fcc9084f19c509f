package inactivity

import (
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestSupersedes: the idle period is compared as an instant, whatever offset its writer used.
func TestSupersedes(t *testing.T) {
	mk := func(idle string, op lifecycle.EditOp) lifecycle.Change {
		return lifecycle.Change{Edit: lifecycle.Edit{Op: op}, Evidence: []map[string]string{{"idleSince": idle}}}
	}
	cases := []struct {
		name       string
		newer, old lifecycle.Change
		want       bool
	}{
		{"a later idle period replaces a declined pause", mk("2026-12-01T00:00:00Z", lifecycle.EditScaleToZero), mk("2026-11-01T00:00:00Z", lifecycle.EditScaleToZero), true},
		{"the same idle period does not", mk("2026-11-01T00:00:00Z", lifecycle.EditScaleToZero), mk("2026-11-01T00:00:00Z", lifecycle.EditScaleToZero), false},
		{"a different edit does", mk("2026-11-01T00:00:00Z", lifecycle.EditDelete), mk("2026-11-01T00:00:00Z", lifecycle.EditScaleToZero), true},
		{"the same idle period written at +02:00 does not", mk("2026-11-01T02:00:00+02:00", lifecycle.EditScaleToZero), mk("2026-11-01T00:00:00Z", lifecycle.EditScaleToZero), false},
		{"an earlier idle period that sorts later as text does not", mk("2026-11-01T01:30:00+02:00", lifecycle.EditScaleToZero), mk("2026-11-01T00:00:00Z", lifecycle.EditScaleToZero), false},
		{"a later idle period that sorts earlier as text does", mk("2026-10-31T23:30:00-01:00", lifecycle.EditScaleToZero), mk("2026-11-01T00:00:00Z", lifecycle.EditScaleToZero), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := Supersedes(tc.newer, tc.old); got != tc.want {
				t.Errorf("Supersedes = %v, want %v", got, tc.want)
			}
		})
	}
}
