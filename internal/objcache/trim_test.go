package objcache

import (
	"reflect"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// quotaPrefix is the quota detector's annotation prefix (quota.AnnotationPrefix): the prefix the
// manager's cache keeps when the quota detector alone reads metadata.
const quotaPrefix = "resizer.io/"

// TestTrimUnstructured: an object of a kind a detector reads whole keeps apiVersion, kind,
// metadata (without managed fields and the client-side-apply copy) and the fields named; the
// rest goes. A path through something that is not a map keeps what it met, so the reader finds
// the same wrong shape as on the whole object.
func TestTrimUnstructured(t *testing.T) {
	deployment := func() map[string]any {
		return map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "team-a", "generation": int64(3),
				"labels":          map[string]any{"app": "web"},
				"annotations":     map[string]any{"kustos.io/owner": "ana", "other": "x", corev1.LastAppliedConfigAnnotation: "{…}"},
				"ownerReferences": []any{map[string]any{"kind": "Instance", "name": "i"}},
				"managedFields":   []any{map[string]any{"manager": "kubectl"}}},
			"spec": map[string]any{"replicas": int64(2), "paused": true,
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}}}},
			"status": map[string]any{"readyReplicas": int64(2)},
		}
	}
	cases := []struct {
		name  string
		obj   map[string]any
		paths [][]string
		want  map[string]any
	}{
		{"replicas only", deployment(), [][]string{{"spec", "replicas"}}, map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "team-a", "generation": int64(3),
				"labels":          map[string]any{"app": "web"},
				"annotations":     map[string]any{"kustos.io/owner": "ana", "other": "x"},
				"ownerReferences": []any{map[string]any{"kind": "Instance", "name": "i"}}},
			"spec": map[string]any{"replicas": int64(2)},
		}},
		{"a pause field and a map kept whole", deployment(), [][]string{{"spec", "paused"}, {"status"}}, map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "team-a", "generation": int64(3),
				"labels":          map[string]any{"app": "web"},
				"annotations":     map[string]any{"kustos.io/owner": "ana", "other": "x"},
				"ownerReferences": []any{map[string]any{"kind": "Instance", "name": "i"}}},
			"spec":   map[string]any{"paused": true},
			"status": map[string]any{"readyReplicas": int64(2)},
		}},
		{"absent fields are not made up", map[string]any{"apiVersion": "v1", "kind": "X", "metadata": map[string]any{"name": "x"}},
			[][]string{{"spec", "replicas"}, {"spec", "templateRef", "name"}},
			map[string]any{"apiVersion": "v1", "kind": "X", "metadata": map[string]any{"name": "x"}}},
		{"a path through a list keeps the list", map[string]any{"kind": "X", "metadata": map[string]any{"name": "x"},
			"spec": []any{"not", "a", "map"}, "status": map[string]any{}},
			[][]string{{"spec", "replicas"}},
			map[string]any{"kind": "X", "metadata": map[string]any{"name": "x"}, "spec": []any{"not", "a", "map"}}},
		{"metadata that is not a map stays as it is", map[string]any{"kind": "X", "metadata": "odd", "spec": map[string]any{"replicas": int64(1), "x": 1}},
			[][]string{{"spec", "replicas"}},
			map[string]any{"kind": "X", "metadata": "odd", "spec": map[string]any{"replicas": int64(1)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := TrimUnstructured(&unstructured.Unstructured{Object: tc.obj}, tc.paths)
			if !reflect.DeepEqual(got.Object, tc.want) {
				t.Errorf("trimmed to\n%v\nwant\n%v", got.Object, tc.want)
			}
		})
	}
}

