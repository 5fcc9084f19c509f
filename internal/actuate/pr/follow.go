package pr

import (
	"context"
	"fmt"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// ClosedSince reports a pull request from c's branch that was closed without merging after
// since: a human closed the PR of a decision before the Lease named it (a crash between opening
// the PR and locking the Lease). Without it, a replay would open a second PR on the same branch.
func (w *Writer) ClosedSince(ctx context.Context, c lifecycle.Change, since time.Time) (int, bool, error) {
	prs, err := w.gh.FindPRs(ctx, w.Branch(c), "closed")
	if err != nil {
		return 0, false, fmt.Errorf("pr: %s: %w", c.Key, err)
	}
	// GitHub's timestamps have whole seconds: a close in the same second as the decision counts.
	since = since.Truncate(time.Second)
	for _, p := range prs {
		if p.GetMerged() || p.MergedAt != nil || p.ClosedAt == nil {
			continue
		}
		if k, ok := MarkerKey(p.GetBody()); ok && k != c.Key {
			continue
		}
		if !p.ClosedAt.Before(since) {
			w.Track(c.Key, p.GetNumber())
			return p.GetNumber(), true, nil
		}
	}
	return 0, false, nil
}

// StatusOf reads the PR number (the Lease holder) of key.
func (w *Writer) StatusOf(ctx context.Context, key lifecycle.Key, number int) (PRState, error) {
	w.Track(key, number)
	return w.Status(ctx, key)
}

// OpenFor is the number of the open PR of c's branch that carries c's key (0: none): one a
// replica opened for c and crashed before its Lease named it.
func (w *Writer) OpenFor(ctx context.Context, c lifecycle.Change) (int, error) {
	return w.openOn(ctx, w.Branch(c), c.Key)
}

// OpenForGroup is the number of the open PR of group g's branch that carries g's key (0:
// none): one a replica opened for the group before its Lease could name it, or after the
// Lease was swept.
func (w *Writer) OpenForGroup(ctx context.Context, g lifecycle.Key) (int, error) {
	return w.openOn(ctx, w.GroupBranch(g), g)
}

func (w *Writer) openOn(ctx context.Context, branch string, key lifecycle.Key) (int, error) {
	p, err := w.gh.FindOpenPR(ctx, branch)
	if err != nil {
		return 0, fmt.Errorf("pr: %s: %w", key, err)
	}
	if p == nil {
		return 0, nil
	}
	if err := checkMarker(p, key); err != nil {
		return 0, nil //nolint:nilerr // another key's PR on a branch two keys share: not key's to close
	}
	return p.GetNumber(), nil
}
