package app

import (
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestCacheOptionsTakeTheUnion: the caches hold what any detector reads, and nothing else.
func TestCacheOptionsTakeTheUnion(t *testing.T) {
	other := lifecycle.Watches{
		EventFields:                map[string]string{"reason": "BackOff", "type": corev1.EventTypeWarning},
		MetadataAnnotationPrefixes: []string{"kustos.io/"},
	}
	cases := []struct {
		name       string
		watches    []lifecycle.Watches
		wantEvents string // "" means Events are not cached
		keep, drop []string
	}{
		{"quota alone", []lifecycle.Watches{quota.Watches()}, "reason=FailedCreate,type=Warning",
			[]string{"resizer.io/threshold"}, []string{"kustos.io/owner", "team"}},
		{"two detectors: common event fields, both prefixes", []lifecycle.Watches{quota.Watches(), other}, "type=Warning",
			[]string{"resizer.io/threshold", "kustos.io/owner"}, []string{"team"}},
		{"no detector reads events", []lifecycle.Watches{{MetadataAnnotationPrefixes: []string{"kustos.io/"}}}, "",
			[]string{"kustos.io/ttl"}, []string{"resizer.io/threshold"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := cacheOptions("kustos", tc.watches...)
			var got string
			for obj, by := range o.ByObject {
				if _, ok := obj.(*corev1.Event); ok {
					// A selector from a map lists its terms in map order: compare them sorted.
					terms := strings.Split(by.Field.String(), ",")
					sort.Strings(terms)
					got = strings.Join(terms, ",")
				}
			}
			if got != tc.wantEvents {
				t.Errorf("event selector %q, want %q", got, tc.wantEvents)
			}
			ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Annotations: map[string]string{}}}
			for _, k := range append(append([]string{}, tc.keep...), tc.drop...) {
				ns.Annotations[k] = "x"
			}
			out, err := o.DefaultTransform(ns)
			if err != nil {
				t.Fatal(err)
			}
			a := out.(*metav1.PartialObjectMetadata).Annotations //nolint:forcetypeassert // trimObject returns the type it got
			for _, k := range tc.keep {
				if _, ok := a[k]; !ok {
					t.Errorf("annotation %s dropped", k)
				}
			}
			for _, k := range tc.drop {
				if _, ok := a[k]; ok {
					t.Errorf("annotation %s kept", k)
				}
			}
		})
	}
}
