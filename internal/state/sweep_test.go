package state

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestNamespaceSweeper: one pass of the sweeper asks the API server which namespaces exist,
// deletes the Leases of those that do not, keeps the others and counts what it deleted; it
// returns nil when its context ends.
func TestNamespaceSweeper(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	gone := fmt.Sprintf("gone-%d", os.Getpid()%10000)
	for _, ns := range []string{gone, s.Namespace} {
		rec, _ := s.Get(ctx, lifecycle.NewKey(quotaDetector, ns, "compute"))
		if _, err := s.MarkModified(ctx, rec, t0, ""); err != nil {
			t.Fatal(err)
		}
	}
	swept := prometheus.NewCounter(prometheus.CounterOpts{Name: "swept"})
	sw := &NamespaceSweeper{Store: s, Live: k8s, Interval: time.Hour, Swept: swept, Log: logr.Discard()}
	if !sw.NeedLeaderElection() {
		t.Error("the sweeper runs on every replica; it must run on the leader only")
	}
	run, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- sw.Start(run) }()
	// The first pass runs at start; the Interval is an hour, so a second one never comes.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if rec, _ := s.Get(ctx, lifecycle.NewKey(quotaDetector, gone, "compute")); !rec.Exists() {
			break
		}
	}
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Start = %v after its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return when its context ended")
	}
	for ns, want := range map[string]bool{gone: false, s.Namespace: true} {
		rec, _ := s.Get(ctx, lifecycle.NewKey(quotaDetector, ns, "compute"))
		if rec.Exists() != want {
			t.Errorf("lease of %s exists=%v, want %v", ns, rec.Exists(), want)
		}
	}
	var m dto.Metric
	if err := swept.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Errorf("counted %v swept Leases, want 1", got)
	}
}

// TestLegacyQuotaOwners counts the quotas a legacy Lease name fits: two quotas whose namespace
// and name join to the same state-<namespace>-<quota> both count.
func TestLegacyQuotaOwners(t *testing.T) {
	ctx := context.Background()
	p := fmt.Sprintf("lq%d", os.Getpid()%10000)
	for _, q := range []struct{ ns, name string }{{p + "-a", "b-c"}, {p + "-a-b", "c"}, {p + "-x", "y"}} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: q.ns}}); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: q.ns, Name: q.name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		want int
	}{
		{"state-" + p + "-a-b-c", 2},
		{"state-" + p + "-x-y", 1},
		{"state-" + p + "-none", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := LegacyQuotaOwners(ctx, k8s, tc.name)
			if err != nil || n != tc.want {
				t.Errorf("LegacyQuotaOwners(%s) = %d, %v; want %d", tc.name, n, err, tc.want)
			}
		})
	}
}

// TestNamespaceSweeperToldGone: a namespace told gone is swept at once, not at the next tick
// (an hour here), its open proposal released first; and once more after Recheck, for a
// proposal that was under way when the namespace went and was recorded after the first sweep.
// A namespace told gone that exists (created again since) keeps its Leases.
func TestNamespaceSweeperToldGone(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	gone := fmt.Sprintf("told-gone-%d", os.Getpid()%10000)
	held := func(name string) {
		t.Helper()
		rec, _ := s.Get(ctx, lifecycle.NewKey(quotaDetector, gone, name))
		rec, err := s.MarkModified(ctx, rec, t0, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Lock(ctx, rec, "pr-7", "{}", "abc"); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(ns, name string) bool {
		rec, _ := s.Get(ctx, lifecycle.NewKey(quotaDetector, ns, name))
		return rec.Exists()
	}
	waitGone := func(ns, name string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); exists(ns, name); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the Lease of %s/%s is still there", ns, name)
			}
		}
	}
	var mu sync.Mutex
	var released []lifecycle.Key
	var namespaces []string // ReleaseNamespace's calls
	sw := &NamespaceSweeper{Store: s, Live: k8s, Interval: time.Hour, Recheck: 500 * time.Millisecond, Log: logr.Discard(),
		Release: func(_ context.Context, rec Record) error {
			mu.Lock()
			defer mu.Unlock()
			released = append(released, rec.Key)
			return nil
		},
		ReleaseNamespace: func(_ context.Context, ns string) error {
			mu.Lock()
			defer mu.Unlock()
			namespaces = append(namespaces, ns)
			return nil
		}}
	run, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = sw.Start(run) }()
	time.Sleep(200 * time.Millisecond) // the first pass at start is over

	held("compute")
	rec, _ := s.Get(ctx, lifecycle.NewKey(quotaDetector, s.Namespace, "compute"))
	if _, err := s.MarkModified(ctx, rec, t0, ""); err != nil {
		t.Fatal(err)
	}
	sw.NamespaceGone(gone)
	sw.NamespaceGone(s.Namespace) // it exists: told gone by mistake, or created again
	waitGone(gone, "compute")
	held("in-flight") // recorded after the first sweep
	waitGone(gone, "in-flight")
	if !exists(s.Namespace, "compute") {
		t.Error("the Lease of a namespace that exists was swept")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(released) != 2 || released[0] != lifecycle.NewKey(quotaDetector, gone, "compute") || released[1] != lifecycle.NewKey(quotaDetector, gone, "in-flight") {
		t.Errorf("released %v, want the two held Leases of %s in turn", released, gone)
	}
	// The pull requests no Lease names (a group's, opened while its Lease was swept) are looked
	// for at each sweep of the gone namespace, and never for the one that exists.
	for _, ns := range namespaces {
		if ns != gone {
			t.Errorf("ReleaseNamespace(%s), a namespace that exists", ns)
		}
	}
	if len(namespaces) != 2 {
		t.Errorf("ReleaseNamespace called %d times (%v), want 2: at the sweep and at its recheck", len(namespaces), namespaces)
	}
}

// TestNamespaceSweeperOnDelete: the informer's delete handler tells the sweeper the name,
// from the object or from a tombstone.
func TestNamespaceSweeperOnDelete(t *testing.T) {
	ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	for name, obj := range map[string]any{
		"object":    ns,
		"tombstone": toolscache.DeletedFinalStateUnknown{Key: "a", Obj: ns},
	} {
		t.Run(name, func(t *testing.T) {
			sw := &NamespaceSweeper{}
			sw.onDelete(obj)
			names, _ := sw.due(time.Now())
			if len(names) != 1 || names[0] != "a" {
				t.Errorf("due %v, want [a]", names)
			}
		})
	}
}
