package detectkit

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// Pipeline is the change pipeline as a detector uses it (*pipeline.Pipeline).
type Pipeline interface {
	Run(ctx context.Context, req lifecycle.Request) (lifecycle.Result, error)
}

// Reporter writes Warning Events about metadata a detector cannot use, once per id.
type Reporter interface {
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
}

// Scope says which namespaces this installation serves (--namespace-selector;
// *nsscope.Scope): objects of other namespaces, and those Namespaces themselves, belong to
// another installation.
type Scope interface {
	Selects(ctx context.Context, namespace string) (bool, error)
	Matches(nsLabels map[string]string) bool
}

// NamespaceGVK is the kind of Namespaces, read as metadata.
var NamespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// Timed starts the clock of one reconcile of detector; what it returns records the duration
// (defer detectkit.Timed(DetectorName)()).
func Timed(detector string) func() {
	start := time.Now()
	return func() { metrics.ReconcileDuration.WithLabelValues(detector).Observe(time.Since(start).Seconds()) }
}

// ReadTarget reads the object named n into obj from the cache r. ok is false when there is
// nothing to decide about: the object is gone (forget(true): what the detector remembers of it
// goes) or being deleted (forget(false)). err is a failed read, never a missing object.
func ReadTarget(ctx context.Context, r client.Reader, n types.NamespacedName, obj client.Object, forget func(gone bool),
	opts ...client.GetOption) (ok bool, err error) {
	if err := r.Get(ctx, n, obj, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			forget(true)
		}
		return false, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		forget(false)
		return false, nil
	}
	return true, nil
}

// ReadNamespace reads the metadata of Namespace name from the cache r. ok is false when it is
// gone or being deleted: its objects go with it, so there is nothing to decide about them.
func ReadNamespace(ctx context.Context, r client.Reader, name string, opts ...client.GetOption) (ns *metav1.PartialObjectMetadata, ok bool, err error) {
	ns = &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(NamespaceGVK)
	if err := r.Get(ctx, types.NamespacedName{Name: name}, ns, opts...); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return ns, ns.DeletionTimestamp == nil, nil
}

// InScope says whether this installation serves obj, whose Namespace ns (nil: it has none) the
// reconcile has just read: a Namespace by its own labels, another object by its namespace's,
// any other cluster-scoped object always. A nil s serves every namespace.
//
// The scope is decided on the labels of the Namespace the reconcile has just read
// (Scope.Matches), not by Scope.Selects, which would read the same Namespace metadata from the
// manager's cache once more: the answer is the same, and a Namespace the cache does not hold is
// served by neither (the reconcile has stopped before it asks). Selects stays for namespaces
// no reconcile has read: the watch predicates, and a template object's namespace.
func InScope(s Scope, obj client.Object, ns *metav1.PartialObjectMetadata) bool {
	switch {
	case s == nil:
		return true
	case ns != nil:
		return s.Matches(ns.Labels)
	case obj.GetObjectKind().GroupVersionKind() == NamespaceGVK:
		return s.Matches(obj.GetLabels())
	}
	return true
}

// TargetOf is the lifecycle Target of obj, of kind gvk.
func TargetOf(gvk schema.GroupVersionKind, obj client.Object) lifecycle.Target {
	return lifecycle.Target{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// RefOf is the Event reference of obj, of kind gvk.
func RefOf(gvk schema.GroupVersionKind, obj client.Object) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
}

// NamespaceRef is the Event reference of a Namespace (nil for nil).
func NamespaceRef(ns *metav1.PartialObjectMetadata) *corev1.ObjectReference {
	if ns == nil {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}
}

// DroppedState counts and logs the entries of a Lease's bag that the detector's ParseState
// could not read: they are dropped, and the state goes on without them.
func DroppedState(log logr.Logger, detector string, bad []string) {
	for _, b := range bad {
		metrics.InvalidInput.WithLabelValues(detector, "state_lease").Inc()
		log.Info("unreadable "+detector+" state dropped", "entry", b)
	}
}

// CountCommitted counts a decision the pipeline recorded, by what it does.
func CountCommitted(detector string, res lifecycle.Result) {
	if res.Committed != nil {
		metrics.Decisions.WithLabelValues(detector, string(res.Committed.Edit.Op)).Inc()
	}
}