func TestTrimObjectDropsWhatNobodyReads(t *testing.T) {
	bulky := map[string]string{corev1.LastAppliedConfigAnnotation: strings.Repeat("x", 4096), "team": "a"}
	managed := []metav1.ManagedFieldsEntry{{Manager: "argocd"}}

	t.Run("ResourceQuota keeps identity and status", func(t *testing.T) {
		q := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "team-a", ResourceVersion: "9", ManagedFields: managed, Annotations: bulky, Labels: bulky},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("10")}},
			Status:     corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"pods": resource.MustParse("10")}, Used: corev1.ResourceList{"pods": resource.MustParse("3")}},
		}
		out, err := TrimObject(q, []string{quotaPrefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		packed, ok := out.(*PackedQuota)
		if !ok {
			t.Fatalf("the cache holds a %T, not a packed quota", out)
		}
		got := packed.DeepCopyObject().(*corev1.ResourceQuota) //nolint:forcetypeassert // a PackedQuota unpacks to a quota
		if got.Name != "compute" || got.Namespace != "team-a" || got.ResourceVersion != "9" || len(got.Status.Used) != 1 || len(got.Status.Hard) != 1 {
			t.Errorf("trimmed quota lost what the detector reads: %+v", got)
		}
		if got.ManagedFields != nil || got.Annotations != nil || got.Labels != nil || got.Spec.Hard != nil {
			t.Errorf("trimmed quota kept what nobody reads: %+v", got)
		}
	})

	t.Run("Namespace metadata keeps only resizer.io annotations", func(t *testing.T) {
		ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: "team-a", ManagedFields: managed, Labels: bulky,
			Annotations: map[string]string{"resizer.io/enabled": "false", corev1.LastAppliedConfigAnnotation: "{}", "owner": "x"},
		}}
		out, err := TrimObject(ns, []string{quotaPrefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*metav1.PartialObjectMetadata)
		if got.Name != "team-a" || len(got.Annotations) != 1 || got.Annotations["resizer.io/enabled"] != "false" || got.Labels != nil || got.ManagedFields != nil {
			t.Errorf("trimmed namespace: %+v", got)
		}
	})

	t.Run("metadata keeps the labels a detector names", func(t *testing.T) {
		d := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: "web", ManagedFields: managed, Labels: map[string]string{"kustos.io/expiration-ignore": "true", "app": "web"},
			Annotations: map[string]string{"kustos.io/ttl": "1d", "resizer.io/enabled": "false", "owner": "x"},
		}}
		out, err := TrimObject(d, []string{"kustos.io/"}, []string{"kustos.io/expiration-ignore"})
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*metav1.PartialObjectMetadata)
		if len(got.Labels) != 1 || got.Labels["kustos.io/expiration-ignore"] != "true" || len(got.Annotations) != 1 || got.Annotations["kustos.io/ttl"] != "1d" {
			t.Errorf("trimmed metadata: labels %v, annotations %v", got.Labels, got.Annotations)
		}
	})

	t.Run("state Leases are packed, without managed fields and last-applied", func(t *testing.T) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "state-a-b", ManagedFields: managed,
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "resizer.io/last-modified": "2026-11-21T12:00:00Z"}}}
		out, err := TrimObject(l, []string{quotaPrefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		packed, ok := out.(*PackedLease)
		if !ok {
			t.Fatalf("the cache holds a %T, not a packed Lease", out)
		}
		got := packed.DeepCopyObject().(*coordinationv1.Lease) //nolint:forcetypeassert // a PackedLease unpacks to a Lease
		if got.Name != "state-a-b" || got.ManagedFields != nil || len(got.Annotations) != 1 || got.Annotations["resizer.io/last-modified"] == "" {
			t.Errorf("trimmed lease: %+v", got)
		}
	})

	t.Run("other objects lose managed fields and last-applied", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: managed,
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "team": "a"}}}
		out, err := TrimObject(cm, []string{quotaPrefix}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.ConfigMap) //nolint:forcetypeassert // returned as it came
		if got.ManagedFields != nil || len(got.Annotations) != 1 || got.Annotations["team"] != "a" {
			t.Errorf("trimmed object: %+v", got)
		}
	})
}

func TestTrimEventKeepsWhatTheDetectorReads(t *testing.T) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns", ResourceVersion: "7", Annotations: map[string]string{"a": "b"}},
		InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Name: "web-1", Namespace: "ns", UID: "u", FieldPath: "spec"},
		Reason:         "FailedCreate", Type: "Warning", Message: "exceeded quota: compute, …",
		FirstTimestamp: now, LastTimestamp: now, Count: 3,
		Source: corev1.EventSource{Component: "replicaset-controller", Host: "h"},
	}
	out, err := TrimEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Event)
	if got.Message != ev.Message || got.Reason != ev.Reason || got.Type != ev.Type || got.InvolvedObject.Kind != "ReplicaSet" ||
		got.InvolvedObject.Name != "web-1" || !got.LastTimestamp.Equal(&ev.LastTimestamp) || got.ResourceVersion != "7" {
		t.Errorf("trimmed event lost a field the detector reads: %+v", got)
	}
	if got.Annotations != nil || got.Source.Component != "" || got.InvolvedObject.UID != "" {
		t.Errorf("trimmed event kept fields nobody reads: %+v", got)
	}
}
