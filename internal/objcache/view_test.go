package objcache

import (
	"context"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	deployments = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMaps  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

// objects is a cache of unstructured objects by namespace/name, as an informer holds them; it
// records whether a read asked for no deep copy.
type objects struct {
	items      map[client.ObjectKey]*unstructured.Unstructured
	noDeepCopy bool
}

func (o *objects) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	o.noDeepCopy = hasUnsafe(opts)
	u, ok := o.items[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, key.Name)
	}
	obj.(*unstructured.Unstructured).Object = u.Object //nolint:forcetypeassert // the view reads unstructured objects
	return nil
}

func (o *objects) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	o.noDeepCopy = lo.UnsafeDisableDeepCopy != nil && *lo.UnsafeDisableDeepCopy
	ul := list.(*unstructured.UnstructuredList) //nolint:forcetypeassert // as above
	for _, name := range []string{"a", "b", "c"} {
		for key, u := range o.items {
			if key.Name == name && (lo.Namespace == "" || key.Namespace == lo.Namespace) {
				ul.Items = append(ul.Items, *u)
			}
		}
	}
	return nil
}

func hasUnsafe(opts []client.GetOption) bool {
	for _, o := range opts {
		if o == client.UnsafeDisableDeepCopy {
			return true
		}
	}
	return false
}

// rest records the reads that are not the view's.
type rest struct{ got []string }

func (r *rest) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.got = append(r.got, "get "+obj.GetObjectKind().GroupVersionKind().Kind+" "+key.String())
	return nil
}

func (r *rest) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	r.got = append(r.got, "list "+list.GetObjectKind().GroupVersionKind().Kind)
	return nil
}

func deployment(ns, name string, meta map[string]any) *unstructured.Unstructured {
	m := map[string]any{"name": name, "namespace": ns}
	for k, v := range meta {
		m[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m,
		"spec": map[string]any{"replicas": int64(1)}, "kustos.io/trimmed-with": int64(1)}}
}

func TestMetadataViewGet(t *testing.T) {
	created := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	cached := &objects{items: map[client.ObjectKey]*unstructured.Unstructured{
		{Namespace: "team-a", Name: "web"}: deployment("team-a", "web", map[string]any{
			"uid": "u-1", "resourceVersion": "42", "generation": int64(3), "creationTimestamp": created.Format(time.RFC3339),
			"labels":          map[string]any{"app": "web"},
			"annotations":     map[string]any{"kustos.io/ttl": "1d"},
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-0"}},
		}),
		{Namespace: "team-a", Name: "broken"}:     {Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": "not a map"}},
		{Namespace: "team-a", Name: "bad-labels"}: deployment("team-a", "bad-labels", map[string]any{"labels": []any{"x"}}),
	}}
	other := &rest{}
	v := MetadataView{Objects: cached, Kinds: map[schema.GroupVersionKind]bool{deployments: true}, Rest: other}

	pom := &metav1.PartialObjectMetadata{}
	pom.SetGroupVersionKind(deployments)
	if err := v.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "web"}, pom); err != nil {
		t.Fatal(err)
	}
	want := metav1.ObjectMeta{Name: "web", Namespace: "team-a", UID: "u-1", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: metav1.NewTime(created.Local()), Labels: map[string]string{"app": "web"},
		Annotations:     map[string]string{"kustos.io/ttl": "1d"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u-0"}}}
	if !reflect.DeepEqual(pom.ObjectMeta, want) || pom.GroupVersionKind() != deployments {
		t.Errorf("got %s %+v\nwant %+v", pom.GroupVersionKind(), pom.ObjectMeta, want)
	}
	if !cached.noDeepCopy {
		t.Error("the cached object was deep-copied to read its metadata")
	}
	pom.Labels["app"] = "changed"
	if cached.items[client.ObjectKey{Namespace: "team-a", Name: "web"}].GetLabels()["app"] != "web" {
		t.Error("a change to the metadata read changed the cached object")
	}

	for name, wantErr := range map[string]func(error) bool{
		"missing":    apierrors.IsNotFound,
		"broken":     func(err error) bool { return err != nil && !apierrors.IsNotFound(err) },
		"bad-labels": func(err error) bool { return err != nil && !apierrors.IsNotFound(err) },
	} {
		t.Run(name, func(t *testing.T) {
			pom := &metav1.PartialObjectMetadata{}
			pom.SetGroupVersionKind(deployments)
			if err := v.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: name}, pom); !wantErr(err) {
				t.Errorf("error %v", err)
			}
		})
	}

	cm := &metav1.PartialObjectMetadata{}
	cm.SetGroupVersionKind(configMaps)
	if err := v.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "web"}, cm); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(deployments)
	if err := v.Get(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "web"}, u); err != nil {
		t.Fatal(err)
	}
	if want := []string{"get ConfigMap team-a/web", "get Deployment team-a/web"}; !reflect.DeepEqual(other.got, want) {
		t.Errorf("reads passed on %q, want %q (another kind, and not a metadata read)", other.got, want)
	}
}

func TestMetadataViewList(t *testing.T) {
	cached := &objects{items: map[client.ObjectKey]*unstructured.Unstructured{
		{Namespace: "team-a", Name: "a"}: deployment("team-a", "a", map[string]any{"labels": map[string]any{"app": "a"}}),
		{Namespace: "team-a", Name: "b"}: deployment("team-a", "b", nil),
		{Namespace: "team-b", Name: "c"}: deployment("team-b", "c", nil),
	}}
	other := &rest{}
	v := MetadataView{Objects: cached, Kinds: map[schema.GroupVersionKind]bool{deployments: true}, Rest: other}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(deployments.GroupVersion().WithKind("DeploymentList"))
	if err := v.List(context.Background(), list, client.InNamespace("team-a")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range list.Items {
		got = append(got, it.GroupVersionKind().Kind+" "+it.Namespace+"/"+it.Name)
	}
	if want := []string{"Deployment team-a/a", "Deployment team-a/b"}; !reflect.DeepEqual(got, want) || list.Items[0].Labels["app"] != "a" {
		t.Errorf("listed %q (labels %v), want %q", got, list.Items[0].Labels, want)
	}
	if !cached.noDeepCopy {
		t.Error("the cached objects were deep-copied to list their metadata")
	}
	cms := &metav1.PartialObjectMetadataList{}
	cms.SetGroupVersionKind(configMaps.GroupVersion().WithKind("ConfigMapList"))
	if err := v.List(context.Background(), cms); err != nil {
		t.Fatal(err)
	}
	if err := v.List(context.Background(), &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "apps/v1", "kind": "DeploymentList"}}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"list ConfigMapList", "list DeploymentList"}; !reflect.DeepEqual(other.got, want) {
		t.Errorf("lists passed on %q, want %q", other.got, want)
	}
}
