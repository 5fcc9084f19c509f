package state

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestListOwned: a Lease whose bag records an owner is labelled with the owner's id (never the
// owner itself), so one owner's Leases are listed by selector; the label follows the bag on
// every write, and a Lease whose label was edited to another owner's id is not listed as theirs.
func TestListOwned(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	put := func(key lifecycle.Key, owner string) Record {
		t.Helper()
		rec, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		bag := map[string]string{"deadline": "2026-12-01T00:00:00Z"}
		if owner != "" {
			bag[lifecycle.BagOwner] = owner
		}
		rec, err = s.SetBag(ctx, rec, bag)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	keys := func(recs []Record) []lifecycle.Key {
		var out []lifecycle.Key
		for _, r := range recs {
			out = append(out, r.Key)
		}
		return out
	}
	ana, bo := "ana@example.com", "bo"
	put("expiry/Deployment.apps/team-b/web", ana)
	put("expiry/Deployment.apps/team-a/web", ana)
	put("expiry/Namespace/preview-1", bo)
	put("expiry/Deployment.apps/team-a/api", "")

	var l coordinationv1.Lease
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: LeaseName("expiry/Deployment.apps/team-a/web")}, &l); err != nil {
		t.Fatal(err)
	}
	if got := l.Labels[LabelOwner]; got != lifecycle.OwnerID(ana) || len(got) != 32 {
		t.Errorf("owner label %q, want %q", got, lifecycle.OwnerID(ana))
	}

	for _, tc := range []struct {
		owner string
		want  []lifecycle.Key
	}{
		{ana, []lifecycle.Key{"expiry/Deployment.apps/team-a/web", "expiry/Deployment.apps/team-b/web"}},
		{bo, []lifecycle.Key{"expiry/Namespace/preview-1"}},
		{"nobody", nil},
	} {
		got, err := s.ListOwned(ctx, lifecycle.OwnerID(tc.owner))
		if err != nil {
			t.Fatal(err)
		}
		if k := keys(got); len(k) != len(tc.want) || (len(k) > 0 && (k[0] != tc.want[0] || k[len(k)-1] != tc.want[len(tc.want)-1])) {
			t.Errorf("%s: %v, want %v", tc.owner, k, tc.want)
		}
	}

	// The owner changes: the label follows; the bag loses its owner: the label goes.
	put("expiry/Deployment.apps/team-b/web", bo)
	put("expiry/Namespace/preview-1", "")
	if got, _ := s.ListOwned(ctx, lifecycle.OwnerID(bo)); len(got) != 1 || got[0].Key != "expiry/Deployment.apps/team-b/web" {
		t.Errorf("bo after the changes: %v", keys(got))
	}

	// A hand edit puts ana's id on bo's Lease: the bag says bo, so it is not ana's.
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: LeaseName("expiry/Deployment.apps/team-b/web")}, &l); err != nil {
		t.Fatal(err)
	}
	l.Labels[LabelOwner] = lifecycle.OwnerID(ana)
	if err := k8s.Update(ctx, &l); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListOwned(ctx, lifecycle.OwnerID(ana)); len(got) != 1 || got[0].Key != "expiry/Deployment.apps/team-a/web" {
		t.Errorf("ana after a hand edit: %v", keys(got))
	}
	if _, err := s.ListOwned(ctx, "not a label value!"); err == nil {
		t.Error("a malformed owner id was listed")
	}
}
