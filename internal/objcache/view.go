package objcache

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MetadataView is a client.Reader that answers the metadata reads (PartialObjectMetadata,
// PartialObjectMetadataList) of Objects.Kinds from Objects, which reads them from the packed
// objects it holds, and every other read from Rest.
type MetadataView struct {
	Objects Cache
	Rest    client.Reader
}

var _ client.Reader = MetadataView{}

// Get reads obj.
func (v MetadataView) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if pom, ok := obj.(*metav1.PartialObjectMetadata); ok && v.Objects.Kinds[pom.GroupVersionKind()] {
		return v.Objects.Get(ctx, key, obj, opts...)
	}
	return v.Rest.Get(ctx, key, obj, opts...)
}

// List lists into list.
func (v MetadataView) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if pl, ok := list.(*metav1.PartialObjectMetadataList); ok {
		listGVK := pl.GroupVersionKind()
		if v.Objects.Kinds[listGVK.GroupVersion().WithKind(strings.TrimSuffix(listGVK.Kind, "List"))] {
			return v.Objects.List(ctx, list, opts...)
		}
	}
	return v.Rest.List(ctx, list, opts...)
}
