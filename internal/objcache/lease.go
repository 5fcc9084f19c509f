package objcache

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PackedLease is a Lease as the manager's cache holds Kustos's Leases (its state, one per
// target with a decision or a state to keep: thousands in a large cluster): its metadata as Packed
// holds metadata, its labels and annotations (the record and the detector's state) in flat
// slices instead of two maps, and its spec as it is. Like Packed, it is read-only once packed,
// and its DeepCopyObject returns a *coordinationv1.Lease of the caller's own.
type PackedLease struct {
	packedMeta
	spec coordinationv1.LeaseSpec
}

var _ runtime.Object = (*PackedLease)(nil)

var leaseKind = coordinationv1.SchemeGroupVersion.WithKind("Lease")

// PackLease packs l's metadata and spec. A Lease whose metadata does not convert (never one
// the API server served) is an error: cache it as it is.
func PackLease(l *coordinationv1.Lease) (*PackedLease, error) {
	md, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&l.ObjectMeta)
	if err != nil {
		return nil, err
	}
	p := &PackedLease{spec: *l.Spec.DeepCopy()}
	p.has |= hasMetadata
	if err := p.packMetadata(md); err != nil {
		return nil, err
	}
	return p, nil
}

// Lease is the Lease unpacked, of the caller's own.
func (p *PackedLease) Lease() (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{Spec: *p.spec.DeepCopy()}
	l.SetGroupVersionKind(leaseKind)
	if err := p.FillObjectMeta(&l.ObjectMeta); err != nil {
		return nil, err
	}
	return l, nil
}

// DeepCopyObject returns the Lease unpacked (see PackedLease).
func (p *PackedLease) DeepCopyObject() runtime.Object {
	l, err := p.Lease()
	if err != nil {
		panic("objcache: a packed Lease's own metadata does not convert: " + err.Error())
	}
	return l
}

// GetObjectKind is coordination.k8s.io/v1 Lease: a PackedLease is never anything else.
func (p *PackedLease) GetObjectKind() schema.ObjectKind { return fixedKind{leaseKind} }
