package inactivity

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/nsscope"
)

// Pipeline is the change pipeline as the detector uses it (*pipeline.Pipeline).
type Pipeline = detectkit.Pipeline

// Reporter writes Warning Events about metadata the detector cannot use, once per id.
type Reporter = detectkit.Reporter

// Scope says which namespaces this installation serves (--namespace-selector;
// *nsscope.Scope): targets of other namespaces belong to another installation.
type Scope = detectkit.Scope

// Watches is what the detector reads through the caches: its annotations and the opt-out label
// on Namespaces and template objects (as metadata), and its targets of kinds as unstructured
// objects trimmed to TargetFields.
func Watches(kinds []schema.GroupVersionKind, p Pause, templateRef []string) lifecycle.Watches {
	w := lifecycle.Watches{MetadataAnnotationPrefixes: []string{"kustos.io/"}, MetadataLabels: []string{AnnotationIgnore}}
	if len(kinds) > 0 {
		w.ObjectFields = make(map[lifecycle.ObjectKind][][]string, len(kinds))
		for _, k := range kinds {
			w.ObjectFields[lifecycle.ObjectKind{Group: k.Group, Version: k.Version, Kind: k.Kind}] = TargetFields(p, templateRef)
		}
	}
	return w
}

// TargetFields are the fields the detector reads on a target besides apiVersion, kind and
// metadata (whose labels and annotations the sources' target templates and the policy read,
// every one of them): spec.replicas (Running without a pause field; one number, kept always),
// the pause field (Running with one) and the template reference (TemplateRefOf). A Deployment's
// pod template and status, most of its size, are read by nothing here.
func TargetFields(p Pause, templateRef []string) [][]string {
	fields := [][]string{{"spec", "replicas"}}
	if len(p.Field) > 0 {
		fields = append(fields, slices.Clone(p.Field))
	}
	if len(templateRef) > 0 {
		fields = append(fields, slices.Clone(templateRef))
	}
	return fields
}

// Vocabulary names the Events the pipeline writes about inactivity Changes.
func Vocabulary() lifecycle.Vocabulary {
	return lifecycle.Vocabulary{
		Proposed: ReasonProposed, Merged: ReasonMerged, Declined: ReasonDeclined, Applied: ReasonApplied,
		MergedNote:   "the change (a pause, a deletion or a resume) takes effect when the GitOps tool syncs the merge",
		DeclinedNote: declinedNote,
	}
}

// declinedNote is what a closed proposal means, in its Declined Event and its "Opting out".
const declinedNote = "the target stays as it is; Kustos proposes nothing more until it is used and idle again"

// Reconciler decides about the targets of one kind, read as unstructured objects (their replicas or
// pause field, their template reference) from the cache.
type Reconciler struct {
	// Objects reads targets as unstructured objects; Meta reads Namespaces and template objects
	// as metadata. Both are caches.
	Objects, Meta client.Reader
	// Targets is the cache Objects reads, when it is not the manager's: the targets are watched
	// through it (one informer per kind for every detector reading the kind's objects whole).
	Targets  cache.Cache
	Pipeline Pipeline
	Reporter Reporter
	// Scope is --namespace-selector; nil: every namespace.
	Scope    Scope
	Kind     schema.GroupVersionKind
	Settings Settings
	Sources  []activity.Compiled
	Tracker  *activity.Tracker
	// TemplateRef is the path of the field naming a target's template object (nil: none), of
	// kind TemplateKind.
	TemplateRef  []string
	TemplateKind schema.GroupVersionKind
	// Prober and ProbeInterval: exam endpoints are probed at most this often.
	Prober        Prober
	ProbeInterval time.Duration
	AutoMerge     bool
	// Grouping is --group-by for this detector and GroupWindow --group-window: in PR mode the
	// pauses and removals that fall due together are proposed together.
	Grouping    lifecycle.GroupBy
	GroupWindow time.Duration
	// Checked receives a signal after every activity check.
	Checked <-chan Checked
	// KeepLinks, when set, puts keep links into every alert.
	KeepLinks KeepLinks
	// ResumeLinks, when set, puts resume links into the notice of every pause.
	ResumeLinks ResumeLinks
	// LeaseTrigger, when set, says which Key a change of a state Lease should make the detector
	// look at at once (a resume its owner just asked for), instead of at its next look.
	LeaseTrigger func(before, after client.Object) (lifecycle.Key, bool)
	// HasState, when set, says whether a state Lease exists for a Key, from a cache (no read of
	// the API server): a target opted out, or that no longer times out, goes through the
	// pipeline only then, so that a pause proposed for it is withdrawn.
	HasState func(ctx context.Context, key lifecycle.Key) bool
	Now      func() time.Time
	Log      logr.Logger

	mu        sync.Mutex
	lastProbe map[types.NamespacedName]time.Time
	// targets are the objects whose last look found a timeout or a probe: what a check's new
	// activity data can change. checks counts the checks, for the full sweeps.
	targets map[types.NamespacedName]bool
	checks  int
}

