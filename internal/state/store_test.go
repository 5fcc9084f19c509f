package state

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestLockUnlock(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	key := lifecycle.NewKey("quota", "team-a", "compute")

	rec, err := s.Get(ctx, key)
	if err != nil || rec.Exists() {
		t.Fatalf("a key never seen: %+v, %v", rec, err)
	}
	if rec, err = s.MarkModified(ctx, rec, t0, `{"key":"quota/team-a/compute"}`); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, key); got.PendingBy != "replica-a" || !got.PendingSince.Equal(t0) || got.LeaseName() != "state-team-a-compute" {
		t.Fatalf("pending decision without its replica: %+v", got)
	}
	if rec, err = s.Lock(ctx, rec, "pr-7", `{"proposed":1}`, "abc123"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, key); got.Holder != "pr-7" || got.Pending != "" || got.PendingBy != "" || got.Proposed != `{"proposed":1}` ||
		got.Head != "abc123" || !got.LastModified.Equal(t0) {
		t.Fatalf("after Lock: %+v", got)
	}

	t1 := t0.Add(time.Hour)
	if rec, err = s.Unlock(ctx, rec, t1, `{"closed":1}`); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, key)
	if got.Holder != "" || got.Proposed != "" || got.Head != "" || got.ClosedValues != `{"closed":1}` || !got.LastModified.Equal(t1) {
		t.Fatalf("after Unlock (declined): %+v", got)
	}

	// A stale record (an older resourceVersion) cannot win.
	stale := rec
	if _, err := s.Lock(ctx, got, "pr-8", "{}", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlock(ctx, stale, t1, ""); !apierrors.IsConflict(err) {
		t.Fatalf("Unlock with a stale resourceVersion: %v, want a conflict", err)
	}
	if got, _ := s.Get(ctx, key); got.Holder != "pr-8" || got.ClosedValues != `{"closed":1}` {
		t.Fatalf("Lock keeps the declined values (only a merge forgets them): %+v", got)
	}
}

// TestKeysThatShareALeaseName: team-a/compute and team/a-compute both map to
// state-team-a-compute; the second key gets a hashed name and neither reads the other's state.
func TestKeysThatShareALeaseName(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	k1, k2 := lifecycle.NewKey("quota", "team-a", "compute"), lifecycle.NewKey("quota", "team", "a-compute")
	if LeaseName(k1) != LeaseName(k2) {
		t.Fatal("the keys do not collide; the test proves nothing")
	}
	r1, _ := s.Get(ctx, k1)
	if _, err := s.MarkModified(ctx, r1, t0, ""); err != nil {
		t.Fatal(err)
	}
	r2, err := s.Get(ctx, k2)
	if err != nil || r2.Exists() || r2.LeaseName() != AltLeaseName(k2) {
		t.Fatalf("second key: %+v, %v; want a fresh record under %s", r2, err, AltLeaseName(k2))
	}
	if _, err := s.MarkModified(ctx, r2, t0.Add(time.Hour), ""); err != nil {
		t.Fatal(err)
	}
	g1, _ := s.Get(ctx, k1)
	g2, _ := s.Get(ctx, k2)
	if !g1.LastModified.Equal(t0) || !g2.LastModified.Equal(t0.Add(time.Hour)) || g1.LeaseName() == g2.LeaseName() {
		t.Fatalf("records mixed up: %+v / %+v", g1, g2)
	}

	// The second key holds a PR and a pending decision; the first key's Lease is swept (its
	// target gone). The second key's state must still be found where it lives.
	g2, err = s.Lock(ctx, g2, "pr-9", `{"proposed":1}`, "abc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkModified(ctx, g2, t0.Add(2*time.Hour), `{"key":"quota/team/a-compute"}`); err != nil {
		t.Fatal(err)
	}
	n, err := s.SweepGone(ctx, func(_ context.Context, r Record) (bool, error) { return r.Key == k1, nil })
	if err != nil || n != 1 {
		t.Fatalf("SweepGone = %d, %v; want the first key's Lease deleted", n, err)
	}
	g2, err = s.Get(ctx, k2)
	if err != nil || g2.LeaseName() != AltLeaseName(k2) || g2.Holder != "pr-9" || g2.Pending == "" ||
		!g2.LastModified.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("after the shared name was freed, the second key reads %+v, %v; want its own Lease %s with its lock and pending decision",
			g2, err, AltLeaseName(k2))
	}
	// The first key, seen again, starts afresh under the free primary name.
	if g1, err = s.Get(ctx, k1); err != nil || g1.Exists() || g1.LeaseName() != LeaseName(k1) {
		t.Fatalf("first key after its sweep: %+v, %v", g1, err)
	}
}

