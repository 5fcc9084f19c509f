package expiry

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/nsscope"
)

// Pipeline is the change pipeline as the detector uses it (*pipeline.Pipeline).
type Pipeline = detectkit.Pipeline

// Reporter writes Warning Events about metadata the detector cannot use, once per id.
type Reporter = detectkit.Reporter

// Scope says which namespaces this installation serves (--namespace-selector;
// *nsscope.Scope): objects of other namespaces, and those Namespaces themselves, belong to
// another installation. Cluster-scoped kinds other than Namespaces are always in scope.
type Scope = detectkit.Scope

// Watches is what the expiry detector reads through the caches: the kustos.io/ annotations and
// the opt-out label of the objects it watches as metadata (its kinds and Namespaces).
func Watches() lifecycle.Watches {
	return lifecycle.Watches{MetadataAnnotationPrefixes: []string{"kustos.io/"}, MetadataLabels: []string{LabelIgnore}}
}

// Vocabulary names the Events the pipeline writes about expiry Changes.
func Vocabulary() lifecycle.Vocabulary {
	return lifecycle.Vocabulary{
		Proposed: ReasonProposed, Merged: ReasonMerged, Declined: ReasonDeclined, Applied: ReasonApplied,
		MergedNote:   "the change takes effect when the GitOps tool syncs the merge",
		DeclinedNote: declinedNote,
	}
}

// declinedNote is what a closed proposal means, in its Declined Event and its "Opting out".
const declinedNote = "the environment stays; Kustos proposes nothing more for this deadline (a new deadline starts a new cycle)"

// Reconciler decides about the objects of one kind (a lifecycle kind, or Namespaces): it reads
// their metadata and their namespace's from the cache and hands the decision to the pipeline.
type Reconciler struct {
	// Cache reads Kind's objects and Namespaces as metadata.
	Cache client.Reader
	// Targets, when set, is the cache through which Kind's objects are watched, as unstructured
	// objects another detector holds there (Cache then answers their metadata reads from it:
	// objcache.MetadataView); nil: they are watched as metadata through the manager's cache.
	Targets  cache.Cache
	Pipeline Pipeline
	Reporter Reporter
	// Scope is --namespace-selector; nil: every namespace.
	Scope Scope
	Kind  schema.GroupVersionKind
	// Scalable: objects of Kind have spec.replicas (kustos.io/on-expiry: pause is possible).
	Scalable bool
	Settings Settings
	// AutoMerge is --enable-auto-merge.
	AutoMerge bool
	// Grouping is --group-by for this detector and GroupWindow --group-window: in PR mode the
	// removals and pauses that fall due together are proposed together.
	Grouping    lifecycle.GroupBy
	GroupWindow time.Duration
	// Links, when set, mints the extension links of a warning (the extension server): they go
	// to the owner in the warning's Notice, never into an Event.
	Links func(key lifecycle.Key, deadline, expires time.Time) ([]lifecycle.NoticeLink, error)
	// LeaseTrigger, when set, says which Key a change of a state Lease should make the detector
	// look at again at once (an extension recorded by the extension server, on any replica).
	LeaseTrigger func(before, after client.Object) (lifecycle.Key, bool)
	// HasState, when set, says whether a state Lease exists for a Key, from a cache (no read
	// of the API server): a target that is no longer scheduled (opted out, never, an orphan)
	// goes through the pipeline only then, so its Lease forgets its owner and deadline.
	HasState func(ctx context.Context, key lifecycle.Key) bool
	// Scale, when set, reads spec.replicas of a Scalable target whose lifetime ends in a pause
	// (the API server, or a cache of full objects): its pause records the value, and a resume
	// restores it. Nil: pauses record nothing and cannot be resumed.
	Scale client.Reader
	// ResumeLinks, when set, puts resume links into the notice that a target was paused.
	ResumeLinks ResumeLinks
	Now         func() time.Time
	Log         logr.Logger

	mu sync.Mutex
	// orphans are the orphans' keys, hashed: only counted (the gauge), and held for every
	// orphan of the cluster (18,000 of the whole-cluster bench's Deployments), a hash is 8
	// bytes where a namespace and name are 32 and their strings. Two keys sharing a hash
	// (odds of about 10⁻¹¹ at 20,000 orphans) would count one too few until set again.
	orphans    map[uint64]struct{}
	orphanSeed maphash.Seed
}

// Reconcile decides about one object: gather reads it, then the pipeline runs Decide over its
// Lease.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	defer detectkit.Timed(DetectorName)()
	log := r.Log.WithValues("kind", r.Kind.Kind, "namespace", req.Namespace, "name", req.Name)
	g, ok, err := r.gather(ctx, req.NamespacedName, log)
	if !ok {
		return reconcile.Result{}, err
	}
	key := lifecycle.KeyFor(DetectorName, g.target)
	if !scheduled(g.policy) && !hasState(ctx, r.HasState, key) {
		// Opted out, an orphan, or metadata that cannot be used: nothing to schedule and
		// nobody to warn. No pipeline run, so no Lease either.
		return reconcile.Result{}, nil
	}
	// Scheduled, or it was (its Lease exists): then Decide clears the owner and deadline the
	// Lease recorded, so the former owner's page no longer lists it, and withdraws a removal
	// it proposed.
	pause, err := r.pausable(ctx, req.NamespacedName, g.policy)
	if err != nil {
		return reconcile.Result{}, err
	}
	pipelineReq := decideRequest(key, g.target, g.uid, g.now, g.policy, r.Settings, r.Links, pause, log)
	pipelineReq.AutoMerge = r.AutoMerge
	pipelineReq.Seen = g.seen
	pipelineReq.Group = r.Grouping.For(DetectorName, g.target, g.policy.Owner, r.GroupWindow)
	res, err := r.Pipeline.Run(ctx, pipelineReq)
	detectkit.CountCommitted(DetectorName, res)
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
}

