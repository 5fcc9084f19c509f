package app

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestActuatorErrorsMatchLifecycle: the detector matches the actuators' errors by lifecycle's
// kinds only, so every error it acts on must match its kind (also when wrapped).
func TestActuatorErrorsMatchLifecycle(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind error
	}{
		{index.ErrSourceNotFound, lifecycle.ErrSourceNotFound},
		{&index.NotFoundError{}, lifecycle.ErrSourceNotFound},
		{index.ErrSourceAmbiguous, lifecycle.ErrSourceAmbiguous},
		{&index.AmbiguousError{}, lifecycle.ErrSourceAmbiguous},
		{index.ErrSourceNotEditable, lifecycle.ErrSourceNotEditable},
		{&index.NotEditableError{}, lifecycle.ErrSourceNotEditable},
		{yamledit.ErrConflict, lifecycle.ErrSourceConflict},
		{&yamledit.ConflictError{}, lifecycle.ErrSourceConflict},
		// Edits the YAML editor refuses are findings, not faults to retry forever.
		{yamledit.ErrUnsupported, lifecycle.ErrSourceNotEditable},
		{yamledit.ErrVerify, lifecycle.ErrSourceNotEditable},
		{yamledit.ErrDocNotFound, lifecycle.ErrSourceNotEditable},
		{pr.ErrInvalidChange, lifecycle.ErrInvalidChange},
		{pr.ErrBranchTaken, lifecycle.ErrProposalBlocked},
		{pr.ErrDirty, lifecycle.ErrProposalDirty},
		{pr.ErrClosed, lifecycle.ErrProposalClosed},
		{pr.ErrNoPR, lifecycle.ErrNoProposal},
	} {
		wrapped := fmt.Errorf("proposing: %w", tc.err)
		if !errors.Is(wrapped, tc.kind) {
			t.Errorf("errors.Is(%v, %v) = false", wrapped, tc.kind)
		}
	}
	if errors.Is(pr.ErrClosed, lifecycle.ErrProposalDirty) || errors.Is(yamledit.ErrConflict, lifecycle.ErrSourceNotFound) {
		t.Error("an actuator error matches a kind it is not")
	}
	if got := yamledit.ErrConflict.Error(); got != "yamledit: conflict" {
		t.Errorf("yamledit.ErrConflict reads %q", got)
	}
}

// TestRetryAtMatchesGitHub: lifecycle.RetryAt finds what github.RetryAt finds.
func TestRetryAtMatchesGitHub(t *testing.T) {
	reset := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, err := range []error{
		nil,
		errors.New("plain"),
		&github.APIError{Op: "get pull request", Reset: reset},
		fmt.Errorf("merging: %w", &github.APIError{Op: "merge", Reset: reset}),
		&github.RateLimitError{Reset: reset},
		fmt.Errorf("wrapped: %w", &github.RateLimitError{Reset: reset, Secondary: true}),
		errors.Join(errors.New("other"), &github.RateLimitError{Reset: reset}),
	} {
		wantAt, wantOK := github.RetryAt(err)
		gotAt, gotOK := lifecycle.RetryAt(err)
		if gotOK != wantOK || !gotAt.Equal(wantAt) {
			t.Errorf("RetryAt(%T) = %v, %v; github.RetryAt says %v, %v", err, gotAt, gotOK, wantAt, wantOK)
		}
	}
}
