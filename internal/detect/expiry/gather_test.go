package expiry

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// metadataReader answers Gets of object metadata from a map, as a cache or the API server
// would: the one read gather and TargetReader share, nothing else.
type metadataReader map[string]*metav1.PartialObjectMetadata

func (m metadataReader) Get(_ context.Context, n types.NamespacedName, obj client.Object, _ ...client.GetOption) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	o, ok := m[gvk.Kind+"/"+n.Namespace+"/"+n.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, n.Name)
	}
	o.DeepCopyInto(obj.(*metav1.PartialObjectMetadata))
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

func (m metadataReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	panic("not read")
}

func (m metadataReader) objects() metadataReader {
	out := metadataReader{}
	for k, o := range m {
		out[k] = o.DeepCopy()
	}
	return out
}

// TestTargetReader: the read before a merge gives what the look put into Request.Seen when
// the API server has the target and its Namespace as the cache had them, and something else
// once the target is opted out; a target gone, or of a kind no Reconciler watches (a helm
// release), keeps no merge waiting.
func TestTargetReader(t *testing.T) {
	deployments := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	kinds := []schema.GroupVersionKind{detectkit.NamespaceGVK, deployments}
	cache := metadataReader{
		"Deployment/team-a/preview": {ObjectMeta: metav1.ObjectMeta{Name: "preview", Namespace: "team-a", UID: "u1", ResourceVersion: "7",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)),
			Annotations:       map[string]string{AnnotationOwner: "ana@example.com", AnnotationTTL: "1h"}}},
		"Namespace//team-a": {ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "n1"}},
	}
	look := func(t *testing.T, kind schema.GroupVersionKind, n types.NamespacedName) string {
		r := &Reconciler{Cache: cache, Kind: kind, Now: func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }}
		g, ok, err := r.gather(context.Background(), n, logr.Discard())
		if err != nil || !ok {
			t.Fatalf("gather: ok %v, %v", ok, err)
		}
		return g.seen
	}
	preview := lifecycle.KeyFor(DetectorName, lifecycle.Target{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "preview"})
	rows := []struct {
		name       string
		key        lifecycle.Key
		live       func(m metadataReader)
		seen       func(t *testing.T) string // what the look read ("" for none)
		same, gone bool
	}{
		{"as the cache had it", preview, func(metadataReader) {}, func(t *testing.T) string {
			return look(t, deployments, types.NamespacedName{Namespace: "team-a", Name: "preview"})
		}, true, false},
		{"a status write only", preview, func(m metadataReader) { m["Deployment/team-a/preview"].ResourceVersion = "8" }, func(t *testing.T) string {
			return look(t, deployments, types.NamespacedName{Namespace: "team-a", Name: "preview"})
		}, true, false},
		{"opted out", preview, func(m metadataReader) { m["Deployment/team-a/preview"].Labels = map[string]string{LabelIgnore: "true"} }, func(t *testing.T) string {
			return look(t, deployments, types.NamespacedName{Namespace: "team-a", Name: "preview"})
		}, false, false},
		{"its Namespace opted out", preview, func(m metadataReader) {
			m["Namespace//team-a"].Annotations = map[string]string{"kustos.io/expiry-ignore": "true"}
		}, func(t *testing.T) string {
			return look(t, deployments, types.NamespacedName{Namespace: "team-a", Name: "preview"})
		}, false, false},
		{"a Namespace as the target", lifecycle.KeyFor(DetectorName, lifecycle.Target{Version: "v1", Kind: "Namespace", Name: "team-a"}), func(metadataReader) {}, func(t *testing.T) string {
			return look(t, detectkit.NamespaceGVK, types.NamespacedName{Name: "team-a"})
		}, true, false},
		{"gone", preview, func(m metadataReader) { delete(m, "Deployment/team-a/preview") }, nil, false, true},
		{"being deleted", preview, func(m metadataReader) { now := metav1.Now(); m["Deployment/team-a/preview"].DeletionTimestamp = &now }, nil, false, true},
		{"a kind no Reconciler watches", lifecycle.KeyFor(DetectorName, lifecycle.Target{Group: "helm.sh", Version: "v3", Kind: "Release", Namespace: "team-a", Name: "preview"}),
			func(metadataReader) {}, func(*testing.T) string { return "" }, true, false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			live := cache.objects()
			row.live(live)
			got, exists, err := TargetReader(live, kinds)(context.Background(), row.key)
			if err != nil {
				t.Fatal(err)
			}
			if exists == row.gone {
				t.Fatalf("exists %v, want %v", exists, !row.gone)
			}
			if row.gone {
				return
			}
			if seen := row.seen(t); (got == seen) != row.same {
				t.Errorf("read before the merge %q, the look's %q: same %v, want %v", got, seen, got == seen, row.same)
			}
		})
	}
}
