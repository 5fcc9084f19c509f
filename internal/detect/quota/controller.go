package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/state"
)

// Actuator carries out a quota Change and reports findings. Declared here, by its consumer;
// the observe actuator implements it today, the PR actuator later.
type Actuator interface {
	// Record carries out (observer mode: reports) a Change decided at decidedAt. It must be
	// idempotent for the same Change and time.
	Record(ctx context.Context, c lifecycle.Change, decidedAt time.Time) error
	// Warn reports a finding once per id.
	Warn(ctx context.Context, regarding corev1.ObjectReference, reason, message, id string, at time.Time) error
}

// StateStore is the part of the Lease store the controller uses.
type StateStore interface {
	Get(ctx context.Context, key lifecycle.Key) (state.Record, error)
	MarkModified(ctx context.Context, rec state.Record, t time.Time, pending string) (state.Record, error)
	ClearPending(ctx context.Context, rec state.Record) (state.Record, error)
}

var _ StateStore = (*state.Store)(nil)

// conflictRetry is how soon a quota is decided again after its state Lease changed under us:
// long enough for the cache to see the newer Lease, short enough to be unnoticeable.
const conflictRetry = 200 * time.Millisecond

// Reconciler gathers the Snapshot of one ResourceQuota from the informer cache, calls Decide
// and hands the result to the Actuator. It holds no arithmetic of its own.
type Reconciler struct {
	// Cache reads ResourceQuotas, Namespace metadata and FailedCreate Events from the cache.
	Cache client.Reader
	// Live reads failing owners straight from the API server: they are looked up rarely, so
	// caching every workload in the cluster would cost far more than it saves.
	Live     client.Reader
	State    StateStore
	Actuator Actuator
	// Defaults come from the flags.
	Defaults        Settings
	DefaultCooldown time.Duration
	// Now is the clock; injected so tests control time.
	Now func() time.Time
	Log logr.Logger
	// PR, when set, turns Changes into pull requests (--mode=pr) instead of handing them to
	// the Actuator, which then only reports findings and what cannot become a PR.
	PR *PRMode

	// reported remembers what was already reported per namespace (annotation problems) or
	// event (unreadable messages), so a reconcile loop does not repeat log lines and API calls.
	reported sync.Map
}

