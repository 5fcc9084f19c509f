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
	return lifecycle.ProposalState{Number: 2, State: lifecycle.ProposalOpen}, nil
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
