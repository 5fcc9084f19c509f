package pr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// State is where a key's PR stands: lifecycle's ProposalStatus.
type State = lifecycle.ProposalStatus

const (
	// StateNone: no PR is known for the key (none open, none tracked).
	StateNone = lifecycle.ProposalNone
	// StateOpen: the PR is open.
	StateOpen = lifecycle.ProposalOpen
	// StateMerged: the PR was merged; the change waits for the GitOps tool to sync.
	StateMerged = lifecycle.ProposalMerged
	// StateClosedByHuman: the PR was closed without merging, by people or by Kustos itself (a
	// withdrawal, a gone namespace's PR): the name is the state's, not a verdict. The pipeline
	// takes it for people's decline, and starts the cooldown, unless the detector withdraws the
	// change and the head is Kustos's own.
	StateClosedByHuman = lifecycle.ProposalClosedByHuman
)

// PRState is what Status read: lifecycle's ProposalState (Mergeable is nil while GitHub
// computes it; MergeableState is GitHub's mergeable_state; Unchanged: GitHub answered 304).
type PRState = lifecycle.ProposalState

// Errors of MaybeMerge. Each also matches its lifecycle kind under errors.Is.
var (
	// ErrDirty: the PR conflicts with its base; Propose rebuilds the branch on the new base.
	ErrDirty = lifecycle.NewError("pr: pull request conflicts with its base", lifecycle.ErrProposalDirty)
	// ErrClosed: the PR was closed without merging (by a human).
	ErrClosed = lifecycle.NewError("pr: pull request closed without merging", lifecycle.ErrProposalClosed)
	// ErrNoPR: no PR is known for the key.
	ErrNoPR = lifecycle.NewError("pr: no pull request for the key", lifecycle.ErrNoProposal)
)

// number finds the key's PR: the one tracked (Propose, Track) or the open one from its branch.
func (w *Writer) number(ctx context.Context, key lifecycle.Key) (int, error) {
	if n, ok := w.tracked(key); ok {
		return n, nil
	}
	c, err := changeForKey(key)
	if err != nil {
		return 0, err
	}
	pr, err := w.gh.FindOpenPR(ctx, w.Branch(c))
	if err != nil {
		return 0, fmt.Errorf("pr: %s: %w", key, err)
	}
	if pr == nil {
		return 0, nil
	}
	if err := checkMarker(pr, key); err != nil {
		return 0, err
	}
	w.Track(key, pr.GetNumber())
	return pr.GetNumber(), nil
}

// changeForKey rebuilds the branch-naming parts of a Change from its key
// ("<detector>/<namespace>/<name>").
func changeForKey(key lifecycle.Key) (lifecycle.Change, error) {
	parts := strings.SplitN(string(key), "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return lifecycle.Change{}, fmt.Errorf("%w: key %q is not detector/namespace/name", ErrInvalidChange, key)
	}
	return lifecycle.Change{Key: key, Detector: parts[0], Target: lifecycle.Target{Namespace: parts[1], Name: parts[2]}}, nil
}

// Status reads the key's PR with a conditional request (a 304 costs no rate limit).
func (w *Writer) Status(ctx context.Context, key lifecycle.Key) (PRState, error) {
	n, err := w.number(ctx, key)
	if err != nil || n == 0 {
		return PRState{State: StateNone}, err
	}
	pr, unchanged, err := w.gh.GetPR(ctx, n)
	if err != nil {
		return PRState{State: StateNone, Number: n}, fmt.Errorf("pr: %s: %w", key, err)
	}
	return stateOf(pr, unchanged), nil
}

func stateOf(pr *gh.PullRequest, unchanged bool) PRState {
	st := PRState{
		Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Title: pr.GetTitle(), Mergeable: pr.Mergeable,
		MergeableState: pr.GetMergeableState(), HeadSHA: pr.GetHead().GetSHA(), Unchanged: unchanged,
		OpenedAt: pr.GetCreatedAt().Time,
	}
	switch {
	case pr.GetMerged() || pr.MergedAt != nil:
		st.State = StateMerged
	case pr.GetState() == "closed":
		st.State = StateClosedByHuman
	default:
		st.State = StateOpen
	}
	return st
}

// MaybeMerge squash-merges the key's PR when allowed and GitHub reports it open, mergeable and
// clean, pinned to the head SHA it just read, so a head that moved in between is never merged.
// It returns merged=true when the PR is merged (now or before: retries are safe), a retryAfter
// when it should be asked again (GitHub still computing, checks pending, head moved), ErrDirty
// when the branch conflicts (call Propose to rebuild it), ErrClosed when a human closed it and
// ErrNoPR when there is none.
func (w *Writer) MaybeMerge(ctx context.Context, key lifecycle.Key, allowed bool) (merged bool, retryAfter time.Duration, err error) {
	st, err := w.Status(ctx, key)
	if err != nil {
		return false, w.cfg.RecheckAfter, err
	}
	return w.MergeIfReady(ctx, key, st, allowed)
}

// MergeIfReady is MaybeMerge for a caller that has just read the PR's state with Status, so the
// PR is not read twice in one poll.
func (w *Writer) MergeIfReady(ctx context.Context, key lifecycle.Key, st PRState, allowed bool) (merged bool, retryAfter time.Duration, err error) {
	switch st.State {
	case StateNone:
		return false, 0, fmt.Errorf("%w: %s", ErrNoPR, key)
	case StateMerged:
		return true, 0, nil
	case StateClosedByHuman:
		return false, 0, fmt.Errorf("%w: %s #%d", ErrClosed, key, st.Number)
	}
	if !allowed {
		return false, 0, nil
	}
	if st.Mergeable == nil {
		return false, w.cfg.RecheckAfter, nil // GitHub is computing: ask again soon
	}
	if !*st.Mergeable || st.MergeableState == "dirty" {
		return false, 0, fmt.Errorf("%w: %s #%d", ErrDirty, key, st.Number)
	}
	if st.MergeableState != "clean" {
		return false, w.cfg.PendingAfter, nil // blocked, unstable, behind, draft, unknown, has_hooks
	}
	title := fmt.Sprintf("%s (#%d)", st.Title, st.Number)
	_, err = w.gh.MergePR(ctx, st.Number, st.HeadSHA, true, title, "Kustos-Key: "+string(key))
	switch {
	case err == nil:
		return true, 0, nil
	case errors.Is(err, github.ErrConflict):
		return false, w.cfg.RecheckAfter, nil // the head moved: re-check the new head
	case errors.Is(err, github.ErrNotMergeable):
		return false, w.cfg.PendingAfter, nil // state changed between read and merge
	}
	return false, w.cfg.RecheckAfter, fmt.Errorf("pr: %s: %w", key, err)
}
