package objcache

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPackedQuotaRoundTrip(t *testing.T) {
	// Local, as the API machinery decodes times (and the informers hold them).
	created := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC).Local())
	deleted := metav1.NewTime(created.Add(time.Hour).Local())
	grace := int64(0)
	meta := metav1.ObjectMeta{Name: "compute", Namespace: "team-a", UID: "u-1", ResourceVersion: "42", Generation: 3, CreationTimestamp: created}
	for name, q := range map[string]*corev1.ResourceQuota{
		"a quota as the cache trims it": {ObjectMeta: meta, Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("10"), "requests.memory": resource.MustParse("20Gi"),
				"limits.cpu": resource.MustParse("20"), "pods": resource.MustParse("100")},
			Used: corev1.ResourceList{"requests.cpu": resource.MustParse("9500m"), "requests.memory": resource.MustParse("1500Mi"),
				"limits.cpu": resource.MustParse("1e3"), "pods": resource.MustParse("0")}}},
		"no status":             {ObjectMeta: meta},
		"empty lists, not none": {ObjectMeta: meta, Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{}, Used: corev1.ResourceList{}}},
		"being deleted, with labels, owner and finalizer": {ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "n", DeletionTimestamp: &deleted,
			DeletionGracePeriodSeconds: &grace, Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"resizer.io/x": "y"},
			Finalizers: []string{"f"}, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "K", Name: "o", UID: "u"}}},
			Status: corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("5")}}},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := PackQuota(q)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := p.DeepCopyObject().(*corev1.ResourceQuota)
			if !ok {
				t.Fatalf("DeepCopyObject is a %T", p.DeepCopyObject())
			}
			want := &corev1.ResourceQuota{ObjectMeta: q.ObjectMeta, Status: q.Status}
			want.SetGroupVersionKind(quotaKind)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("unpacked\n%#v\nwant\n%#v", got, want)
			}
			// The copies are the caller's own.
			for name := range got.Status.Used {
				got.Status.Used[name] = resource.MustParse("1")
			}
			if again := p.DeepCopyObject(); !reflect.DeepEqual(again, want) {
				t.Fatal("an unpacked quota shares its lists with the packed one")
			}
			if p.GetName() != q.Name || p.GetNamespace() != q.Namespace || p.GetResourceVersion() != q.ResourceVersion ||
				!reflect.DeepEqual(p.GetDeletionTimestamp(), q.DeletionTimestamp) || !reflect.DeepEqual(p.GetLabels(), q.Labels) ||
				p.GetObjectKind().GroupVersionKind() != quotaKind {
				t.Errorf("getters: %s/%s rv %s deleted %v labels %v kind %v", p.GetNamespace(), p.GetName(), p.GetResourceVersion(),
					p.GetDeletionTimestamp(), p.GetLabels(), p.GetObjectKind().GroupVersionKind())
			}
		})
	}
}

// BenchmarkPackedQuota reports the heap a cache holds per quota of four resources, trimmed to
// identity and status: as a ResourceQuota and packed.
func BenchmarkPackedQuota(b *testing.B) {
	quota := func(i int) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "tenant-" + string(rune('a'+i%26)),
			UID: "0f1c5b0e-7d3e-4a8e-9a43-2f7f3c4b5d6e", ResourceVersion: "123456", CreationTimestamp: metav1.Now()},
			Status: corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("10"), "requests.memory": resource.MustParse("20Gi"),
					"limits.cpu": resource.MustParse("20"), "limits.memory": resource.MustParse("40Gi")},
				Used: corev1.ResourceList{"requests.cpu": resource.MustParse("2"), "requests.memory": resource.MustParse("4Gi"),
					"limits.cpu": resource.MustParse("4"), "limits.memory": resource.MustParse("8Gi")}}}
	}
	heapPerObject(b, "quota", func(i int) any { return quota(i) })
	heapPerObject(b, "packed", func(i int) any {
		p, err := PackQuota(quota(i))
		if err != nil {
			b.Fatal(err)
		}
		return p
	})
}
