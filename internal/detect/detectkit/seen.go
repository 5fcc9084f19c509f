package detectkit

import (
	"context"
	"encoding/hex"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// ReadMetadata is the part of o's metadata a detector that watches w decides on: every label w
// names and every annotation with one of w's prefixes.
func ReadMetadata(w lifecycle.Watches, o client.Object) (labels, annotations map[string]string) {
	labels, annotations = map[string]string{}, map[string]string{}
	for _, k := range w.MetadataLabels {
		if v, ok := o.GetLabels()[k]; ok {
			labels[k] = v
		}
	}
	for k, v := range o.GetAnnotations() {
		for _, p := range w.MetadataAnnotationPrefixes {
			if strings.HasPrefix(k, p) {
				annotations[k] = v
				break
			}
		}
	}
	return labels, annotations
}

// Seen is what a look read of its objects (the target, then its Namespace; nil for none), as a
// detector watching w decides on them: their UIDs, whether they are being deleted, and
// ReadMetadata. It goes into lifecycle.Request.Seen. Before a merge, the same objects read from
// the API server must give the same Seen, or the look decided on a cache that was behind.
// Changes the detector does not read (a status, a rollout's revision annotation) leave it
// alone, so they never hold a merge back.
func Seen(w lifecycle.Watches, objs ...client.Object) string {
	var b strings.Builder
	for _, o := range objs {
		b.WriteString("\x00object\x00")
		if o == nil {
			continue
		}
		b.WriteString(string(o.GetUID()))
		if o.GetDeletionTimestamp() != nil {
			b.WriteString("\x00deleting")
		}
		labels, annotations := ReadMetadata(w, o)
		writeSorted(&b, "\x00labels", labels)
		writeSorted(&b, "\x00annotations", annotations)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(b.String()))
	return hex.EncodeToString(h.Sum(nil))
}

func writeSorted(b *strings.Builder, what string, m map[string]string) {
	b.WriteString(what)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// Label and annotation keys hold no NUL; values may hold anything, so their lengths
		// are written too and no two maps write the same bytes.
		b.WriteString("\x00" + k + "\x00" + strconv.Itoa(len(m[k])) + ":" + m[k])
	}
}

// SeenOf is Seen of a target obj whose Namespace is ns (nil: it has none).
func SeenOf(w lifecycle.Watches, obj client.Object, ns *metav1.PartialObjectMetadata) string {
	if ns == nil {
		return Seen(w, obj, nil) // not a nil *PartialObjectMetadata in a non-nil client.Object
	}
	return Seen(w, obj, ns)
}

// ReadObjects reads the object n of kind, and its Namespace (nil for a cluster-scoped kind), as
// metadata through r: the cache at a look, the API server before a merge (TargetReader). ok is
// false when there is nothing to decide about: either is gone or being deleted (forget(gone) as
// ReadTarget says).
func ReadObjects(ctx context.Context, r client.Reader, kind schema.GroupVersionKind, n types.NamespacedName, forget func(gone bool)) (
	obj, ns *metav1.PartialObjectMetadata, ok bool, err error) {
	obj = &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(kind)
	if ok, err := ReadTarget(ctx, r, n, obj, forget); !ok {
		return nil, nil, false, err
	}
	if obj.Namespace == "" {
		return obj, nil, true, nil
	}
	ns, ok, err = ReadNamespace(ctx, r, obj.Namespace)
	return obj, ns, ok, err
}

// TargetReader reads the target of a Key of a detector that watches w from reader (the API
// server) as the detector's looks read it from a cache (ReadObjects, then SeenOf), for the
// confirmation of a merge (pipeline.Confirmations). kinds are the kinds the detector's
// Reconcilers watch; a Key of another kind (a helm release, a VM) carries no Seen, and reads as
// none. ok is false when the target or its Namespace is gone or being deleted.
func TargetReader(reader client.Reader, kinds []schema.GroupVersionKind, w lifecycle.Watches) func(ctx context.Context, key lifecycle.Key) (string, bool, error) {
	byKindGroup := map[string]schema.GroupVersionKind{}
	for _, k := range kinds {
		byKindGroup[lifecycle.Target{Group: k.Group, Kind: k.Kind}.KindGroup()] = k
	}
	return func(ctx context.Context, key lifecycle.Key) (string, bool, error) {
		p, ok := key.Parts()
		kind, known := byKindGroup[p.KindGroup]
		if !ok || !known {
			return "", true, nil
		}
		obj, ns, ok, err := ReadObjects(ctx, reader, kind, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, func(bool) {})
		if !ok || err != nil {
			return "", false, err
		}
		return SeenOf(w, obj, ns), true, nil
	}
}
