package cachetest_test

import (
	"context"
	"os"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/objcache"
	"github.com/kustos-dev/kustos/internal/testenv"
)

var (
	k8s client.Client
	cfg *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "objcache", 3*time.Minute, testenv.Options{}, func(_ context.Context, env *testenv.Env) (err error) {
		cfg = env.Config
		k8s, err = client.New(env.Config, client.Options{})
		return err
	}))
}

var configMaps = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// TestCacheReadsPackedObjects: a cache whose transform packs is read as one that does not, on
// a real API server: unstructured reads get copies of their own (even when they ask for none),
// metadata reads of its Kinds are answered from the packed objects as the API server answers
// them, and Keys names the objects.
func TestCacheReadsPackedObjects(t *testing.T) {
	ctx := t.Context()
	nsA, nsB := namespace(t), namespace(t)
	owner := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: nsA}}
	if err := k8s.Create(ctx, &owner); err != nil {
		t.Fatal(err)
	}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "a1", Namespace: nsA, Labels: map[string]string{"app": "x"},
			Annotations: map[string]string{"kustos.io/expires-at": "2026-12-01T00:00:00Z"}}, Data: map[string]string{"k": "v"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a2", Namespace: nsA, Labels: map[string]string{"app": "y"}, Finalizers: []string{"kustos.io/test"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: nsB, Labels: map[string]string{"app": "x"}}},
	} {
		if err := k8s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cm.Finalizers = nil
			_ = k8s.Update(context.Background(), cm)
		})
	}

	c := packingCache(t)

	live := func(name, ns string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(configMaps)
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
			t.Fatal(err)
		}
		return u
	}

	t.Run("Get unstructured: the object as served, a copy of the caller's own", func(t *testing.T) {
		// Both ways of asking for no copy: the option, and options carrying it.
		for _, noCopy := range []client.GetOption{client.UnsafeDisableDeepCopy, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(configMaps)
			if err := c.Get(ctx, types.NamespacedName{Namespace: nsA, Name: "a1"}, u, noCopy); err != nil {
				t.Fatal(err)
			}
			if want := live("a1", nsA); !reflect.DeepEqual(u.Object, want.Object) {
				t.Fatalf("read\n%v\nserved\n%v", u.Object, want.Object)
			}
			u.SetLabels(map[string]string{"app": "changed"}) // the second read must not see this
		}
	})

	t.Run("the informer holds packed objects", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(configMaps)
		inf, err := c.GetInformer(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range inf.(toolscache.SharedIndexInformer).GetIndexer().List() { //nolint:forcetypeassert // client-go's informer
			if _, ok := item.(*objcache.Packed); !ok {
				t.Errorf("the informer holds a %T", item)
			}
		}
	})

	t.Run("List unstructured: namespace and label selector", func(t *testing.T) {
		ul := &unstructured.UnstructuredList{}
		ul.SetGroupVersionKind(configMaps.GroupVersion().WithKind("ConfigMapList"))
		if err := c.List(ctx, ul, client.InNamespace(nsA), client.MatchingLabels{"app": "x"}, &client.ListOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err != nil {
			t.Fatal(err)
		}
		if len(ul.Items) != 1 || !reflect.DeepEqual(ul.Items[0].Object, live("a1", nsA).Object) {
			t.Fatalf("listed %v", ul.Items)
		}
	})

	metaOf := func(name, ns string) metav1.ObjectMeta {
		pom := &metav1.PartialObjectMetadata{}
		pom.SetGroupVersionKind(configMaps)
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pom); err != nil {
			t.Fatal(err)
		}
		return pom.ObjectMeta
	}

	t.Run("Get metadata: as the API server serves it", func(t *testing.T) {
		for _, name := range []string{"a1", "a2"} {
			pom := &metav1.PartialObjectMetadata{}
			pom.SetGroupVersionKind(configMaps)
			if err := c.Get(ctx, types.NamespacedName{Namespace: nsA, Name: name}, pom); err != nil {
				t.Fatal(err)
			}
			if want := metaOf(name, nsA); !reflect.DeepEqual(pom.ObjectMeta, want) {
				t.Errorf("%s: read\n%#v\nserved\n%#v", name, pom.ObjectMeta, want)
			}
			if pom.GroupVersionKind() != configMaps {
				t.Errorf("%s: kind %v", name, pom.GroupVersionKind())
			}
		}
		pom := &metav1.PartialObjectMetadata{}
		pom.SetGroupVersionKind(configMaps)
		if err := c.Get(ctx, types.NamespacedName{Namespace: nsA, Name: "none"}, pom); !apierrors.IsNotFound(err) {
			t.Errorf("a missing object: %v", err)
		}
	})

	t.Run("List metadata: namespace, selector, limit; a field selector refused", func(t *testing.T) {
		list := func(opts ...client.ListOption) ([]string, error) {
			pl := &metav1.PartialObjectMetadataList{}
			pl.SetGroupVersionKind(configMaps.GroupVersion().WithKind("ConfigMapList"))
			err := c.List(ctx, pl, opts...)
			var names []string
			for _, i := range pl.Items {
				if i.Name != "kube-root-ca.crt" {
					names = append(names, i.Namespace+"/"+i.Name)
				}
			}
			sort.Strings(names)
			return names, err
		}
		for _, tc := range []struct {
			name string
			opts []client.ListOption
			want []string
		}{
			{"a namespace", []client.ListOption{client.InNamespace(nsA)}, []string{nsA + "/a1", nsA + "/a2", nsA + "/owner"}},
			{"a selector, everywhere", []client.ListOption{client.MatchingLabels{"app": "x"}}, []string{nsA + "/a1", nsB + "/b1"}},
			{"a set-based selector", []client.ListOption{client.InNamespace(nsA), client.MatchingLabelsSelector{Selector: mustSelector(t, "app notin (x), app")}},
				[]string{nsA + "/a2"}},
		} {
			sort.Strings(tc.want)
			got, err := list(tc.opts...)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
			}
		}
		if got, err := list(client.InNamespace(nsA), client.Limit(1)); err != nil || len(got) > 1 {
			t.Errorf("limit 1: %v, %v", got, err)
		}
		if _, err := list(client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", "a1")}); err == nil {
			t.Error("a field selector was not refused")
		}
	})

	t.Run("Keys", func(t *testing.T) {
		keys, err := c.Keys(ctx, configMaps, nsB)
		if err != nil {
			t.Fatal(err)
		}
		got := map[types.NamespacedName]bool{}
		for _, k := range keys {
			got[k] = true
		}
		if !got[types.NamespacedName{Namespace: nsB, Name: "b1"}] || got[types.NamespacedName{Namespace: nsA, Name: "a1"}] {
			t.Errorf("keys in %s: %v", nsB, keys)
		}
		all, err := c.Keys(ctx, configMaps, "")
		if err != nil || len(all) < 4 {
			t.Errorf("all keys: %v, %v", all, err)
		}
	})
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "objcache-"}}
	if err := k8s.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// counting is a client.Reader that counts the reads it passes on.