// scheduled: the policy names an owner and a deadline and the target is not opted out.
func scheduled(p Policy) bool { return !p.Ignored && !p.Deadline.IsZero() && p.Owner != "" }

// hasState asks has (nil: no Lease is looked for) whether key has a state Lease.
func hasState(ctx context.Context, has func(context.Context, lifecycle.Key) bool, key lifecycle.Key) bool {
	return has != nil && has(ctx, key)
}

func (r *Reconciler) setOrphan(n types.NamespacedName, orphan bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.orphans == nil {
		r.orphans, r.orphanSeed = map[uint64]struct{}{}, maphash.MakeSeed()
	}
	h := maphash.Comparable(r.orphanSeed, n)
	if orphan {
		r.orphans[h] = struct{}{}
	} else {
		delete(r.orphans, h)
	}
	metrics.ExpiryOrphans.WithLabelValues(kindLabel(r.Kind)).Set(float64(len(r.orphans)))
}

func kindLabel(k schema.GroupVersionKind) string {
	if k.Group == "" {
		return k.Kind
	}
	return k.Kind + "." + k.Group
}

// SetupWithManager registers the controller for Kind, watched as metadata (or through Targets);
// a Namespace's metadata change maps to every object of Kind in it. Only objects of namespaces in Scope are
// enqueued; a Namespace that joins it has its objects looked at.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(r.Kind)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("expiry-" + strings.ToLower(kindLabel(r.Kind))).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent})
	if r.Targets != nil && r.Kind != detectkit.NamespaceGVK {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(r.Kind)
		b = b.WatchesRawSource(source.Kind[client.Object](r.Targets, u, &handler.EnqueueRequestForObject{}, r.targetsChanged()))
	} else {
		b = b.WatchesMetadata(obj, &handler.EnqueueRequestForObject{}, builder.WithPredicates(r.targetsChanged()))
	}
	if r.Kind != detectkit.NamespaceGVK {
		nsMeta := &metav1.PartialObjectMetadata{}
		nsMeta.SetGroupVersionKind(detectkit.NamespaceGVK)
		b = b.WatchesMetadata(nsMeta, handler.EnqueueRequestsFromMapFunc(r.objectsOfNamespace),
			builder.WithPredicates(nsscope.Namespaces(r.Scope, metadataChanged())))
	}
	if r.LeaseTrigger != nil {
		b = b.Watches(&coordinationv1.Lease{}, leaseHandler(r.LeaseTrigger, kindLabel(r.Kind)))
	}
	return b.Complete(r)
}

// leaseHandler enqueues the object of a Key of kindGroup whose state Lease changed in a way
// trigger cares about.
func leaseHandler(trigger func(before, after client.Object) (lifecycle.Key, bool), kindGroup string) handler.EventHandler {
	return handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		key, ok := trigger(e.ObjectOld, e.ObjectNew)
		if !ok {
			return
		}
		if p, ok := key.Parts(); ok && p.Detector == DetectorName && p.KindGroup == kindGroup {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
		}
	}}
}

// targetsChanged is the predicate of the watch of r.Kind's objects: what Decide reads changed,
// in a namespace the selector selects; and, when the targets are Namespaces, a Namespace that
// joins the selector (its selector label is not something Decide reads).
func (r *Reconciler) targetsChanged() predicate.Predicate {
	if r.Kind == detectkit.NamespaceGVK {
		return nsscope.Namespaces(r.Scope, metadataChanged())
	}
	return predicate.And[client.Object](nsscope.Objects(r.Scope), metadataChanged())
}

// metadataChanged lets through creations, deletions, and updates of what Decide reads (the
// annotations and labels Watches names) or of the deletion timestamp. The cache may hold more
// (with Cleaners on, it keeps every label and annotation for them): a Deployment's
// revision annotation, bumped at every rollout, must not make expiry look again.
func metadataChanged() predicate.Predicate {
	w := Watches()
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		if e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil {
			return true
		}
		return !sameReadMetadata(w, e.ObjectOld, e.ObjectNew)
	}}
}

// sameReadMetadata says whether a and b agree on every annotation with one of w's prefixes and
// every label w names.
func sameReadMetadata(w lifecycle.Watches, a, b client.Object) bool {
	la, aa := detectkit.ReadMetadata(w, a)
	lb, ab := detectkit.ReadMetadata(w, b)
	return maps.Equal(la, lb) && maps.Equal(aa, ab)
}

func (r *Reconciler) objectsOfNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(r.Kind.GroupVersion().WithKind(r.Kind.Kind + "List"))
	if err := r.Cache.List(ctx, list, client.InNamespace(ns.GetName())); err != nil {
		r.Log.Error(err, "listing objects of namespace", "kind", r.Kind.Kind, "namespace", ns.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Name < reqs[j].Name })
	return reqs
}

// pausable reads spec.replicas of a target whose lifetime ends in a pause (see Scale).
func (r *Reconciler) pausable(ctx context.Context, n types.NamespacedName, p Policy) (Pausable, error) {
	if r.Scale == nil || !r.Scalable || p.Action != ActionPause {
		return Pausable{}, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.Kind)
	if err := r.Scale.Get(ctx, n, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return Pausable{}, nil
		}
		return Pausable{}, fmt.Errorf("reading spec.replicas of %s: %w", n, err)
	}
	return Pausable{Replicas: replicasOf(obj), ResumeLinks: r.ResumeLinks}, nil
}

// replicasOf is obj's spec.replicas as a string; "" when absent or not a number.
func replicasOf(obj *unstructured.Unstructured) string {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas")
	if err != nil || !found {
		return ""
	}
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}
