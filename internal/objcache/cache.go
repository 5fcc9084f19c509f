package objcache

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cache is a cache.Cache whose transform packs the unstructured objects it holds (PackTransform).
// It reads them as before: a Get or List of unstructured objects returns them unpacked, copies
// of the caller's own, whether or not it asked for no copy (the informer holds no unstructured
// object to hand out). The metadata of Kinds (PartialObjectMetadata) is read from those packed
// objects, not from an informer of its own that would hold each object a second time; the
// names of their objects by Keys, without a copy of any.
type Cache struct {
	cache.Cache
	Kinds map[schema.GroupVersionKind]bool
}

var _ cache.Cache = Cache{}

var errNoMetadata = errors.New("no metadata")

// PackTransform packs an unstructured object after next (another transform, or nil) has
// trimmed it; an object that does not pack (see Pack) is held as it is, and any other object
// is next's.
func PackTransform(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if next != nil {
			var err error
			if in, err = next(in); err != nil {
				return nil, err
			}
		}
		u, ok := in.(*unstructured.Unstructured)
		if !ok {
			return in, nil
		}
		p, err := Pack(u)
		if err != nil {
			return u, nil //nolint:nilerr // held unpacked: the readers handle both
		}
		return p, nil
	}
}

// Get reads obj: see Cache.
func (c Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return c.Cache.Get(ctx, key, obj, copyingGet(opts))
	case *metav1.PartialObjectMetadata:
		gvk := o.GroupVersionKind()
		if !c.Kinds[gvk] {
			break
		}
		idx, err := c.indexer(ctx, gvk)
		if err != nil {
			return err
		}
		// The informer's key: namespace/name, the name alone for a cluster-scoped object (whose
		// reader passes no namespace: unlike controller-runtime's reader, this one does not
		// look the kind's scope up).
		storeKey := key.Name
		if key.Namespace != "" {
			storeKey = key.Namespace + "/" + key.Name
		}
		item, exists, err := idx.GetByKey(storeKey)
		if err != nil {
			return err
		}
		if !exists {
			return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
		}
		return fillMetadata(o, item, gvk)
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

// List lists into list: see Cache. A metadata list of Kinds takes a namespace, a label
// selector and a limit; a field selector is refused (no index of those is kept here).
func (c Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		return c.Cache.List(ctx, list, copyingList(opts))
	case *metav1.PartialObjectMetadataList:
		listGVK := l.GroupVersionKind()
		gvk := listGVK.GroupVersion().WithKind(strings.TrimSuffix(listGVK.Kind, "List"))
		if !c.Kinds[gvk] {
			break
		}
		lo := client.ListOptions{}
		lo.ApplyOptions(opts)
		if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
			return fmt.Errorf("listing the metadata of %s from packed objects: field selectors are not supported", gvk.Kind)
		}
		items, err := c.items(ctx, gvk, lo.Namespace)
		if err != nil {
			return err
		}
		l.Items = make([]metav1.PartialObjectMetadata, 0, len(items))
		for _, item := range items {
			if lo.Limit > 0 && int64(len(l.Items)) >= lo.Limit {
				break
			}
			if lo.LabelSelector != nil && !lo.LabelSelector.Empty() && !lo.LabelSelector.Matches(labelsOf(item)) {
				continue
			}
			l.Items = append(l.Items, metav1.PartialObjectMetadata{})
			if err := fillMetadata(&l.Items[len(l.Items)-1], item, gvk); err != nil {
				return err
			}
		}
		return nil
	}
	return c.Cache.List(ctx, list, opts...)
}

// Keys are the namespaces and names of the cached objects of kind gvk (in namespace, or all):
// no object is copied or unpacked.
func (c Cache) Keys(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]types.NamespacedName, error) {
	idx, err := c.indexer(ctx, gvk)
	if err != nil {
		return nil, err
	}
	var keys []string
	if namespace == "" {
		keys = idx.ListKeys()
	} else if keys, err = idx.IndexKeys(toolscache.NamespaceIndex, namespace); err != nil {
		return nil, err
	}
	out := make([]types.NamespacedName, 0, len(keys))
	for _, k := range keys {
		ns, name, err := toolscache.SplitMetaNamespaceKey(k)
		if err != nil {
			return nil, err
		}
		out = append(out, types.NamespacedName{Namespace: ns, Name: name})
	}
	return out, nil
}

