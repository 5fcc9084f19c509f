package lifecycle

import "testing"

func TestLaterEvidence(t *testing.T) {
	change := func(op EditOp, at string) Change {
		c := Change{Edit: Edit{Op: op}}
		if at != "-" {
			c.Evidence = []map[string]string{{"deadline": at}}
		}
		return c
	}
	supersedes := LaterEvidence("deadline")
	for _, tc := range []struct {
		name       string
		newer, old Change
		want       bool
	}{
		{"a later cycle", change(EditDelete, "2026-11-29T10:00:00Z"), change(EditDelete, "2026-11-28T10:00:00Z"), true},
		{"the same cycle again", change(EditDelete, "2026-11-29T10:00:00Z"), change(EditDelete, "2026-11-29T10:00:00Z"), false},
		{"an earlier cycle", change(EditDelete, "2026-11-28T10:00:00Z"), change(EditDelete, "2026-11-29T10:00:00Z"), false},
		// As text "2026-11-29T11:00:00+01:00" sorts after "2026-11-29T10:00:00Z"; it is the same instant.
		{"one instant in another offset", change(EditDelete, "2026-11-29T11:00:00+01:00"), change(EditDelete, "2026-11-29T10:00:00Z"), false},
		// As text "…10:00:00.5Z" sorts before "…10:00:00Z" ('.' < 'Z'); it is half a second later.
		{"a later instant with fractions", change(EditDelete, "2026-11-29T10:00:00.5Z"), change(EditDelete, "2026-11-29T10:00:00Z"), true},
		{"another edit", change(EditScaleToZero, "2026-11-29T10:00:00Z"), change(EditDelete, "2026-11-29T10:00:00Z"), true},
		{"no time in the newer", change(EditDelete, "-"), change(EditDelete, "2026-11-29T10:00:00Z"), true},
		{"an unreadable newer", change(EditDelete, "tomorrow"), change(EditDelete, "2026-11-29T10:00:00Z"), true},
		{"no time in the older", change(EditDelete, "2026-11-29T10:00:00Z"), change(EditDelete, "-"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := supersedes(tc.newer, tc.old); got != tc.want {
				t.Errorf("supersedes = %v, want %v", got, tc.want)
			}
		})
	}
}
