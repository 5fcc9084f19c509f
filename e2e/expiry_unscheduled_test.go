package e2e

import (
	"context"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// TestExpiryNoLongerScheduled: an environment that stops being scheduled — opted out,
// kustos.io/ttl: never, its owner removed — loses the owner and deadline its Lease recorded
// (and the owner label with them) at the detector's next look, so its former owner's page no
// longer lists it or offers to extend it; one still scheduled stays listed.
func TestExpiryNoLongerScheduled(t *testing.T) {
	ns := newNamespace(t, "expiry-unscheduled", nil)
	owner := "ana@example.com"
	names := []string{"keep", "optout", "never", "noowner"}
	for _, n := range names {
		newEnvironment(t, ns, n, map[string]string{expiry.AnnotationOwner: owner, expiry.AnnotationTTL: "1h"})
	}
	k := startKustos(t, expiryOptions)
	dumpOnFailure(t, k)
	store := &state.Store{Reader: k8s, Writer: k8s, Namespace: k.opts.StateNamespace}
	listed := func() []string {
		recs, err := store.ListOwned(context.Background(), lifecycle.OwnerID(owner))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			if p, ok := r.Key.Parts(); ok && p.Namespace == ns {
				out = append(out, p.Name)
			}
		}
		sort.Strings(out)
		return out
	}
	eventually(t, "all four on ana's page", func() bool { return len(listed()) == 4 })

	edit := func(name string, mutate func(d *appsv1.Deployment)) {
		t.Helper()
		var d appsv1.Deployment
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(d.DeepCopy())
		mutate(&d)
		if err := k8s.Patch(context.Background(), &d, patch); err != nil {
			t.Fatal(err)
		}
	}
	edit("optout", func(d *appsv1.Deployment) { d.Labels = map[string]string{expiry.LabelIgnore: "true"} })
	edit("never", func(d *appsv1.Deployment) { d.Annotations[expiry.AnnotationTTL] = lifecycle.Never })
	edit("noowner", func(d *appsv1.Deployment) { delete(d.Annotations, expiry.AnnotationOwner) })

	eventually(t, "only keep on ana's page", func() bool { l := listed(); return len(l) == 1 && l[0] == "keep" })
	for _, n := range names[1:] {
		target := lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: n}
		rec, err := store.Get(context.Background(), lifecycle.KeyFor(expiry.DetectorName, target))
		if err != nil || !rec.Exists() {
			t.Fatalf("%s's Lease: %v", n, err)
		}
		var l coordinationv1.Lease
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: k.opts.StateNamespace, Name: rec.LeaseName()}, &l); err != nil {
			t.Fatal(err)
		}
		st, _ := expiry.ParseState(rec.Bag)
		if st.Owner != "" || !st.Deadline.IsZero() || l.Labels[state.LabelOwner] != "" {
			t.Errorf("%s's Lease still names its owner: %+v, labels %v", n, st, l.Labels)
		}
	}
}
