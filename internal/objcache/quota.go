package objcache

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PackedQuota is a ResourceQuota as the manager's cache holds it: its metadata as Packed holds
// metadata, and its status (what the quota detector reads) as two slices. Its spec is not
// kept. Decoded, a quota's status is two Go maps of resource.Quantity, a full 8-slot group each
// (1,300 bytes for a quota of four resources); here they are 72 bytes per resource.
//
// Like Packed, it is read-only once packed, and its DeepCopyObject returns the object a cache
// reader returns: a *corev1.ResourceQuota of the caller's own, with metadata and status.
type PackedQuota struct {
	packedMeta
	hard, used       []namedQuantity
	hasHard, hasUsed bool // the lists were not nil (an empty list is not none)
}

type namedQuantity struct {
	name corev1.ResourceName
	q    resource.Quantity
}

var _ runtime.Object = (*PackedQuota)(nil)

var quotaKind = corev1.SchemeGroupVersion.WithKind("ResourceQuota")

// PackQuota packs q's metadata and status. A quota whose metadata does not convert (never one
// the API server served) is an error: cache it as it is.
func PackQuota(q *corev1.ResourceQuota) (*PackedQuota, error) {
	md, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&q.ObjectMeta)
	if err != nil {
		return nil, err
	}
	p := &PackedQuota{hard: quantities(q.Status.Hard), used: quantities(q.Status.Used),
		hasHard: q.Status.Hard != nil, hasUsed: q.Status.Used != nil}
	p.has |= hasMetadata
	if err := p.packMetadata(md); err != nil {
		return nil, err
	}
	return p, nil
}

// quantities is l in resource name order, each quantity a copy.
func quantities(l corev1.ResourceList) []namedQuantity {
	if len(l) == 0 {
		return nil
	}
	out := make([]namedQuantity, 0, len(l))
	for name, q := range l {
		out = append(out, namedQuantity{name: corev1.ResourceName(intern(string(name))), q: q.DeepCopy()})
	}
	slices.SortFunc(out, func(a, b namedQuantity) int { return strings.Compare(string(a.name), string(b.name)) })
	return out
}

func resourceList(l []namedQuantity, has bool) corev1.ResourceList {
	if !has {
		return nil
	}
	out := make(corev1.ResourceList, len(l))
	for _, e := range l {
		out[e.name] = e.q.DeepCopy()
	}
	return out
}

// Quota is the quota unpacked: metadata and status, maps of the caller's own.
func (p *PackedQuota) Quota() (*corev1.ResourceQuota, error) {
	q := &corev1.ResourceQuota{Status: corev1.ResourceQuotaStatus{Hard: resourceList(p.hard, p.hasHard), Used: resourceList(p.used, p.hasUsed)}}
	q.SetGroupVersionKind(quotaKind)
	if err := p.FillObjectMeta(&q.ObjectMeta); err != nil {
		return nil, err
	}
	return q, nil
}

// DeepCopyObject returns the quota unpacked (see PackedQuota). Its metadata was converted from
// an ObjectMeta when it was packed and converts back.
func (p *PackedQuota) DeepCopyObject() runtime.Object {
	q, err := p.Quota()
	if err != nil {
		panic("objcache: a packed quota's own metadata does not convert: " + err.Error())
	}
	return q
}

// GetObjectKind is v1 ResourceQuota: a PackedQuota is never anything else.
func (p *PackedQuota) GetObjectKind() schema.ObjectKind { return fixedKind{quotaKind} }

// fixedKind is the kind of a packed typed object, which is never another.
type fixedKind struct{ gvk schema.GroupVersionKind }

func (k fixedKind) GroupVersionKind() schema.GroupVersionKind { return k.gvk }

// SetGroupVersionKind does nothing: the kind is fixed.
func (fixedKind) SetGroupVersionKind(schema.GroupVersionKind) {}
