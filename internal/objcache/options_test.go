package objcache

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// leaseLabels select the state Leases, as the manager's cache does.
var leaseLabels = map[string]string{"app.kubernetes.io/managed-by": "kustos"}

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
			o := CacheOptions("kustos", leaseLabels, tc.watches...)
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
			a := out.(*metav1.PartialObjectMetadata).Annotations //nolint:forcetypeassert // objcache.TrimObject returns the type it got
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

// TestCacheOptionsTrimObjectKinds: the cache of a kind a detector reads as unstructured objects
// trims them to its fields; its metadata form is trimmed as any other's, and a typed object or
// another kind passes with only managed fields and the client-side-apply copy gone.
func TestCacheOptionsTrimObjectKinds(t *testing.T) {
	deploy := lifecycle.ObjectKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	o := CacheOptions("kustos", leaseLabels, lifecycle.Watches{MetadataAnnotationPrefixes: []string{"kustos.io/"},
		ObjectFields: map[lifecycle.ObjectKind][][]string{deploy: {{"spec", "replicas"}}}})
	var transform func(any) (any, error)
	for obj, by := range o.ByObject {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == (schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) {
			transform = by.Transform
		}
	}
	if transform == nil {
		t.Fatal("no cache of its own for the Deployments read as unstructured objects")
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": int64(1), "template": map[string]any{}}}}
	out, err := transform(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(out.(*unstructured.Unstructured).Object, "spec", "template"); found { //nolint:forcetypeassert // the transform returns the type it got
		t.Error("the pod template was kept")
	}
	pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"kustos.io/ttl": "1d", "team": "a"}}}
	out, err = transform(pm)
	if err != nil {
		t.Fatal(err)
	}
	if a := out.(*metav1.PartialObjectMetadata).Annotations; a["kustos.io/ttl"] != "1d" || a["team"] != "" { //nolint:forcetypeassert // as above
		t.Errorf("metadata annotations %v, want only kustos.io/ttl", a)
	}
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "managedFields": []any{}}, "data": map[string]any{"k": "v"}}}
	out, err = o.DefaultTransform(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(out.(*unstructured.Unstructured).Object, "data"); !found { //nolint:forcetypeassert // as above
		t.Error("an object of a kind no detector trims lost its data")
	}
}

// TestCacheOptionsShareMetadata: a kind one detector reads as trimmed objects and another reads
// as metadata with every label and annotation is one cache whose transform does both; a kind
// whose cache is filtered (Secrets: helm's only) keeps its filter.
func TestCacheOptionsShareMetadata(t *testing.T) {
	deploy := lifecycle.ObjectKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	secret := lifecycle.ObjectKind{Version: "v1", Kind: "Secret"}
	o := CacheOptions("kustos", leaseLabels,
		lifecycle.Watches{MetadataAnnotationPrefixes: []string{"kustos.io/"}, SecretLabels: map[string]string{"owner": "helm"},
			ObjectFields: map[lifecycle.ObjectKind][][]string{deploy: {{"spec", "replicas"}}}},
		lifecycle.Watches{WholeMetadata: []lifecycle.ObjectKind{deploy, secret}})
	byGVK := map[schema.GroupVersionKind]func(any) (any, error){}
	for obj, by := range o.ByObject {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if _, ok := obj.(*corev1.Secret); ok {
			if by.Label == nil || by.Label.String() != "owner=helm" {
				t.Errorf("Secrets' selector %v, want owner=helm", by.Label)
			}
			gvk = corev1.SchemeGroupVersion.WithKind("Secret")
		}
		if _, dup := byGVK[gvk]; dup {
			t.Errorf("two caches of %s", gvk)
		}
		byGVK[gvk] = by.Transform
	}
	transform := byGVK[schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}]
	if transform == nil {
		t.Fatal("no cache of its own for Deployments")
	}
	pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "a"},
		Annotations:   map[string]string{"kustos.io/ttl": "1d", "ci/merged": "true", corev1.LastAppliedConfigAnnotation: "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, err := transform(pm)
	if err != nil {
		t.Fatal(err)
	}
	m := out.(*metav1.PartialObjectMetadata) //nolint:forcetypeassert // the transform returns the type it got
	want := map[string]string{"kustos.io/ttl": "1d", "ci/merged": "true"}
	if !reflect.DeepEqual(m.Annotations, want) || m.Labels["team"] != "a" || m.ManagedFields != nil {
		t.Errorf("metadata kept: labels %v, annotations %v, managed fields %v; want every label, annotations %v, no managed fields",
			m.Labels, m.Annotations, m.ManagedFields, want)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": int64(1), "template": map[string]any{}}}}
	if out, err = transform(u); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(out.(*unstructured.Unstructured).Object, "spec", "template"); found { //nolint:forcetypeassert // as above
		t.Error("the pod template was kept")
	}
}