// items are the cached objects of kind gvk in namespace (all namespaces for "").
func (c Cache) items(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]any, error) {
	idx, err := c.indexer(ctx, gvk)
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		return idx.List(), nil
	}
	return idx.ByIndex(toolscache.NamespaceIndex, namespace)
}

// indexer is the store of the informer holding kind gvk as (packed) unstructured objects: it
// is started, and synced, as a read from the cache would start it.
func (c Cache) indexer(ctx context.Context, gvk schema.GroupVersionKind) (toolscache.Indexer, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	inf, err := c.GetInformer(ctx, u)
	if err != nil {
		return nil, err
	}
	withIndexer, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the informer of %s (%T) has no store to read", gvk.Kind, inf)
	}
	if !inf.HasSynced() {
		// A started cache returns its informers synced: this one has not started (as the
		// cache's own reads answer).
		return nil, &cache.ErrCacheNotStarted{}
	}
	return withIndexer.GetIndexer(), nil
}

// fillMetadata sets pom to the kind and metadata of item, a cached object (packed or not). A
// cached object whose metadata does not convert (never one the API server served) is an error
// naming it, not an empty object.
func fillMetadata(pom *metav1.PartialObjectMetadata, item any, gvk schema.GroupVersionKind) error {
	pom.SetGroupVersionKind(gvk)
	var err error
	var ns, name string
	switch o := item.(type) {
	case *Packed:
		ns, name = o.GetNamespace(), o.GetName()
		err = o.FillObjectMeta(&pom.ObjectMeta)
	case *unstructured.Unstructured:
		ns, name = o.GetNamespace(), o.GetName()
		err = fillUnstructuredMetadata(pom, o)
	default:
		return fmt.Errorf("cache of %s contained %T", gvk.Kind, item)
	}
	if err != nil {
		return fmt.Errorf("cached %s %s/%s: its metadata: %w", gvk.Kind, ns, name, err)
	}
	return nil
}

func fillUnstructuredMetadata(pom *metav1.PartialObjectMetadata, u *unstructured.Unstructured) error {
	pom.ObjectMeta = metav1.ObjectMeta{}
	m, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return errNoMetadata
	}
	return convertMetadata(m, &pom.ObjectMeta)
}

// labelsOf is a cached object's labels for a selector, without a copy of a packed object's.
func labelsOf(item any) packedLabels {
	switch o := item.(type) {
	case *Packed:
		if _, odd := o.metaRest["labels"]; !odd {
			return packedLabels{p: o}
		}
		return packedLabels{m: o.GetLabels()}
	case metav1.Object:
		return packedLabels{m: o.GetLabels()}
	}
	return packedLabels{}
}

// packedLabels is a labels.Labels over a packed object's labels (or a map).
type packedLabels struct {
	p *Packed
	m map[string]string
}

var _ labels.Labels = packedLabels{}

func (l packedLabels) Lookup(key string) (string, bool) {
	if l.p != nil {
		return l.p.Label(key)
	}
	v, ok := l.m[key]
	return v, ok
}

func (l packedLabels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

func (l packedLabels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

// copyingGet is opts as one GetOptions that asks for a copy: the cache reader copies (unpacks)
// every packed object it returns, and hands out no object of the informer's.
func copyingGet(opts []client.GetOption) *client.GetOptions {
	o := &client.GetOptions{}
	o.ApplyOptions(opts)
	o.UnsafeDisableDeepCopy = nil
	return o
}

// copyingList is opts as one ListOptions that asks for copies (see copyingGet).
func copyingList(opts []client.ListOption) *client.ListOptions {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	o.UnsafeDisableDeepCopy = nil
	return o
}

// convertMetadata is the API's conversion of an unstructured object's metadata.
func convertMetadata(md map[string]any, m *metav1.ObjectMeta) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(md, m)
}
