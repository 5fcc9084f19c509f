package objcache

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MetadataView is a client.Reader that answers metadata reads (PartialObjectMetadata,
// PartialObjectMetadataList) of Kinds from Objects, a cache holding those kinds as unstructured
// objects, and every other read from Rest.
type MetadataView struct {
	Objects client.Reader
	Kinds   map[schema.GroupVersionKind]bool
	Rest    client.Reader
}

var _ client.Reader = MetadataView{}

// Get reads obj; a PartialObjectMetadata of one of Kinds is filled from the cached object's
// metadata (without a deep copy of the cached object: the conversion makes maps of its own).
func (v MetadataView) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	pom, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || !v.Kinds[pom.GroupVersionKind()] {
		return v.Rest.Get(ctx, key, obj, opts...)
	}
	gvk := pom.GroupVersionKind()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := v.Objects.Get(ctx, key, u, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	return fillMetadata(pom, u, gvk)
}

// List lists into list; a PartialObjectMetadataList of one of Kinds is filled from the cached
// objects' metadata.
func (v MetadataView) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	pl, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok {
		return v.Rest.List(ctx, list, opts...)
	}
	listGVK := pl.GroupVersionKind()
	gvk := listGVK.GroupVersion().WithKind(strings.TrimSuffix(listGVK.Kind, "List"))
	if !v.Kinds[gvk] {
		return v.Rest.List(ctx, list, opts...)
	}
	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(listGVK)
	if err := v.Objects.List(ctx, ul, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return err
	}
	pl.ResourceVersion, pl.Continue = ul.GetResourceVersion(), ul.GetContinue()
	pl.Items = make([]metav1.PartialObjectMetadata, len(ul.Items))
	for i := range ul.Items {
		if err := fillMetadata(&pl.Items[i], &ul.Items[i], gvk); err != nil {
			return err
		}
	}
	return nil
}

// fillMetadata sets pom to u's kind and metadata. A cached object whose metadata does not
// convert (never one the API server served) is an error naming it, not an empty object.
func fillMetadata(pom *metav1.PartialObjectMetadata, u *unstructured.Unstructured, gvk schema.GroupVersionKind) error {
	pom.SetGroupVersionKind(gvk)
	pom.ObjectMeta = metav1.ObjectMeta{}
	m, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("cached %s %s/%s has no metadata", gvk.Kind, u.GetNamespace(), u.GetName())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &pom.ObjectMeta); err != nil {
		return fmt.Errorf("cached %s %s/%s: its metadata: %w", gvk.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}
