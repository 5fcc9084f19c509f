package state

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func TestLockUnlock(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	s := &Store{Reader: c, Writer: c, Namespace: "kustos"}
	key := lifecycle.NewKey("quota", "team-a", "compute")
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

	rec, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = s.MarkModified(ctx, rec, t0, `{"key":"quota/team-a/compute"}`); err != nil {
		t.Fatal(err)
	}
	if rec, err = s.Lock(ctx, rec, "pr-7", `{"proposed":1}`, "abc123"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, key); got.Holder != "pr-7" || got.Pending != "" || got.Proposed != `{"proposed":1}` || got.Head != "abc123" || !got.LastModified.Equal(t0) {
		t.Fatalf("after Lock: %+v", got)
	}

	t1 := t0.Add(time.Hour)
	if rec, err = s.Unlock(ctx, rec, t1, `{"closed":1}`); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, key)
	if got.Holder != "" || got.Proposed != "" || got.ClosedValues != `{"closed":1}` || !got.LastModified.Equal(t1) {
		t.Fatalf("after Unlock (declined): %+v", got)
	}

	// A stale record (an older resourceVersion) cannot win.
	stale := rec
	if _, err := s.Lock(ctx, got, "pr-8", "{}", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlock(ctx, stale, t1, ""); err == nil {
		t.Fatal("Unlock with a stale resourceVersion succeeded")
	}
	if got, _ := s.Get(ctx, key); got.Holder != "pr-8" || got.ClosedValues != `{"closed":1}` || got.Head != "" {
		t.Fatalf("Lock keeps the declined values (only a merge forgets them) and sets the holder: %+v", got)
	}
}
