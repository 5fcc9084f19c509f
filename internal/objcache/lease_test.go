package objcache

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// stateLease is a Lease as Kustos's state store writes one: its record in labels and
// annotations, the detector's state among them, and a holder.
func stateLease(i int) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Date(2026, 11, 27, 10, 0, 0, 123456000, time.UTC).Local())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kustos-inactivity-" + strconv.Itoa(i), Namespace: "kustos-system", UID: "0f1c5b0e-7d3e-4a8e-9a43-2f7f3c4b5d6e",
			ResourceVersion: "123456", CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC).Local()),
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kustos", "kustos.io/detector": "inactivity", "kustos.io/target-namespace": "wc-00012"},
			Annotations: map[string]string{"kustos.io/key": "inactivity/apps/Deployment/wc-00012/app-00012", "kustos.io/target-name": "app-00012",
				"kustos.io/state.last-activity": "2026-11-27T10:00:00Z", "resizer.io/last-modified": "2026-11-27T10:00:00.123456Z"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kustos-abc"), LeaseDurationSeconds: ptr.To[int32](60), RenewTime: &now},
	}
}

func TestPackedLeaseRoundTrip(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC).Local())
	for name, l := range map[string]*coordinationv1.Lease{
		"a state Lease":      stateLease(1),
		"no spec, no labels": {ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"}},
		"being deleted, with a finalizer": {ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", DeletionTimestamp: &deleted, Finalizers: []string{"f"}},
			Spec: coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](3)}},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := PackLease(l)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := p.DeepCopyObject().(*coordinationv1.Lease)
			if !ok {
				t.Fatalf("DeepCopyObject is a %T", p.DeepCopyObject())
			}
			want := l.DeepCopy()
			want.SetGroupVersionKind(leaseKind)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("unpacked\n%#v\nwant\n%#v", got, want)
			}
			if got.Spec.HolderIdentity != nil {
				*got.Spec.HolderIdentity = "changed" // the copy is the caller's own
				if again := p.DeepCopyObject(); !reflect.DeepEqual(again, want) {
					t.Fatal("an unpacked Lease shares its spec with the packed one")
				}
			}
			if !reflect.DeepEqual(p.GetAnnotations(), l.Annotations) || !reflect.DeepEqual(p.GetLabels(), l.Labels) ||
				p.GetName() != l.Name || p.GetObjectKind().GroupVersionKind() != leaseKind {
				t.Errorf("getters: %s %v %v %v", p.GetName(), p.GetLabels(), p.GetAnnotations(), p.GetObjectKind().GroupVersionKind())
			}
		})
	}
}

// BenchmarkPackedLease reports the heap a cache holds per state Lease: as a Lease and packed.
func BenchmarkPackedLease(b *testing.B) {
	heapPerObject(b, "lease", func(i int) any { return stateLease(i) })
	heapPerObject(b, "packed", func(i int) any {
		p, err := PackLease(stateLease(i))
		if err != nil {
			b.Fatal(err)
		}
		return p
	})
}
