package state

import (
	"context"
	"errors"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

func TestGroupRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	key := lifecycle.GroupKey("expiry", "namespace", "team-a")
	g, err := s.GetGroup(ctx, key)
	if err != nil || g.Exists() || len(g.Members) != 0 {
		t.Fatalf("a group never seen: %+v, %v", g, err)
	}
	member := lifecycle.KeyFor("expiry", lifecycle.Target{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "web"})
	g.Members[member] = GroupMember{Hash: "abc", Joined: t0, Urgency: lifecycle.UrgencyRemoval}
	g.Gathering = t0
	if g, err = s.PutGroup(ctx, g, "team-a"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetGroup(ctx, key)
	if err != nil || !got.Gathering.Equal(t0) || got.Members[member].Hash != "abc" || got.Members[member].Urgency != lifecycle.UrgencyRemoval {
		t.Fatalf("read back %+v, %v", got, err)
	}
	var l coordinationv1.Lease
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: "group-expiry-namespace-team-a"}, &l); err != nil {
		t.Fatal(err)
	}
	if l.Labels[LabelRole] != RoleGroup || l.Labels[LabelTargetNamespace] != "team-a" || l.Annotations[AnnotationKey] != "" {
		t.Errorf("group lease labels %v annotations %v: the namespace sweep must find it, the target sweeps must not", l.Labels, l.Annotations)
	}

	got.Holder, got.Head, got.URL, got.Gathering = "pr-3", "abc123", "https://example/pr/3", got.Gathering.AddDate(0, 0, 0)
	if _, err := s.PutGroup(ctx, got, "team-a"); err != nil {
		t.Fatal(err)
	}
	// A stale record cannot win.
	if _, err := s.PutGroup(ctx, g, "team-a"); !apierrors.IsConflict(errors.Unwrap(err)) && !apierrors.IsConflict(err) {
		t.Fatalf("a stale write: %v, want a conflict", err)
	}
	if all, err := s.Groups(ctx); err != nil || len(all) != 1 || all[0].Holder != "pr-3" || all[0].URL != "https://example/pr/3" {
		t.Fatalf("Groups: %+v, %v", all, err)
	}

	// A hand edit of the members: the error names the Lease, the record is usable without them.
	l = coordinationv1.Lease{}
	_ = k8s.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: "group-expiry-namespace-team-a"}, &l)
	l.Annotations[AnnotationMembers] = "{not json"
	if err := k8s.Update(ctx, &l); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetGroup(ctx, key)
	if !errors.Is(err, ErrGroupLease) || !strings.Contains(err.Error(), AnnotationMembers) || !got.Exists() || len(got.Members) != 0 || got.Holder != "pr-3" {
		t.Fatalf("unreadable members: %+v, %v", got, err)
	}
	if err := s.DeleteGroup(ctx, got); err != nil {
		t.Fatal(err)
	}
	if g, err := s.GetGroup(ctx, key); err != nil || g.Exists() {
		t.Fatalf("after delete: %+v, %v", g, err)
	}
}

func TestGroupLeaseName(t *testing.T) {
	long := lifecycle.GroupKey("expiry", "owner", strings.Repeat("a", 300)+"@Example.com")
	n := GroupLeaseName(long)
	if len(n) > 253 || n == GroupLeaseName(lifecycle.GroupKey("expiry", "owner", strings.Repeat("a", 300)+"@example.org")) {
		t.Errorf("long owner: %q", n)
	}
	if n := GroupLeaseName(lifecycle.GroupKey("expiry", "owner", "Ana@Example.com")); strings.ContainsAny(n, "@A") {
		t.Errorf("not a valid name: %q", n)
	}
}

func TestSweepGroups(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	member := func(name string) lifecycle.Key {
		return lifecycle.KeyFor("expiry", lifecycle.Target{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: name})
	}
	put := func(key lifecycle.Key, holder string, members ...lifecycle.Key) {
		g, _ := s.GetGroup(ctx, key)
		g.Holder = holder
		for _, m := range members {
			g.Members[m] = GroupMember{Hash: "h", In: holder != ""}
		}
		if _, err := s.PutGroup(ctx, g, ""); err != nil {
			t.Fatal(err)
		}
	}
	// open: its member is locked on its pull request. waiting: a member has a pending decision.
	// done: its pull request was merged and its member unlocked.
	open, waiting, done := lifecycle.GroupKey("expiry", "owner", "ana"), lifecycle.GroupKey("expiry", "owner", "bob"), lifecycle.GroupKey("expiry", "owner", "cleo")
	put(open, "pr-1", member("a"))
	put(waiting, "", member("b"))
	put(done, "pr-3", member("c"))
	rec, _ := s.Get(ctx, member("a"))
	if _, err := s.Lock(ctx, rec, "pr-1", "{}", "sha"); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Get(ctx, member("b"))
	if _, err := s.MarkModified(ctx, rec, t0, `{"key":"x"}`); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Get(ctx, member("c"))
	if rec, err := s.Lock(ctx, rec, "pr-3", "{}", "sha"); err != nil {
		t.Fatal(err)
	} else if _, err := s.Unlock(ctx, rec, t0, ""); err != nil {
		t.Fatal(err)
	}
	n, err := s.SweepGroups(ctx)
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v; want the done group only", n, err)
	}
	for key, want := range map[lifecycle.Key]bool{open: true, waiting: true, done: false} {
		if g, _ := s.GetGroup(ctx, key); g.Exists() != want {
			t.Errorf("group %s kept: %v, want %v", key, g.Exists(), want)
		}
	}
}
