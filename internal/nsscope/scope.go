package nsscope

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Flag is the flag that sets the selector, named in errors.
const Flag = "--namespace-selector"

// Scope is the set of namespaces one installation serves. A nil *Scope, and one made from an
// empty selector, selects every namespace (the default: one installation for the cluster).
type Scope struct {
	text string
	sel  labels.Selector
	// namespaces reads Namespace metadata (the manager's cache; nil: only Matches works and
	// Selects answers from no Namespace at all).
	namespaces client.Reader
}

// Parse reads a selector as --namespace-selector takes it (labels.Parse's syntax:
// "kustos.io/shard=a", "tier in (gold,silver),!legacy"). The error names the flag.
func Parse(selector string) (labels.Selector, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", Flag, selector, err)
	}
	return sel, nil
}

// New is the Scope of selector, answered from namespaces (Namespace metadata, as
// metav1.PartialObjectMetadata).
func New(selector string, namespaces client.Reader) (*Scope, error) {
	sel, err := Parse(selector)
	if err != nil {
		return nil, err
	}
	return &Scope{text: selector, sel: sel, namespaces: namespaces}, nil
}

// All says whether every namespace is selected (no selector).
func (s *Scope) All() bool { return s == nil || s.sel.Empty() }

// String is the selector as given ("" for every namespace).
func (s *Scope) String() string {
	if s == nil {
		return ""
	}
	return s.text
}

// LabelKeys are the Namespace label keys the selector reads: the cache must keep them.
func (s *Scope) LabelKeys() []string {
	if s.All() {
		return nil
	}
	reqs, _ := s.sel.Requirements()
	seen := map[string]bool{}
	var out []string
	for _, r := range reqs {
		if !seen[r.Key()] {
			seen[r.Key()] = true
			out = append(out, r.Key())
		}
	}
	sort.Strings(out)
	return out
}

// Matches says whether a Namespace with these labels is selected.
func (s *Scope) Matches(nsLabels map[string]string) bool {
	return s.All() || s.sel.Matches(labels.Set(nsLabels))
}

// Selects says whether namespace is served, from its labels in the cache. A namespace the cache
// does not know (not created yet, or gone) is not selected: when it appears, its Namespace
// event is what enqueues its objects (see Namespaces). The empty namespace (cluster-scoped
// objects) is always selected: the selector is about namespaces, not cluster-wide objects.
func (s *Scope) Selects(ctx context.Context, namespace string) (bool, error) {
	if s.All() || namespace == "" {
		return true, nil
	}
	if s.namespaces == nil {
		return false, fmt.Errorf("%s: no reader of Namespaces to answer for %q", Flag, namespace)
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := s.namespaces.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading namespace %s for %s: %w", namespace, Flag, err)
	}
	return s.sel.Matches(labels.Set(ns.Labels)), nil
}

// Live is the same Scope answered from r instead: the author stamper asks the API server,
// because it may run before the cache has synced or before the cache has seen a Namespace
// created a moment before its Cleaner (a GitOps sync creates both together), and a Cleaner it
// wrongly leaves unstamped would never act. A nil Scope stays nil (every namespace).
func (s *Scope) Live(r client.Reader) *Scope {
	if s == nil {
		return nil
	}
	c := *s
	c.namespaces = r
	return &c
}

// Selecter is a Scope as the predicates use it.
type Selecter interface {
	Selects(ctx context.Context, namespace string) (bool, error)
	Matches(nsLabels map[string]string) bool
}

var _ Selecter = (*Scope)(nil)

// isNamespace says whether o is a Namespace (typed, or watched as metadata).
func isNamespace(o client.Object) bool {
	if _, ok := o.(*corev1.Namespace); ok {
		return true
	}
	gvk := o.GetObjectKind().GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Namespace"
}

// InScope says whether o belongs to a selected namespace: a Namespace by its own labels, a
// namespaced object by its namespace's, any other cluster-scoped object always. An error
// reading the namespace lets the object through: its reconcile asks again and fails visibly.
func InScope(s Selecter, o client.Object) bool {
	if s == nil || o == nil {
		return true
	}
	if isNamespace(o) {
		return s.Matches(o.GetLabels())
	}
	ok, err := s.Selects(context.Background(), o.GetNamespace())
	return ok || err != nil
}

// Objects is the predicate of a watch of namespaced objects: only those of selected namespaces
// are enqueued. A nil s lets everything through.
func Objects(s Selecter) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return InScope(s, o) })
}

// Namespaces is the predicate of a watch of Namespaces that maps to their objects: changed
// (what the consumer reads of a Namespace, e.g. its annotations) for selected Namespaces, and
// every Namespace that joins the selector (Joined). One that leaves the selector enqueues
// nothing: its objects' next look finds it unselected and does nothing.
func Namespaces(s Selecter, changed predicate.Predicate) predicate.Predicate {
	if s == nil {
		return changed
	}
	return predicate.Or[client.Object](Joined(s), predicate.And[client.Object](Objects(s), changed))
}

// Joined lets through the Namespaces that join the selector (created selected, or relabelled
// into it), so that their objects are looked at at once. A nil s: none (nothing ever joins).
func Joined(s Selecter) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return s != nil && s.Matches(e.Object.GetLabels()) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return s != nil && !s.Matches(e.ObjectOld.GetLabels()) && s.Matches(e.ObjectNew.GetLabels())
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