// TestLegacyLeases: a legacy Lease (state-<namespace>-<quota>, no kustos.io/key) is adopted when
// exactly one target fits its name, and reported (with a usable record elsewhere) when several do.
func TestLegacyLeases(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	key := lifecycle.NewKey("quota", "team-a", "compute")
	legacy := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: s.Namespace, Name: "state-team-a-compute",
		Labels:      map[string]string{LabelManagedBy: ManagedByValue},
		Annotations: map[string]string{AnnotationLastModified: t0.Format(time.RFC3339Nano)},
	}}
	if err := k8s.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}

	t.Run("fits two targets: reported, left alone", func(t *testing.T) {
		s.LegacyOwners = func(context.Context, string) (int, error) { return 2, nil }
		rec, err := s.Get(ctx, key)
		if !errors.Is(err, ErrUnclaimedLease) || !strings.Contains(err.Error(), "state-team-a-compute") {
			t.Fatalf("error %v, want ErrUnclaimedLease naming the Lease", err)
		}
		if rec.LeaseName() != AltLeaseName(key) || !rec.LastModified.IsZero() {
			t.Fatalf("record %+v, want a fresh one under %s", rec, AltLeaseName(key))
		}
	})
	t.Run("fits one target: adopted, and the next write names the key", func(t *testing.T) {
		s.LegacyOwners = func(context.Context, string) (int, error) { return 1, nil }
		rec, err := s.Get(ctx, key)
		if err != nil || !rec.Adopted || !rec.LastModified.Equal(t0) {
			t.Fatalf("record %+v, %v", rec, err)
		}
		if _, err := s.MarkModified(ctx, rec, t0.Add(time.Minute), ""); err != nil {
			t.Fatal(err)
		}
		var l coordinationv1.Lease
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(legacy), &l); err != nil || l.Annotations[AnnotationKey] != string(key) {
			t.Fatalf("adopted Lease %v, %v", l.Annotations, err)
		}
	})
}

func TestBag(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	key := lifecycle.KeyFor("inactivity", lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"})
	rec, _ := s.Get(ctx, key)
	rec, err := s.SetBag(ctx, rec, map[string]string{"alerts-sent": "2", "last-alert": t0.Format(time.RFC3339)})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, key); got.Bag["alerts-sent"] != "2" || len(got.Bag) != 2 || got.LeaseName() != "state-inactivity-deployment.apps-team-a-web" {
		t.Fatalf("bag %v in %s", got.Bag, got.LeaseName())
	}
	many := map[string]string{}
	for i := 0; i <= MaxBagEntries; i++ {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for name, bag := range map[string]map[string]string{
		"too many entries": many,
		"value too long":   {"x": strings.Repeat("v", MaxBagValueBytes+1)},
		"invalid key":      {"not a key!": "v"},
		"key with a slash": {"a/b": "v"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.SetBag(ctx, rec, bag); !errors.Is(err, ErrBag) {
				t.Fatalf("SetBag: %v, want ErrBag", err)
			}
		})
	}
	rec, _ = s.Get(ctx, key)
	if _, err := s.SetBag(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, key); got.Bag != nil {
		t.Fatalf("bag not cleared: %v", got.Bag)
	}
}

func TestReplicaLiveness(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	now := t0
	r := &Replica{Client: k8s, Namespace: s.Namespace, Identity: "kustos-7d9f-abc123", Duration: 15 * time.Second,
		Now: func() time.Time { return now }, Log: logr.Discard()}
	if alive, err := Alive(ctx, k8s, s.Namespace, r.Identity, now); err != nil || alive {
		t.Fatalf("a replica that never said so is alive: %v, %v", alive, err)
	}
	if err := r.renew(ctx); err != nil {
		t.Fatal(err)
	}
	if alive, _ := Alive(ctx, k8s, s.Namespace, r.Identity, now.Add(10*time.Second)); !alive {
		t.Fatal("a replica that just renewed is not alive")
	}
	if alive, _ := Alive(ctx, k8s, s.Namespace, r.Identity, now.Add(16*time.Second)); alive {
		t.Fatal("a replica past its lease duration is alive")
	}
	now = now.Add(20 * time.Second)
	if err := r.renew(ctx); err != nil {
		t.Fatal(err)
	}
	if alive, _ := Alive(ctx, k8s, s.Namespace, r.Identity, now.Add(time.Second)); !alive {
		t.Fatal("renewal did not extend the lease")
	}
}

