package ephemeral

import (
	"context"
	"fmt"
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

// fakeTouches answers Touches for the release "web" with requests, and refuses "elsewhere".
type fakeTouches struct{ requests []authorship.Attributes }

func (f fakeTouches) Touches(_ context.Context, _, release string) ([]authorship.Attributes, bool, error) {
	if release == "elsewhere" {
		return nil, false, fmt.Errorf("helm release reaches outside: %w", lifecycle.ErrOutsideNamespace)
	}
	return f.requests, release == "web", nil
}

// TestRequestsOf: the requests a Cleaner's author is asked about, one per object its cleanup
// touches, with the resource the RESTMapper names; a release's are its uninstall's own (Touches,
// taken as they are), none for a release without history or one the uninstall refuses (releases
// reports that one).
func TestRequestsOf(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	for _, gvk := range []schema.GroupVersionKind{secret, cm} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
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
	release := []authorship.Attributes{
		{Verb: "create", Group: "batch", Version: "v1", Resource: "jobs", Namespace: "team-a"},
		{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: "team-a", Name: "sh.helm.release.v1.web.v1"},
	}
	r := &Reconciler{Mapper: mapper, ReleaseTouches: fakeTouches{requests: release}}
	cl := &v1alpha1.Cleaner{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "preview"}}
	// "gone" has no history; "elsewhere" is refused by releases, not asked about.
	spec := &Spec{Releases: []v1alpha1.HelmRelease{{Name: "web", Delete: true}, {Name: "kept"}, {Name: "gone", Delete: true}, {Name: "elsewhere", Delete: true}}}
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
		release[0], release[1],
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests\n%+v\nwant\n%+v", got, want)
	}
}
