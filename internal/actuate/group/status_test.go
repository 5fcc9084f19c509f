package group

import (
	"context"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// slowStatus is a Writer whose StatusOf answers "open" only when released, counting its calls.
type slowStatus struct {
	Writer
	calls   int
	started chan struct{}
	release chan struct{}
}

func (w *slowStatus) StatusOf(context.Context, lifecycle.Key, int) (lifecycle.ProposalState, error) {
	w.calls++
	if w.started != nil {
		w.started <- struct{}{}
		<-w.release
	}
	yes := true
	return lifecycle.ProposalState{Number: 2, State: lifecycle.ProposalOpen, Mergeable: &yes, MergeableState: "clean"}, nil
}

// TestStatusReadAcrossAMerge: a status read that began before Kustos merged the pull request
// (forget) must not be cached, or a member joining a moment later finds the merged pull
// request "open" and commits to its branch (seen in the demo: a member's removal pushed to a
// group's branch after its merge, never reaching the base).
func TestStatusReadAcrossAMerge(t *testing.T) {
	w := &slowStatus{started: make(chan struct{}), release: make(chan struct{})}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	a := &Actuator{Writer: w, Now: func() time.Time { return now }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := a.Status(context.Background(), "expiry/g", 2); err != nil {
			t.Error(err)
		}
	}()
	<-w.started
	a.forget(2) // the merge, while the read is under way
	close(w.release)
	<-done
	w.started = nil
	if _, err := a.Status(context.Background(), "expiry/g", 2); err != nil {
		t.Fatal(err)
	}
	if w.calls != 2 {
		t.Errorf("StatusOf called %d times, want 2: the answer read across the merge was cached", w.calls)
	}
	// Without a merge in between, one read serves the others for the TTL.
	if _, err := a.Status(context.Background(), "expiry/g", 2); err != nil {
		t.Fatal(err)
	}
	if w.calls != 2 {
		t.Errorf("StatusOf called %d times, want 2 (cached for the TTL)", w.calls)
	}
}

// fixedStatus is a Writer whose StatusOf answers st, counting its calls.
type fixedStatus struct {
	Writer
	st    lifecycle.ProposalState
	calls int
}

func (w *fixedStatus) StatusOf(context.Context, lifecycle.Key, int) (lifecycle.ProposalState, error) {
	w.calls++
	return w.st, nil
}

// TestStatusCachedOnlyOnceKnown: a status read serves other members for the TTL only when it
// says something that lasts. While GitHub computes mergeability (mergeable null, state
// "unknown") the next read is the one that learns the answer, so it must reach GitHub: cached,
// every open pull request waited a TTL after each merge moved the base, and a queue of
// auto-merges went at one per TTL.
func TestStatusCachedOnlyOnceKnown(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name  string
		st    lifecycle.ProposalState
		reads int
	}{
		{"computing", lifecycle.ProposalState{State: lifecycle.ProposalOpen, MergeableState: "unknown"}, 2},
		{"clean", lifecycle.ProposalState{State: lifecycle.ProposalOpen, Mergeable: &yes, MergeableState: "clean"}, 1},
		{"blocked", lifecycle.ProposalState{State: lifecycle.ProposalOpen, Mergeable: &yes, MergeableState: "blocked"}, 1},
		{"merged", lifecycle.ProposalState{State: lifecycle.ProposalMerged, MergeableState: "unknown"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.st.Number = 2
			w := &fixedStatus{st: tc.st}
			now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
			a := &Actuator{Writer: w, Now: func() time.Time { return now }}
			for range 2 {
				if _, err := a.Status(context.Background(), "expiry/g", 2); err != nil {
					t.Fatal(err)
				}
			}
			if w.calls != tc.reads {
				t.Errorf("StatusOf called %d times for two reads within the TTL, want %d", w.calls, tc.reads)
			}
		})
	}
}
