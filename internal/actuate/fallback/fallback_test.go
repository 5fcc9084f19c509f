package fallback

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// scripted answers Apply with out and err and counts its calls.
type scripted struct {
	out   lifecycle.Outcome
	err   error
	calls int
}

func (s *scripted) Apply(context.Context, lifecycle.Change, time.Time, lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	s.calls++
	return s.out, s.err
}

// TestActuator: a Change goes to the pull request actuator; it is carried out directly only
// when Git holds no manifest of its target (not found, or a removal already in the base).
func TestActuator(t *testing.T) {
	proposed := lifecycle.Outcome{Proposal: &lifecycle.Proposal{Number: 7}}
	inBase := lifecycle.Outcome{Proposal: &lifecycle.Proposal{AlreadyInBase: true}}
	for _, tc := range []struct {
		name       string
		op         lifecycle.EditOp
		primary    scripted
		fallback   bool // the direct actuator was used
		wantNumber int
		wantErr    error
	}{
		{name: "proposed", op: lifecycle.EditDelete, primary: scripted{out: proposed}, wantNumber: 7},
		{name: "not in Git", op: lifecycle.EditDelete, primary: scripted{err: fmt.Errorf("index: %w", lifecycle.ErrSourceNotFound)}, fallback: true},
		{name: "removal already in the base", op: lifecycle.EditDelete, primary: scripted{out: inBase}, fallback: true},
		{name: "edit already in the base", op: lifecycle.EditScaleToZero, primary: scripted{out: inBase}},
		{name: "ambiguous source", op: lifecycle.EditDelete, primary: scripted{err: lifecycle.ErrSourceAmbiguous}, wantErr: lifecycle.ErrSourceAmbiguous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary, direct := tc.primary, &scripted{out: lifecycle.Outcome{Applied: true}}
			a := Actuator{Primary: &primary, Fallback: direct}
			out, err := a.Apply(context.Background(), lifecycle.Change{Edit: lifecycle.Edit{Op: tc.op}}, time.Now(), lifecycle.ProposeOptions{})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Apply: %v, want %v", err, tc.wantErr)
			}
			if got := direct.calls == 1; got != tc.fallback {
				t.Errorf("carried out directly: %v, want %v", got, tc.fallback)
			}
			if tc.fallback != out.Applied || (tc.wantNumber != 0 && (out.Proposal == nil || out.Proposal.Number != tc.wantNumber)) {
				t.Errorf("outcome %+v", out)
			}
		})
	}
}
