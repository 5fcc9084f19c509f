package ephemeral

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kustos-dev/kustos/api/v1alpha1"
)

// TestGatherSecretsAsMetadata: offline, as in the cluster, a condition over a Secret sees its
// apiVersion, kind and metadata, never its data; other kinds are whole.
func TestGatherSecretsAsMetadata(t *testing.T) {
	spec, errs := Compile(v1alpha1.CleanerSpec{TTL: "1d", Targets: []v1alpha1.Target{
		{Name: "db", Reference: v1alpha1.Reference{Version: "v1", Kind: "secrets", Name: "db"}},
		{Name: "cm", Reference: v1alpha1.Reference{Version: "v1", Kind: "ConfigMap", Name: "cm"}},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	obj := func(kind, name string, body map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "team-a", "labels": map[string]any{"app": "x"}}}}
		for k, v := range body {
			u.Object[k] = v
		}
		return u
	}
	got := spec.Gather("team-a", []*unstructured.Unstructured{
		obj("Secret", "db", map[string]any{"data": map[string]any{"password": "aHVudGVyMg=="}, "type": "Opaque"}),
		obj("ConfigMap", "cm", map[string]any{"data": map[string]any{"a": "b"}}),
	})
	for _, tc := range []struct {
		target string
		keys   []string
	}{{"db", []string{"apiVersion", "kind", "metadata"}}, {"cm", []string{"apiVersion", "kind", "metadata", "data"}}} {
		t.Run(tc.target, func(t *testing.T) {
			if len(got[tc.target]) != 1 {
				t.Fatalf("%s: %d objects", tc.target, len(got[tc.target]))
			}
			o := got[tc.target][0]
			if len(o) != len(tc.keys) {
				t.Errorf("%s has %d fields %v, want %v", tc.target, len(o), o, tc.keys)
			}
			for _, k := range tc.keys {
				if _, ok := o[k]; !ok {
					t.Errorf("%s lacks %s", tc.target, k)
				}
			}
		})
	}
}
