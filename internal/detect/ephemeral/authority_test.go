package ephemeral

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

type fakeTouches struct{ deletes, creates []lifecycle.Target }

func (f fakeTouches) Touches(context.Context, string, string) ([]lifecycle.Target, []lifecycle.Target, bool, error) {
	return f.deletes, f.creates, true, nil
}

// TestRequestsOf: the requests a Cleaner's author is asked about, one per object its cleanup
// touches, with the resource the RESTMapper names and no namespace for cluster-scoped kinds.
func TestRequestsOf(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	job := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	role := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	for _, gvk := range []schema.GroupVersionKind{secret, cm, job} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	mapper.Add(role, meta.RESTScopeRoot)
	mapping := func(gvk schema.GroupVersionKind) *meta.RESTMapping {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	object := func(gvk schema.GroupVersionKind, name string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("team-a")
		u.SetName(name)
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return u
	}
	r := &Reconciler{Mapper: mapper, ReleaseTouches: fakeTouches{
		deletes: []lifecycle.Target{
			{Version: "v1", Kind: "Secret", Namespace: "team-a", Name: "sh.helm.release.v1.web.v1"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Namespace: "team-a", Name: "web-admin"},
			{Group: "example.com", Version: "v1", Kind: "Gone", Namespace: "team-a", Name: "x"}, // not served: skipped
			{Group: "batch", Version: "v1", Kind: "Job", Namespace: "team-a", Name: "web-cleanup"},
		},
		creates: []lifecycle.Target{{Group: "batch", Version: "v1", Kind: "Job", Namespace: "team-a", Name: "web-cleanup"}},
	}}
	cl := &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "preview"}}
	spec := &Spec{Releases: []v1alpha1.HelmRelease{{Name: "web", Delete: true}, {Name: "kept"}}}
	targets := []resolvedTarget{
		{Target: Target{Name: "db", Delete: true}, mapping: mapping(secret), objects: []*unstructured.Unstructured{object(secret, "db", false)}},
		{Target: Target{Name: "read", Delete: false}, mapping: mapping(cm), objects: []*unstructured.Unstructured{object(cm, "settings", false)}},
		{Target: Target{Name: "caches", Delete: true}, mapping: mapping(cm),
			objects: []*unstructured.Unstructured{object(cm, "a", false), object(cm, "b", true)}},
	}
	got, err := r.requestsOf(context.Background(), cl, spec, targets)
	if err != nil {
		t.Fatal(err)
	}
	want := []authorship.Attributes{
		{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: "team-a", Name: "db"},
		{Verb: "delete", Version: "v1", Resource: "configmaps", Namespace: "team-a", Name: "a"},
		{Verb: "create", Group: "batch", Version: "v1", Resource: "jobs", Namespace: "team-a", Name: "web-cleanup"},
		{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: "team-a", Name: "sh.helm.release.v1.web.v1"},
		{Verb: "delete", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Name: "web-admin"},
		{Verb: "delete", Group: "batch", Version: "v1", Resource: "jobs", Namespace: "team-a", Name: "web-cleanup"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests\n%+v\nwant\n%+v", got, want)
	}
}
