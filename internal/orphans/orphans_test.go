package orphans

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

var nsCounter int

// newNamespace makes a namespace of its own for a test, labelled with labels.
func newNamespace(t *testing.T, ls map[string]string) string {
	t.Helper()
	nsCounter++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("orphans-%d-%d", os.Getpid()%10000, nsCounter), Labels: ls}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// TestVMsRoundTrip: the crawl's orphans are kept in a Lease of the state namespace (created,
// then updated, a long problem cut), and read back as rows; no Lease, no rows.
func TestVMsRoundTrip(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, nil)
	now := time.Now()
	if rows, err := VMs(ctx, k8s, ns, now); err != nil || len(rows) != 0 {
		t.Fatalf("before any crawl: %v, %v; want no rows", rows, err)
	}
	created := now.Add(-48 * time.Hour)
	for _, orphans := range [][]detectvsphere.Orphan{
		{{Target: "vm/lab-1", UUID: "u1", Missing: []string{"owner"}, Created: created}},
		{{Target: "vm/lab-1", UUID: "u1", Missing: []string{"owner"}, Created: created},
			{Target: "vm/lab-2", UUID: "u2", Problem: strings.Repeat("x", 200)}},
	} {
		if err := (VMReport{R: k8s, W: k8s, Namespace: ns}).SetOrphans(ctx, orphans); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := VMs(ctx, k8s, ns, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Target != "vm/lab-1" || rows[0].Age != 48*time.Hour || len(rows[1].Problem) != 160 || rows[1].Age != 0 {
		t.Errorf("rows %+v, want lab-1 48h old and lab-2 with its problem cut to 160 bytes", rows)
	}
}

// recorder is a Notifier that keeps what it was sent.
type recorder struct {
	mu   sync.Mutex
	sent []lifecycle.Notice
}

func (r *recorder) Send(_ context.Context, n lifecycle.Notice) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, n)
	return nil
}

// TestDigest: the digest lists the orphans of the selected namespaces (a namespace without an
// owner is one, as is an object with an unusable lifetime) and the crawl's VMs, to the
// administrators; another installation's namespaces and an object with an owner and a lifetime
// are left out.
func TestDigest(t *testing.T) {
	ctx := context.Background()
	mine := newNamespace(t, map[string]string{"shard": "a"})
	theirs := newNamespace(t, map[string]string{"shard": "b"})
	state := newNamespace(t, map[string]string{"shard": "a"})
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "typo", Annotations: map[string]string{"kustos.io/owner": "ana@example.com", "kustos.io/ttl": "soon"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "fine", Annotations: map[string]string{"kustos.io/owner": "ana@example.com", "kustos.io/ttl": "7d"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: theirs, Name: "theirs"}},
	} {
		if err := k8s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	if err := SaveVMs(ctx, k8s, k8s, state, []detectvsphere.Orphan{{Target: "vm/lab-1", UUID: "u1", Missing: []string{"lifetime"}}}); err != nil {
		t.Fatal(err)
	}
	sel, err := labels.Parse("shard=a")
	if err != nil {
		t.Fatal(err)
	}
	n := &recorder{}
	now := time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC)
	d := &Digest{Reader: k8s, Kinds: []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")}, Namespaces: sel,
		StateNamespace: state, Settings: expiry.DefaultSettings(), Notifier: n, To: "ops@example.com", Interval: time.Hour,
		Now: func() time.Time { return now }, Log: logr.Discard()}
	if !d.NeedLeaderElection() {
		t.Error("every replica would send the digest; the leader alone must")
	}
	if err := d.send(ctx); err != nil {
		t.Fatal(err)
	}
	if len(n.sent) != 1 {
		t.Fatalf("%d notices, want one digest", len(n.sent))
	}
	got := n.sent[0]
	if got.To != "ops@example.com" || got.Kind != NoticeOrphans || got.ID != NoticeOrphans+"|2026-11-29T09" {
		t.Errorf("notice to %q, kind %q, id %q", got.To, got.Kind, got.ID)
	}
	for _, want := range []string{"Namespace/" + mine + ":", "ConfigMap/" + mine + "/typo:", "vm/lab-1: missing lifetime"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("the digest lacks %q:\n%s", want, got.Text)
		}
	}
	for _, not := range []string{theirs, "/fine"} {
		if strings.Contains(got.Text, not) {
			t.Errorf("the digest lists %q:\n%s", not, got.Text)
		}
	}
}
