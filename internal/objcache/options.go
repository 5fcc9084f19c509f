package objcache

import (
	"maps"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// CacheOptions keeps the informer caches as small as the work allows: this is what makes
// Kustos cheap in a busy cluster. watches are the detectors' registrations; the caches hold
// their union.
func CacheOptions(stateNamespace string, stateLabels map[string]string, watches ...lifecycle.Watches) cache.Options {
	var prefixes, labelKeys []string
	var eventFields, secretLabels map[string]string
	// Kinds cached in a way of their own: unstructured objects trimmed to fields, metadata kept
	// with every label and annotation. One entry (one informer cache) per kind.
	type kindCache struct {
		fields        [][]string
		trimsObjects  bool
		wholeMetadata bool
	}
	kinds := map[schema.GroupVersionKind]*kindCache{}
	kindOf := func(k lifecycle.ObjectKind) *kindCache {
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		if kinds[gvk] == nil {
			kinds[gvk] = &kindCache{}
		}
		return kinds[gvk]
	}
	readsEvents := false
	for _, w := range watches {
		prefixes = append(prefixes, w.MetadataAnnotationPrefixes...)
		labelKeys = append(labelKeys, w.MetadataLabels...)
		for k, paths := range w.ObjectFields {
			kc := kindOf(k)
			kc.fields, kc.trimsObjects = append(kc.fields, paths...), true
		}
		for _, k := range w.WholeMetadata {
			kindOf(k).wholeMetadata = true
		}
		if w.SecretLabels != nil {
			secretLabels = w.SecretLabels // one detector reads Secrets
		}
		if w.EventFields == nil {
			continue
		}
		if !readsEvents {
			readsEvents, eventFields = true, maps.Clone(w.EventFields)
			continue
		}
		// One informer per type: keep what both selectors require, which lets both through.
		for k, v := range eventFields {
			if w.EventFields[k] != v {
				delete(eventFields, k)
			}
		}
	}
	byObject := map[client.Object]cache.ByObject{
		// Only our own state Leases, only in our namespace.
		&coordinationv1.Lease{}: {
			Namespaces: map[string]cache.Config{stateNamespace: {}},
			Label:      labels.SelectorFromSet(stateLabels),
		},
	}
	if readsEvents {
		byObject[&corev1.Event{}] = cache.ByObject{Field: fields.SelectorFromSet(eventFields), Transform: TrimEvent}
	}
	if secretLabels != nil {
		// Only helm's release records, and only their metadata (the watch is metadata-only):
		// the cache never holds a Secret's data.
		byObject[&corev1.Secret{}] = cache.ByObject{Label: labels.SelectorFromSet(secretLabels)}
	}
	defaultTransform := func(in any) (any, error) { return TrimObject(in, prefixes, labelKeys) }
	for gvk, kc := range kinds {
		if FilteredKinds[gvk] {
			continue // its cache holds only what the selectors above let through, as it is
		}
		// One informer cache per such kind: its unstructured objects keep only what the
		// detectors reading them read, its metadata every label and annotation where a detector
		// reads them all; anything else is trimmed as any other kind's.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		byObject[u] = cache.ByObject{Transform: func(in any) (any, error) {
			switch o := in.(type) {
			case *unstructured.Unstructured:
				if kc.trimsObjects {
					// The kind is set on the copy: readers that skip the deep copy (and with it
					// controller-runtime's setting of the kind) find it there.
					t := TrimUnstructured(o, kc.fields)
					t.SetGroupVersionKind(gvk)
					return t, nil
				}
			case *metav1.PartialObjectMetadata:
				if kc.wholeMetadata {
					StripMeta(o)
					return o, nil
				}
			}
			return defaultTransform(in)
		}}
	}
	return cache.Options{
		DefaultTransform: defaultTransform,
		ByObject:         byObject,
	}
}

// FilteredKinds are the kinds whose cache CacheOptions filters by label, field or namespace:
// no detector may read anything else of them from the manager's cache.
var FilteredKinds = map[schema.GroupVersionKind]bool{
	coordinationv1.SchemeGroupVersion.WithKind("Lease"): true,
	corev1.SchemeGroupVersion.WithKind("Event"):         true,
	corev1.SchemeGroupVersion.WithKind("Secret"):        true,
}
