package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/nsscope"
	"github.com/kustos-dev/kustos/internal/orphans"
	"github.com/kustos-dev/kustos/internal/state"
)

// shardLabel is the Namespace label the test's two installations select on.
const shardLabel = "kustos.io/shard"

// TestNamespaceSelectorShards: two installations of Kustos in one cluster, --namespace-selector
// kustos.io/shard=a and kustos.io/shard=b, each with its own state namespace. Every decision
// about a namespace labelled a (a quota at 85%, an expired Deployment with an owner, a due
// Cleaner) is made by A alone — its Events name A, its Leases are in A's state namespace only —
// and likewise for b; an unlabelled namespace is nobody's: no Event, no Lease, no Cleaner
// status. A namespace relabelled from a to b moves to B: B looks at what is in it at once, and
// what appears in it later is B's alone.
func TestNamespaceSelectorShards(t *testing.T) {
	ctx := context.Background()
	mkNamespace := func(prefix, shard string) string {
		ns := newNamespace(t, prefix, nil)
		if shard != "" {
			setShard(t, ns, shard)
		}
		return ns
	}
	nsA, nsB, nsNone, nsMove := mkNamespace("shard-a", "a"), mkNamespace("shard-b", "b"), mkNamespace("shard-none", ""), mkNamespace("shard-move", "a")
	all := []string{nsA, nsB, nsNone, nsMove}
	for _, ns := range all {
		newQuota(t, ns, "compute", rl("requests.cpu", "10"))
		newPod(t, ns, "p1", rl("cpu", "8500m"))
		newEnvironment(t, ns, "preview", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "4s"})
		if err := k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratch"}}); err != nil {
			t.Fatal(err)
		}
		createCleaner(t, &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tidy"}, Spec: v1alpha1.CleanerSpec{
			TTL:     "1s",
			Targets: []v1alpha1.Target{{Name: "scratch", Delete: true, Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "scratch"}}},
		}})
	}
	for _, ns := range all {
		waitUsed(t, ns, "compute", "requests.cpu", "8500m")
		newEnvironment(t, ns, "orphan", nil) // no owner, no lifetime
	}
	// Each installation's orphan report (its admin digest, kustos status --orphans) lists its
	// own namespaces' orphans only.
	for shard, want := range map[string][]string{"a": {nsA, nsMove}, "b": {nsB}} {
		sel, err := nsscope.Parse(shardLabel + "=" + shard)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := orphans.List(ctx, k8s, []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}},
			expiry.DefaultSettings(), time.Now(), sel)
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, r := range rows {
			listed[r.Target] = true
		}
		for _, ns := range all {
			wantIt := slices.Contains(want, ns)
			for _, target := range []string{"Deployment.apps/" + ns + "/orphan", "Namespace/" + ns} {
				if listed[target] != wantIt {
					t.Errorf("shard %s's orphans list %s: %v, want %v", shard, target, listed[target], wantIt)
				}
			}
		}
		if len(rows) != 2*len(want) {
			t.Errorf("shard %s's orphans: %d rows, want %d (its namespaces and their orphan Deployments): %+v", shard, len(rows), 2*len(want), rows)
		}
	}
	shard := func(name string) func(*app.Options) {
		return func(o *app.Options) {
			expiryOptions(o)
			o.Cleaners = ephemeral.Options{Enabled: true, NotReadyRecheck: 2 * time.Second}
			o.NamespaceSelector = shardLabel + "=" + name
			o.Instance = "shard-" + name
			o.LeaderElectionID = "kustos-" + name
		}
	}
	a, b := startKustos(t, shard("a")), startKustos(t, shard("b"))
	dumpOnFailure(t, a)
	dumpOnFailure(t, b)

	// Each decision once, by the namespace's installation.
	owners := map[string]*kustos{nsA: a, nsB: b, nsMove: a}
	for ns, k := range owners {
		for reason, n := range map[string]int{reasonRecommended: 1, expiry.ReasonExpiryWarning: 1, expiry.ReasonExpiryDue: 1, "CleanupDue": 2} {
			for _, e := range waitEvents(t, ns, reason, n) {
				if e.ReportingInstance != k.opts.Instance {
					t.Errorf("%s Event in %s written by %q, want %q: %s", reason, ns, e.ReportingInstance, k.opts.Instance, e.Message)
				}
			}
		}
		waitCondition(t, ns, "tidy", v1alpha1.StepActionsDone, metav1.ConditionTrue, "ObserverMode")
	}
	for ns := range owners {
		for _, reason := range []string{reasonRecommended, expiry.ReasonExpiryWarning, expiry.ReasonExpiryDue} {
			never(t, ns, reason, 1, 0)
		}
	}
	never(t, nsA, "CleanupDue", 2, 2*time.Second)

	// Leases only in the owning installation's state namespace; none for the unlabelled one.
	leases := func(k *kustos) []string {
		var list coordinationv1.LeaseList
		if err := k8s.List(ctx, &list, client.InNamespace(k.opts.StateNamespace), client.MatchingLabels{state.LabelManagedBy: state.ManagedByValue}); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, l := range list.Items {
			keys = append(keys, l.Name+" "+l.Annotations[state.AnnotationKey])
		}
		return keys
	}
	mentions := func(keys []string, ns string) int {
		n := 0
		for _, k := range keys {
			if strings.Contains(k, ns) {
				n++
			}
		}
		return n
	}
	la, lb := leases(a), leases(b)
	for _, c := range []struct {
		keys []string
		ns   string
		want bool
	}{{la, nsA, true}, {la, nsMove, true}, {la, nsB, false}, {la, nsNone, false}, {lb, nsB, true}, {lb, nsA, false}, {lb, nsMove, false}, {lb, nsNone, false}} {
		if got := mentions(c.keys, c.ns) > 0; got != c.want {
			t.Errorf("Leases of %s in a state namespace: %v, want %v (leases %v)", c.ns, got, c.want, c.keys)
		}
	}

	// The unlabelled namespace is nobody's.
	for _, reason := range []string{reasonRecommended, expiry.ReasonExpiryWarning, expiry.ReasonExpiryDue, "CleanupDue"} {
		never(t, nsNone, reason, 0, 0)
	}
	if cl := getCleaner(t, nsNone, "tidy"); cl == nil || len(cl.Status.Conditions) != 0 || cl.Status.ObservedGeneration != 0 {
		t.Errorf("the unlabelled namespace's Cleaner was served: %+v", cl)
	}

	// Relabelled from a to b: B looks at once at what is there (its quota, at 85%, is B's
	// decision now), and a Deployment that comes later is warned about by B alone.
	setShard(t, nsMove, "b")
	eventually(t, "B's Lease for the quota of the namespace that moved", func() bool {
		return mentions(leases(b), nsMove+"/compute") > 0 || mentions(leases(b), "state-"+nsMove+"-compute") > 0
	})
	newEnvironment(t, nsMove, "late", map[string]string{expiry.AnnotationOwner: "ana@example.com", expiry.AnnotationTTL: "4s"})
	eventually(t, "B's warning about the Deployment that came after the move", func() bool {
		for _, e := range kustosEvents(t, nsMove, expiry.ReasonExpiryWarning) {
			if e.InvolvedObject.Name == "late" {
				if e.ReportingInstance != b.opts.Instance {
					t.Fatalf("the late Deployment's warning written by %q, want B", e.ReportingInstance)
				}
				return true
			}
		}
		return false
	})
	time.Sleep(2 * time.Second)
	for _, k := range leases(a) {
		if strings.Contains(k, nsMove) && strings.Contains(k, "late") {
			t.Errorf("A decided about a Deployment of a namespace that left its selector: %s", k)
		}
	}
	var late int
	for _, e := range kustosEvents(t, nsMove, expiry.ReasonExpiryWarning) {
		if e.InvolvedObject.Name == "late" {
			late++
		}
	}
	if late != 1 {
		t.Errorf("%d warnings about the late Deployment, want 1 (B's)", late)
	}
}

// setShard labels a Namespace kustos.io/shard=shard.
func setShard(t *testing.T, ns, shard string) {
	t.Helper()
	var n corev1.Namespace
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: ns}, &n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[shardLabel] = shard
	if err := k8s.Patch(context.Background(), &n, patch); err != nil {
		t.Fatal(err)
	}
}