// Reconcile decides about one ResourceQuota.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.WithLabelValues(DetectorName).Observe(time.Since(start).Seconds()) }()
	log := r.Log.WithValues("namespace", req.Namespace, "quota", req.Name)

	var q corev1.ResourceQuota
	if err := r.Cache.Get(ctx, req.NamespacedName, &q); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Cache.Get(ctx, types.NamespacedName{Name: req.Namespace}, ns); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ns.DeletionTimestamp != nil || q.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // going away: nothing to raise
	}
	now := r.Now()
	policy, problems := ParsePolicy(ns.Annotations, r.Defaults, r.DefaultCooldown)
	r.reportAnnotationProblems(ctx, log, ns, problems, now)
	if !policy.Enabled {
		return reconcile.Result{}, nil
	}

	key := lifecycle.NewKey(DetectorName, q.Namespace, q.Name)
	rec, err := r.State.Get(ctx, key)
	if err != nil {
		// A Lease someone edited by hand: say so, and carry on as if nothing was remembered; the
		// next write repairs it.
		metrics.InvalidInput.WithLabelValues(DetectorName, "state_lease").Inc()
		log.Error(err, "state lease unreadable; treating quota as never modified")
		if !rec.Exists() {
			return reconcile.Result{}, err
		}
	}
	if r.PR != nil {
		return r.reconcilePR(ctx, log, &q, ns, policy, rec, now)
	}
	if rec.Pending != "" {
		if rec, err = r.replayPending(ctx, rec); err != nil {
			return reconcile.Result{}, err
		}
	}

	failures, err := r.failures(ctx, log, q.Namespace, q.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := Decide(Snapshot{
		Now:       now,
		Namespace: q.Namespace,
		Quota:     q.Name,
		Hard:      q.Status.Hard,
		Used:      q.Status.Used,
		Policy:    policy,
		State:     State{LastModified: rec.LastModified},
		Failures:  failures,
	})

	ref := corev1.ObjectReference{APIVersion: "v1", Kind: "ResourceQuota", Namespace: q.Namespace, Name: q.Name, UID: q.UID}
	for _, m := range d.MissingSpecs {
		if err := r.Actuator.Warn(ctx, ref, ReasonQuotaSpecMissing, m.Message, "spec|"+q.Name+"|"+m.Owner.Kind+"/"+m.Owner.Name+"|"+m.Missing, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	for _, p := range d.Problems {
		metrics.InvalidInput.WithLabelValues(DetectorName, "quantity").Inc()
		log.Info("quota resource skipped", "problem", p)
		if err := r.Actuator.Warn(ctx, ref, ReasonInvalidQuota, p, "invalid|"+string(q.UID)+"|"+q.ResourceVersion+"|"+p, now); err != nil {
			return reconcile.Result{}, err
		}
	}

	change := d.Change()
	if change == nil {
		return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
	}
	// Remember first, then tell: if the Lease write conflicts, another replica (or our own
	// not-yet-cached write) decided first and we must not report twice.
	if rec, err = commitDecision(ctx, r.State, rec, *change, d.Recommendations, now); err != nil {
		return conflictOr(err)
	}
	if err := r.Actuator.Record(ctx, *change, now); err != nil {
		return reconcile.Result{}, err // pending stays in the Lease and is replayed
	}
	if _, err := r.State.ClearPending(ctx, rec); err != nil && !apierrors.IsConflict(err) {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
}

// commitDecision writes a decision to the state Lease before anything is carried out: the write
// is the commit point (optimistic concurrency: a conflict means someone else decided first, and
// the caller must decide again rather than act), and the decision stays there as pending until
// it has been carried out.
func commitDecision(ctx context.Context, store StateStore, rec state.Record, c lifecycle.Change, recs []Recommendation, now time.Time) (state.Record, error) {
	pending, err := json.Marshal(c)
	if err != nil {
		return rec, fmt.Errorf("encoding decision: %w", err)
	}
	if rec, err = store.MarkModified(ctx, rec, now, string(pending)); err != nil {
		return rec, err
	}
	for _, rc := range recs {
		metrics.Decisions.WithLabelValues(DetectorName, string(rc.Trigger)).Inc()
		metrics.RecommendedValue.WithLabelValues(rc.Namespace, rc.Quota, string(rc.Resource)).Set(rc.Recommended.AsApproximateFloat64())
	}
	return rec, nil
}

// replayPending finishes a decision that was remembered but maybe not reported (a crash or an
// API error in between). Reporting is idempotent, so replaying a finished one is harmless.
func (r *Reconciler) replayPending(ctx context.Context, rec state.Record) (state.Record, error) {
	var c lifecycle.Change
	if err := json.Unmarshal([]byte(rec.Pending), &c); err != nil {
		metrics.InvalidInput.WithLabelValues(DetectorName, "state_lease").Inc()
		r.Log.Error(err, "dropping unreadable pending decision", "key", rec.Key)
	} else if err := r.Actuator.Record(ctx, c, rec.LastModified); err != nil {
		return rec, err
	}
	return r.State.ClearPending(ctx, rec)
}

// failures reads the namespace's FailedCreate events that name this quota.
func (r *Reconciler) failures(ctx context.Context, log logr.Logger, namespace, quotaName string) ([]Failure, error) {
	var list corev1.EventList
	if err := r.Cache.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing events in %s: %w", namespace, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	events := make([]*corev1.Event, 0, len(list.Items))
	for i := range list.Items {
		// The cache holds only Warning FailedCreate events; only quota ones matter.
		if strings.Contains(list.Items[i].Message, "quota") {
			events = append(events, &list.Items[i])
		}
	}
	failures, problems, err := CollectFailures(events, quotaName, func(kind, name string) (runtime.Object, error) {
		return r.lookupOwner(ctx, namespace, kind, name)
	})
	for _, p := range problems {
		if _, seen := r.reported.LoadOrStore("event|"+p.Error(), struct{}{}); !seen {
			metrics.InvalidInput.WithLabelValues(DetectorName, "event_message").Inc()
			log.Info("FailedCreate event mentions a quota but cannot be read; skipped", "problem", p.Error())
		}
	}
	return failures, err
}

func (r *Reconciler) lookupOwner(ctx context.Context, namespace, kind, name string) (runtime.Object, error) {
	var obj client.Object
	switch kind {
	case "ReplicaSet":
		obj = &appsv1.ReplicaSet{}
	case "StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "Job":
		obj = &batchv1.Job{}
	case "ReplicationController":
		obj = &corev1.ReplicationController{}
	case "Pod":
		obj = &corev1.Pod{}
	default:
		return nil, nil
	}
	err := r.Live.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, ErrOwnerNotFound)
	case apierrors.IsForbidden(err):
		// RBAC narrowed by the operator: fall back to "one pod missing" rather than failing.
		r.Log.V(1).Info("not allowed to read failing owner; assuming one missing pod", "kind", kind, "namespace", namespace, "name", name)
		return nil, nil
	case err != nil:
		return nil, err
	}
	return obj, nil
}

// reportAnnotationProblems writes one InvalidAnnotation Event per bad annotation value, once.
func (r *Reconciler) reportAnnotationProblems(ctx context.Context, log logr.Logger, ns *metav1.PartialObjectMetadata, problems []AnnotationProblem, now time.Time) {
	fingerprint := ""
	for _, p := range problems {
		fingerprint += p.Key + "=" + p.Value + "\n"
	}
	prev, seen := r.reported.Load("ns|" + ns.Name)
	if prev == fingerprint || (!seen && fingerprint == "") {
		return // nothing new; namespaces without problems are not remembered at all
	}
	ref := corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}
	for _, p := range problems {
		metrics.InvalidInput.WithLabelValues(DetectorName, "annotation").Inc()
		log.Info("invalid annotation", "key", p.Key, "value", p.Value, "problem", p.Problem, "fallback", p.Fallback)
		if err := r.Actuator.Warn(ctx, ref, ReasonInvalidAnnotation, p.Error(), "annotation|"+ns.Name+"|"+p.Key+"|"+p.Value, now); err != nil {
			log.Error(err, "could not write InvalidAnnotation event")
			return // not remembered: tried again on the next reconcile
		}
	}
	r.reported.Store("ns|"+ns.Name, fingerprint)
}

