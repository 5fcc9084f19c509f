package app

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestHeldWhole: with Cleaners and the inactivity detector on, the inactivity detector's kinds
// are held as objects in the target cache, and the expiry detector's kinds among them are not
// kept as metadata in the manager's cache for the Cleaners (a second informer of the same
// objects); Namespaces and kinds the manager filters are never held there.
func TestHeldWhole(t *testing.T) {
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	sts := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	ns := corev1.SchemeGroupVersion.WithKind("Namespace")
	secret := corev1.SchemeGroupVersion.WithKind("Secret")
	opts := func(cleaners, inactivity bool) Options {
		var o Options
		o.Cleaners.Enabled = cleaners
		o.Expiry.Enabled = true
		o.Expiry.Kinds = []schema.GroupVersionKind{deploy, sts}
		o.Inactivity.Enabled = inactivity
		o.Inactivity.Kinds = []schema.GroupVersionKind{deploy, ns, secret}
		return o
	}
	for _, tc := range []struct {
		name                 string
		cleaners, inactivity bool
		held, sharedMetadata []schema.GroupVersionKind
		// trimmedInManager: the inactivity kinds the manager's cache holds as trimmed objects.
		trimmedInManager []schema.GroupVersionKind
	}{
		{"Cleaners and inactivity", true, true, []schema.GroupVersionKind{deploy}, []schema.GroupVersionKind{sts}, []schema.GroupVersionKind{ns, secret}},
		{"no inactivity", true, false, nil, []schema.GroupVersionKind{deploy, sts}, nil},
		{"no Cleaners", false, true, nil, nil, []schema.GroupVersionKind{deploy, ns, secret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(tc.cleaners, tc.inactivity)
			trimmed := map[schema.GroupVersionKind]bool{}
			for _, w := range inactivityWatches(o) {
				for k := range w.ObjectFields {
					trimmed[schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}] = true
				}
			}
			for _, c := range []struct {
				what string
				got  map[schema.GroupVersionKind]bool
				want []schema.GroupVersionKind
			}{
				{"held as objects in the target cache", heldWhole(o), tc.held},
				{"metadata shared in the manager's cache", sharedMetadata(o), tc.sharedMetadata},
				{"inactivity kinds trimmed in the manager's cache", trimmed, tc.trimmedInManager},
			} {
				want := map[schema.GroupVersionKind]bool{}
				for _, k := range c.want {
					want[k] = true
				}
				if !reflect.DeepEqual(c.got, want) {
					t.Errorf("%s: %v, want %v", c.what, c.got, want)
				}
			}
		})
	}
}