// TestSweep: Leases of deleted namespaces go, an open PR is closed first (and a Lease whose PR
// cannot be closed stays for the next sweep); a namespace that exists is never touched.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	write := func(ns, holder string) Record {
		rec, _ := s.Get(ctx, lifecycle.NewKey("quota", ns, "compute"))
		rec, err := s.MarkModified(ctx, rec, t0, "")
		if err != nil {
			t.Fatal(err)
		}
		if holder != "" {
			if rec, err = s.Lock(ctx, rec, holder, "{}", "abc"); err != nil {
				t.Fatal(err)
			}
		}
		return rec
	}
	write("gone-idle", "")
	write("gone-open", "pr-4")
	write("gone-stuck", "pr-5")
	write("here", "pr-6")
	// A decision pending, no holder: a replica may have opened its proposal and crashed
	// before the Lease named it, so the release looks for it too.
	rec, _ := s.Get(ctx, lifecycle.NewKey("quota", "gone-pending", "compute"))
	if _, err := s.MarkModified(ctx, rec, t0, `{"key":"quota/gone-pending/compute"}`); err != nil {
		t.Fatal(err)
	}
	exists := func(_ context.Context, ns string) (bool, error) { return ns == "here", nil }
	var released []string
	release := func(_ context.Context, r Record) error {
		if r.Holder == "" {
			released = append(released, "pending:"+string(r.Key))
			return nil
		}
		released = append(released, r.Holder)
		if r.Holder == "pr-5" {
			return errors.New("GitHub is down")
		}
		return nil
	}
	n, err := s.Sweep(ctx, exists, release)
	if n != 3 || err == nil || !strings.Contains(err.Error(), "pr-5") {
		t.Fatalf("Sweep = %d, %v; want 3 deleted and an error naming pr-5", n, err)
	}
	sort.Strings(released)
	if strings.Join(released, ",") != "pending:quota/gone-pending/compute,pr-4,pr-5" {
		t.Errorf("released %v, want the pending decision's, pr-4 and pr-5 (never pr-6 of an existing namespace)", released)
	}
	for ns, want := range map[string]bool{"gone-idle": false, "gone-open": false, "gone-pending": false, "gone-stuck": true, "here": true} {
		rec, _ := s.Get(ctx, lifecycle.NewKey("quota", ns, "compute"))
		if rec.Exists() != want {
			t.Errorf("lease of %s exists=%v, want %v", ns, rec.Exists(), want)
		}
	}
}

// TestSweepGone: Leases whose target is gone are deleted, except those that hold an open
// proposal or a pending decision, and those the judge keeps.
func TestSweepGone(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	key := func(name string) lifecycle.Key {
		return lifecycle.KeyFor("ephemeral", lifecycle.Target{Version: "v1", Kind: "ConfigMap", Namespace: "previews", Name: name})
	}
	write := func(name, holder, pending string) {
		rec, _ := s.Get(ctx, key(name))
		rec, err := s.MarkModified(ctx, rec, t0, pending)
		if err != nil {
			t.Fatal(err)
		}
		if holder != "" {
			if _, err = s.Lock(ctx, rec, holder, "{}", "abc"); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("deleted", "", "")
	write("deleted-open-pr", "pr-7", "")
	write("deleted-pending", "", `{"key":"`+string(key("deleted-pending"))+`"}`)
	write("alive", "", "")
	gone := func(_ context.Context, r Record) (bool, error) { return r.Key != key("alive"), nil }
	n, err := s.SweepGone(ctx, gone)
	if err != nil || n != 1 {
		t.Fatalf("SweepGone = %d, %v; want 1 deleted", n, err)
	}
	for name, want := range map[string]bool{"deleted": false, "deleted-open-pr": true, "deleted-pending": true, "alive": true} {
		if rec, _ := s.Get(ctx, key(name)); rec.Exists() != want {
			t.Errorf("lease of %s exists=%v, want %v", name, rec.Exists(), want)
		}
	}
	if _, err := s.SweepGone(ctx, func(context.Context, Record) (bool, error) { return false, errors.New("API down") }); err == nil {
		t.Error("SweepGone hid the judge's error")
	}
}

// TestSteps: a step's progress lives in the Lease apart from the detector's Bag (a Bag write
// keeps it), survives the pending decision being cleared, and is written only on the version read.
func TestSteps(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	key := lifecycle.KeyFor("expiry", lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "exam-1"})
	rec, _ := s.Get(ctx, key)
	rec, err := s.MarkModified(ctx, rec, t0, `{"key":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	stale := rec
	if rec, err = s.SetStep(ctx, rec, "backup", `{"object":"kustos-backup-1"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetStep(ctx, stale, "backup", `{"object":"other"}`); !apierrors.IsConflict(err) {
		t.Fatalf("SetStep on a stale record: %v, want a conflict", err)
	}
	if rec, err = s.SetBag(ctx, rec, map[string]string{"warned": "yes"}); err != nil {
		t.Fatal(err)
	}
	if _, err = s.ClearPending(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, key)
	if got.Steps["backup"] != `{"object":"kustos-backup-1"}` || len(got.Steps) != 1 || got.Bag["warned"] != "yes" || len(got.Bag) != 1 {
		t.Fatalf("steps %v, bag %v", got.Steps, got.Bag)
	}
	for name, tc := range map[string][2]string{"invalid name": {"not a step!", "v"}, "value too long": {"backup", strings.Repeat("v", MaxStepValueBytes+1)}} {
		if _, err := s.SetStep(ctx, got, tc[0], tc[1]); !errors.Is(err, ErrBag) {
			t.Errorf("%s: %v, want ErrBag", name, err)
		}
	}
	if _, err := s.SetStep(ctx, got, "backup", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, key); got.Steps != nil {
		t.Fatalf("step not forgotten: %v", got.Steps)
	}
}