// Reconcile decides about one target: gather reads it (and probes its exam endpoint when
// due), then the pipeline runs Decide over its Lease.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	defer detectkit.Timed(DetectorName)()
	log := r.Log.WithValues("kind", r.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
	g, ok, err := r.gather(ctx, req.NamespacedName, log)
	if !ok {
		return reconcile.Result{}, err
	}
	res, err := r.Pipeline.Run(ctx, r.request(g, log))
	detectkit.CountCommitted(DetectorName, res)
	if g.requeue > 0 && (res.RequeueAfter <= 0 || g.requeue < res.RequeueAfter) {
		res.RequeueAfter = g.requeue
	}
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
}

// SetupWithManager registers the controller for Kind (whole objects, unstructured); a
// Namespace's metadata change maps to every target in it, and every activity check to every
// target.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.Kind)
	nsMeta := &metav1.PartialObjectMetadata{}
	nsMeta.SetGroupVersionKind(detectkit.NamespaceGVK)
	preds := []predicate.Predicate{nsscope.Objects(r.Scope),
		// A spec change (a restart, a new pause field) or new metadata: what Decide reads.
		predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("inactivity-" + strings.ToLower(r.Kind.Kind) + "-" + strings.ReplaceAll(r.Kind.Group, ".", "-"))
	if r.Targets != nil {
		b = b.WatchesRawSource(source.Kind[client.Object](r.Targets, obj, &handler.EnqueueRequestForObject{}, preds...))
	} else {
		b = b.Watches(obj, &handler.EnqueueRequestForObject{}, builder.WithPredicates(preds...))
	}
	b = b.WatchesMetadata(nsMeta, handler.EnqueueRequestsFromMapFunc(r.inNamespace), builder.WithPredicates(nsscope.Namespaces(r.Scope,
		predicate.Or[client.Object](predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})))).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent})
	if r.LeaseTrigger != nil {
		b = b.Watches(&coordinationv1.Lease{}, r.leaseHandler())
	}
	if r.Checked != nil {
		b = b.WatchesRawSource(source.TypedChannel(r.Checked, handler.TypedFuncs[struct{}, reconcile.Request]{
			GenericFunc: func(ctx context.Context, _ event.TypedGenericEvent[struct{}], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				for _, req := range r.afterCheck(ctx) {
					q.Add(req)
				}
			}}))
	}
	return b.Complete(r)
}

// leaseHandler enqueues the target of a Key of Kind whose state Lease changed in a way
// LeaseTrigger cares about.
func (r *Reconciler) leaseHandler() handler.EventHandler {
	kindGroup := r.Kind.Kind
	if r.Kind.Group != "" {
		kindGroup += "." + r.Kind.Group
	}
	return handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		key, ok := r.LeaseTrigger(e.ObjectOld, e.ObjectNew)
		if !ok {
			return
		}
		if p, ok := key.Parts(); ok && p.Detector == DetectorName && p.KindGroup == kindGroup {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
		}
	}}
}

func (r *Reconciler) inNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.all(ctx, ns.GetName())
}

// keyLister is a cache that names its objects without copying them (objcache.Cache, whose
// objects are packed: a List would unpack every one).
type keyLister interface {
	Keys(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]types.NamespacedName, error)
}

// all lists the targets of Kind (in namespace, or everywhere) from the cache.
func (r *Reconciler) all(ctx context.Context, namespace string) []reconcile.Request {
	keys, err := r.keys(ctx, namespace)
	if err != nil {
		r.Log.Error(err, "listing targets", "kind", r.Kind.Kind, "namespace", namespace)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(keys))
	for _, k := range keys {
		reqs = append(reqs, reconcile.Request{NamespacedName: k})
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].String() < reqs[j].String() })
	return reqs
}

// keys names the cached targets of Kind in namespace (everywhere for "").
func (r *Reconciler) keys(ctx context.Context, namespace string) ([]types.NamespacedName, error) {
	if kl, ok := r.Targets.(keyLister); ok {
		return kl.Keys(ctx, r.Kind, namespace)
	}
	u := &unstructured.UnstructuredList{}
	u.SetGroupVersionKind(r.Kind.GroupVersion().WithKind(r.Kind.Kind + "List"))
	// Only the names are read: no copy of every cached object at every check.
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.Objects.List(ctx, u, opts...); err != nil {
		return nil, err
	}
	keys := make([]types.NamespacedName, 0, len(u.Items))
	for i := range u.Items {
		keys = append(keys, types.NamespacedName{Namespace: u.Items[i].GetNamespace(), Name: u.Items[i].GetName()})
	}
	return keys, nil
}