type counting struct {
	client.Reader
	reads int
}

func (c *counting) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *counting) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.reads++
	return c.Reader.List(ctx, list, opts...)
}

// TestMetadataViewRoutes: the metadata reads of the Cache's kinds go to the Cache, every
// other read (another kind's metadata, a whole object) to Rest.
func TestMetadataViewRoutes(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t)
	if err := k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	c := packingCache(t)
	others := &counting{Reader: k8s}
	v := objcache.MetadataView{Objects: c, Rest: others}
	pom := func(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(gvk)
		return o
	}
	pomList := func(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
		o := &metav1.PartialObjectMetadataList{}
		o.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		return o
	}
	namespaces := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	for _, tc := range []struct {
		name   string
		read   func() error
		toRest bool
	}{
		{"a Cache kind's metadata", func() error { return v.Get(ctx, types.NamespacedName{Namespace: ns, Name: "c"}, pom(configMaps)) }, false},
		{"a Cache kind's metadata list", func() error { return v.List(ctx, pomList(configMaps), client.InNamespace(ns)) }, false},
		{"another kind's metadata", func() error { return v.Get(ctx, types.NamespacedName{Name: ns}, pom(namespaces)) }, true},
		{"another kind's metadata list", func() error { return v.List(ctx, pomList(namespaces)) }, true},
		{"a whole object of a Cache kind", func() error {
			return v.Get(ctx, types.NamespacedName{Namespace: ns, Name: "c"}, &corev1.ConfigMap{})
		}, true},
	} {
		before := others.reads
		if err := tc.read(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if got := others.reads > before; got != tc.toRest {
			t.Errorf("%s: read from Rest %v, want %v", tc.name, got, tc.toRest)
		}
	}
}

// packingCache is a started, synced cache packing what it holds, answering the metadata of
// ConfigMaps from the packed objects; it stops with the test.
func packingCache(t *testing.T) objcache.Cache {
	t.Helper()
	inner, err := cache.New(cfg, cache.Options{DefaultTransform: objcache.PackTransform(nil)})
	if err != nil {
		t.Fatal(err)
	}
	c := objcache.Cache{Cache: inner, Kinds: map[schema.GroupVersionKind]bool{configMaps: true}}
	go func() { _ = c.Start(t.Context()) }()
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("the cache did not sync")
	}
	return c
}
