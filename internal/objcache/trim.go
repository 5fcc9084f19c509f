package objcache

// The trims of the manager's caches and of the target cache: what the informers keep of an
// object before it is held (and, for the kinds held by the ten thousand, packed).

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TrimUnstructured keeps of an object read whole only what the detectors that read its kind
// read: apiVersion, kind, metadata (without managed fields and the client-side-apply copy) and
// the fields at paths. Where a path's walk meets a value that is not a map before its end, that
// value is kept as it is, so that a reader finds the same wrong shape (and reports it) as on the
// whole object; a path the object does not have is not made up.
func TrimUnstructured(u *unstructured.Unstructured, paths [][]string) *unstructured.Unstructured {
	out := make(map[string]any, 3+len(paths))
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		if v, ok := u.Object[k]; ok {
			out[k] = v
		}
	}
	for _, p := range paths {
		copyPath(out, u.Object, p)
	}
	res := &unstructured.Unstructured{Object: out}
	StripMeta(res)
	return res
}

// copyPath copies the value at path from src into dst, making the maps on the way.
func copyPath(dst, src map[string]any, path []string) {
	for i, k := range path {
		v, ok := src[k]
		if !ok {
			return
		}
		next, isMap := v.(map[string]any)
		if i == len(path)-1 || !isMap {
			dst[k] = v
			return
		}
		d, ok := dst[k].(map[string]any)
		if !ok {
			d = map[string]any{}
			dst[k] = d
		}
		dst, src = d, next
	}
}

// TrimObject drops what no detector reads: managed fields and the client-side-apply copy of
// the whole object, which GitOps tools put on every object they apply. Quotas and Namespaces,
// the objects cached by the thousand, keep only what the detectors read: objects watched as
// metadata (Namespaces, the expiry detector's workloads) only the annotations with one of the
// detectors' prefixes and the labels they name. Quotas and Kustos's Leases are held packed
// (PackedQuota, PackedLease): a read returns them as they were, as a copy. A read of them that asks
// for no copy (client.UnsafeDisableDeepCopy) fails: the cache holds no Lease or quota to hand
// out.
func TrimObject(in any, annotationPrefixes, labelKeys []string) (any, error) {
	switch o := in.(type) {
	case *corev1.ResourceQuota:
		q := &corev1.ResourceQuota{
			TypeMeta:   o.TypeMeta,
			ObjectMeta: trimMeta(&o.ObjectMeta, nil),
			Status:     o.Status,
		}
		// Held by the ten thousand: packed (PackedQuota), read as a ResourceQuota.
		if p, err := PackQuota(q); err == nil {
			return p, nil
		}
		return q, nil
	case *coordinationv1.Lease:
		// Kustos's Leases (its state, a Lease per target with a decision or a state; the
		// replicas' and the groups'): packed (PackedLease), read as a Lease.
		StripMeta(o)
		if p, err := PackLease(o); err == nil {
			return p, nil
		}
		return o, nil
	case *metav1.PartialObjectMetadata:
		m := trimMeta(&o.ObjectMeta, func(k string) bool {
			for _, p := range annotationPrefixes {
				if strings.HasPrefix(k, p) {
					return true
				}
			}
			return false
		})
		for _, k := range labelKeys {
			if v, ok := o.Labels[k]; ok {
				if m.Labels == nil {
					m.Labels = map[string]string{}
				}
				m.Labels[k] = v
			}
		}
		return &metav1.PartialObjectMetadata{TypeMeta: o.TypeMeta, ObjectMeta: m}, nil
	}
	if obj, err := meta.Accessor(in); err == nil {
		StripMeta(obj)
	}
	return in, nil
}

// StripMeta drops what no detector reads from any object's metadata (DropUnread). An
// unstructured object's metadata map is then copied into one sized for what is left
// (Compact).
func StripMeta(obj metav1.Object) {
	DropUnread(obj)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			u.Object["metadata"] = Compact(md) // without the room of the managed fields
		}
	}
}

// DropUnread drops managed fields and the client-side-apply copy of the whole object. It is
// the target cache's strip: its objects are packed next (PackTransform), which copies
// what is left, so a compacted map would be made only to be thrown away.
func DropUnread(obj metav1.Object) {
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
			delete(a, corev1.LastAppliedConfigAnnotation)
			obj.SetAnnotations(a)
		}
	}
}

// trimMeta keeps identity, version and deletion state, and the annotations keep selects.
func trimMeta(m *metav1.ObjectMeta, keep func(string) bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
	for k, v := range m.Annotations {
		if keep != nil && keep(k) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// TrimEvent keeps only the fields the quota detector reads from an Event.
func TrimEvent(in any) (any, error) {
	ev, ok := in.(*corev1.Event)
	if !ok {
		return in, nil
	}
	return &corev1.Event{
		TypeMeta: ev.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: ev.Name, Namespace: ev.Namespace, UID: ev.UID,
			ResourceVersion: ev.ResourceVersion, CreationTimestamp: ev.CreationTimestamp,
		},
		InvolvedObject: corev1.ObjectReference{Kind: ev.InvolvedObject.Kind, Name: ev.InvolvedObject.Name, Namespace: ev.InvolvedObject.Namespace},
		Reason:         ev.Reason,
		Message:        ev.Message,
		Type:           ev.Type,
		FirstTimestamp: ev.FirstTimestamp,
		LastTimestamp:  ev.LastTimestamp,
		EventTime:      ev.EventTime,
		Series:         ev.Series,
		Count:          ev.Count,
	}, nil
}