// SetupWithManager registers the controller: ResourceQuotas drive it; Namespace annotation
// changes and FailedCreate events map to the quotas they concern.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	nsMeta := &metav1.PartialObjectMetadata{}
	nsMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ctrl.NewControllerManagedBy(mgr).
		Named("quota").
		For(&corev1.ResourceQuota{}, builder.WithPredicates(quotaStatusChanged())).
		WatchesMetadata(nsMeta, handler.EnqueueRequestsFromMapFunc(r.quotasOfNamespace),
			builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(quotaOfEvent)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

// quotaStatusChanged lets through creations and updates that changed what Decide reads.
func quotaStatusChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.ResourceQuota)
			n, ok2 := e.ObjectNew.(*corev1.ResourceQuota)
			if !ok1 || !ok2 {
				return true
			}
			return !equalResources(o.Status.Hard, n.Status.Hard) || !equalResources(o.Status.Used, n.Status.Used) ||
				n.DeletionTimestamp != nil
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func (r *Reconciler) quotasOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var list corev1.ResourceQuotaList
	if err := r.Cache.List(ctx, &list, client.InNamespace(obj.GetName())); err != nil {
		r.Log.Error(err, "listing quotas of namespace", "namespace", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Name < reqs[j].Name })
	return reqs
}

// quotaOfEvent maps a FailedCreate event to the quota its message names.
func quotaOfEvent(_ context.Context, obj client.Object) []reconcile.Request {
	ev, ok := obj.(*corev1.Event)
	if !ok || !IsFailedCreate(ev) {
		return nil
	}
	p, err := ParseEventMessage(ev.Message)
	if err != nil || p.Quota == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ev.Namespace, Name: p.Quota}}}
}
