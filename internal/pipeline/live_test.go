package pipeline

import (
	"context"
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline/pipelinetest"
	"github.com/kustos-dev/kustos/internal/state"
)

// staleStore is a replica's cache a moment behind the API server: Get answers the record it
// was given, whatever was written since.
type staleStore struct {
	*pipelinetest.ReplicaStore
	rec state.Record
}

func (s staleStore) Get(context.Context, lifecycle.Key) (state.Record, error) { return s.rec, nil }

// TestMergeReadsTheLiveLease: a clean PR with auto-merge, and an owner's keep that another
// replica wrote into the Lease, not yet in this replica's cache (after an API server restart
// its watch comes back only after a backoff). The merge is decided on the Lease as the API
// server has it: the keep withdraws the PR instead. Without the live read (LiveRecord nil), the
// stale cache merges it — what the soak saw.
func TestMergeReadsTheLiveLease(t *testing.T) {
	for _, live := range []bool{true, false} {
		name := map[bool]string{true: "read live: withdrawn", false: "cache only: merged (the soak's finding)"}[live]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t, "pr")
			w.wants = cpu(testKey, 12)
			if _, err := w.run(w.replica("a")); err != nil {
				t.Fatal(err)
			}
			stale := w.rec()
			if stale.Holder != "pr-1" {
				t.Fatalf("record %+v, want PR #1 open", stale)
			}
			// The owner keeps it through replica b's extension server.
			if _, err := w.store.As("b").SetBag(ctx, stale, map[string]string{"kept": "until tomorrow"}); err != nil {
				t.Fatal(err)
			}
			w.auto = true
			p := w.replica("a")
			p.Store = staleStore{ReplicaStore: w.store.As("a"), rec: stale}
			if live {
				p.LiveRecord = func(_ context.Context, key lifecycle.Key) (state.Record, error) { return w.store.Record(key), nil }
			}
			if _, err := w.run(p); err != nil {
				t.Fatal(err)
			}
			if live && (w.forge.merges != 0 || len(w.forge.withdrawn) != 1) {
				t.Errorf("merges %d, withdrawn %q; want the keep to withdraw the PR, nothing merged", w.forge.merges, w.forge.withdrawn)
			}
			if !live && w.forge.merges != 1 {
				t.Errorf("merges %d; the stale cache alone merges (this row shows why the live read is there)", w.forge.merges)
			}
		})
	}
}
