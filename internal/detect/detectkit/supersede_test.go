package detectkit

import (
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func TestLaterEvidence(t *testing.T) {
	change := func(op lifecycle.EditOp, at string) lifecycle.Change {
		c := lifecycle.Change{Edit: lifecycle.Edit{Op: op}}
		if at != "-" {
			c.Evidence = []map[string]string{{"deadline": at}}
		}
		return c
	}
	supersedes := LaterEvidence("deadline")
	for _, tc := range []struct {
		name       string
		newer, old lifecycle.Change
		want       bool
	}{
		{"a later cycle", change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), change(lifecycle.EditDelete, "2026-11-28T10:00:00Z"), true},
		{"the same cycle again", change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), false},
		{"an earlier cycle", change(lifecycle.EditDelete, "2026-11-28T10:00:00Z"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), false},
		// As text "2026-11-29T11:00:00+01:00" sorts after "2026-11-29T10:00:00Z"; it is the same instant.
		{"one instant in another offset", change(lifecycle.EditDelete, "2026-11-29T11:00:00+01:00"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), false},
		// As text "2026-11-29T10:30:00+01:00" sorts after "2026-11-29T10:00:00Z"; it is half an hour earlier.
		{"an earlier instant in another offset", change(lifecycle.EditDelete, "2026-11-29T10:30:00+01:00"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), false},
		{"a later instant in a negative offset", change(lifecycle.EditDelete, "2026-11-29T06:00:00-05:00"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), true},
		// As text "…10:00:00.5Z" sorts before "…10:00:00Z" ('.' < 'Z'); it is half a second later.
		{"a later instant with fractions", change(lifecycle.EditDelete, "2026-11-29T10:00:00.5Z"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), true},
		{"another edit", change(lifecycle.EditScaleToZero, "2026-11-29T10:00:00Z"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), true},
		{"no time in the newer", change(lifecycle.EditDelete, "-"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), true},
		{"an unreadable newer", change(lifecycle.EditDelete, "tomorrow"), change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), true},
		{"no time in the older", change(lifecycle.EditDelete, "2026-11-29T10:00:00Z"), change(lifecycle.EditDelete, "-"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := supersedes(tc.newer, tc.old); got != tc.want {
				t.Errorf("supersedes = %v, want %v", got, tc.want)
			}
		})
	}
}
