package state

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
