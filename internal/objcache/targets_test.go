package objcache

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestPlanTargets: with Cleaners and the inactivity detector on, the inactivity detector's
// kinds are held as objects in the target cache, and the expiry detector's kinds among them are
// not kept as metadata in the manager's cache for the Cleaners (a second informer of the same
// objects); Namespaces and kinds the manager filters are never held there.
func TestPlanTargets(t *testing.T) {
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	sts := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	ns := corev1.SchemeGroupVersion.WithKind("Namespace")
	secret := corev1.SchemeGroupVersion.WithKind("Secret")
	expiry := []schema.GroupVersionKind{deploy, sts}
	inactivity := []schema.GroupVersionKind{deploy, ns, secret}
	kinds := func(ks ...schema.GroupVersionKind) map[schema.GroupVersionKind]bool {
		m := map[schema.GroupVersionKind]bool{}
		for _, k := range ks {
			m[k] = true
		}
		return m
	}
	whole := func(ks ...schema.GroupVersionKind) []lifecycle.Watches {
		var w lifecycle.Watches
		for _, k := range ks {
			w.WholeMetadata = append(w.WholeMetadata, lifecycle.ObjectKind{Group: k.Group, Version: k.Version, Kind: k.Kind})
		}
		return []lifecycle.Watches{w}
	}
	for _, tc := range []struct {
		name                 string
		cleaners             bool
		inactivity, expiry   []schema.GroupVersionKind
		held, sharedMetadata map[schema.GroupVersionKind]bool
		// inManager: the inactivity kinds the manager's cache holds (trimmed objects).
		inManager      []schema.GroupVersionKind
		cleanerWatches []lifecycle.Watches
	}{
		{"Cleaners, inactivity and expiry", true, inactivity, expiry, kinds(deploy), kinds(sts), []schema.GroupVersionKind{ns, secret}, whole(sts)},
		{"no inactivity", true, nil, expiry, kinds(), kinds(deploy, sts), nil, whole(deploy, sts)},
		{"no Cleaners", false, inactivity, expiry, kinds(), kinds(), inactivity, nil},
		{"no expiry", true, inactivity, nil, kinds(deploy), kinds(), []schema.GroupVersionKind{ns, secret}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanTargets(tc.cleaners, tc.inactivity, tc.expiry)
			for _, c := range []struct {
				what      string
				got, want any
			}{
				{"held as objects in the target cache", p.HeldWhole, tc.held},
				{"metadata shared in the manager's cache", p.SharedMetadata, tc.sharedMetadata},
				{"inactivity kinds in the manager's cache", p.InManager(tc.inactivity), tc.inManager},
				{"the Cleaners' watches", p.CleanerWatches(), tc.cleanerWatches},
			} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}
