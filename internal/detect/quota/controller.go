package quota

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
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
	"github.com/kustos-dev/kustos/internal/nsscope"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// Pipeline is the change pipeline as the detector uses it (*pipeline.Pipeline): it remembers,
// locks, carries out and follows the detector's Changes.
type Pipeline interface {
	Run(ctx context.Context, req lifecycle.Request) (lifecycle.Result, error)
}

// Reporter writes Warning Events about what the detector noticed outside a decision (an
// annotation it cannot use), once per id.
type Reporter interface {
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
}

// Scope says which namespaces this installation serves (--namespace-selector;
// *nsscope.Scope): quotas of other namespaces belong to another installation.
type Scope interface {
	Selects(ctx context.Context, namespace string) (bool, error)
	Matches(nsLabels map[string]string) bool
}

// History is a source of a quota's usage over the sizing window other than the state Lease
// (Prometheus: internal/quotahistory). Its answer is taken as it is; an incomplete one holds
// shrinks back with gate "window".
type History interface {
	Window(ctx context.Context, namespace, quota string, window time.Duration, now time.Time) quotahistory.Window
}

// reportedEntries bounds what the Reconciler remembers of reported problems: enough for every
// namespace of a large cluster, and never more, whatever the input.
const reportedEntries = 16384

// Reconciler gathers the Snapshot of one ResourceQuota from the informer cache and hands the
// decision to the pipeline. It holds no arithmetic of its own.
type Reconciler struct {
	// Cache reads ResourceQuotas, Namespace metadata and FailedCreate Events from the cache.
	Cache client.Reader
	// Live reads failing owners straight from the API server: they are looked up rarely, so
	// caching every workload in the cluster would cost far more than it saves.
	Live     client.Reader
	Pipeline Pipeline
	Reporter Reporter
	// Scope is --namespace-selector; nil: every namespace.
	Scope Scope
	// Defaults come from the flags.
	Defaults        Settings
	DefaultCooldown time.Duration
	// AutoMerge is --enable-auto-merge; a namespace opts out with resizer.io/auto-merge: "false".
	AutoMerge bool
	// Grouping is --group-by for quotas (none by default: a quota is its namespace's own
	// business) and GroupWindow --group-window.
	Grouping    lifecycle.GroupBy
	GroupWindow time.Duration
	// Window holds the window and shrink flags (--quota-window, --enable-shrink,
	// --shrink-cooldown, --max-shrink); a zero Length means DefaultWindowPolicy.
	Window WindowPolicy
	// Observe is observer mode: shrinks are reported there whatever the opt-in, since reporting
	// changes nothing.
	Observe bool
	// History, when set, is where the usage window comes from; nil: the daily peaks the state
	// Lease keeps.
	History History
	// Now is the clock; injected so tests control time.
	Now func() time.Time
	Log logr.Logger

	// reported remembers what was already reported per namespace (annotation problems) or
	// event (unreadable messages), so a reconcile loop does not repeat log lines and API calls.
	// Bounded: the least recently used entries go first.
	reportedOnce sync.Once
	reported     *lru.Cache

	// reclaim is what each quota could give back, for the reclaim gauges.
	reclaimOnce sync.Once
	reclaim     *reclaimBook
}

// reclaims is the Reconciler's reclaim book, made (and the gauges reset) on first use.
func (r *Reconciler) reclaims() *reclaimBook {
	r.reclaimOnce.Do(func() { r.reclaim = newReclaimBook() })
	return r.reclaim
}

// Watches is what the quota detector reads through the caches: Warning FailedCreate Events
// (filtered by the API server: the thousands of ordinary events of a busy cluster never reach
// Kustos) and the resizer.io/ annotations of Namespaces.
func Watches() lifecycle.Watches {
	return lifecycle.Watches{
		EventFields:                map[string]string{"reason": EventReasonFailedCreate, "type": EventTypeWarning},
		MetadataAnnotationPrefixes: []string{AnnotationPrefix},
	}
}

// Vocabulary names the Events the pipeline writes about quota Changes.
func Vocabulary() lifecycle.Vocabulary {
	return lifecycle.Vocabulary{
		Proposed: ReasonQuotaResizeProposed, Merged: ReasonQuotaResizeMerged,
		Declined: ReasonQuotaResizeDeclined, Applied: ReasonQuotaResized,
		MergedNote:   "the new quota takes effect when the GitOps tool syncs it",
		DeclinedNote: "nothing is proposed again before the cooldown has passed and the recommendation has grown",
	}
}

// Reconcile decides about one ResourceQuota.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.WithLabelValues(DetectorName).Observe(time.Since(start).Seconds()) }()
	log := r.Log.WithValues("namespace", req.Namespace, "quota", req.Name)

	var q corev1.ResourceQuota
	if err := r.Cache.Get(ctx, req.NamespacedName, &q); err != nil {
		if apierrors.IsNotFound(err) {
			forgetRecommendations(req.Namespace, req.Name, nil)
			r.reclaims().forget(req.Namespace, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Cache.Get(ctx, types.NamespacedName{Name: req.Namespace}, ns); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.Scope != nil && !r.Scope.Matches(ns.Labels) {
		// Another installation's namespace (or one that left the selector): not looked at, no
		// Event, no decision; a proposal already open stays for people to close.
		forgetRecommendations(q.Namespace, q.Name, q.Status.Hard)
		r.reclaims().forget(q.Namespace, q.Name)
		return reconcile.Result{}, nil
	}
	if ns.DeletionTimestamp != nil || q.DeletionTimestamp != nil {
		forgetRecommendations(q.Namespace, q.Name, q.Status.Hard)
		r.reclaims().forget(q.Namespace, q.Name)
		return reconcile.Result{}, nil // going away: nothing to raise
	}
	now := r.Now()
	policy, problems := ParsePolicyWith(ns.Annotations, r.Defaults, r.DefaultCooldown, r.windowDefaults())
	r.reportAnnotationProblems(ctx, log, ns, problems, now)
	if !policy.Enabled {
		forgetRecommendations(q.Namespace, q.Name, q.Status.Hard)
		r.reclaims().forget(q.Namespace, q.Name)
		return reconcile.Result{}, nil
	}
	failures, err := r.failures(ctx, log, q.Namespace, q.Name)
	if err != nil {
		return reconcile.Result{}, err
	}

	var external *quotahistory.Window
	if r.History != nil {
		w := r.History.Window(ctx, q.Namespace, q.Name, policy.Window.Length, now)
		external = &w
	}

	// The decision as the pipeline last asked for it: its recommendations feed the metrics.
	var last Verdict
	var stateProblems []string
	decided := false
	res, err := r.Pipeline.Run(ctx, lifecycle.Request{
		Key:    lifecycle.NewKey(DetectorName, q.Namespace, q.Name),
		Target: quotaTarget(q.Namespace, q.Name),
		UID:    string(q.UID),
		Now:    now,
		Decide: func(v lifecycle.View) lifecycle.Decision {
			p := policy
			if v.ProposalOpen {
				// While a PR is open the cooldown does not apply (updating the PR is what it is
				// for), but events older than the last proposal still count as accounted for.
				p.Cooldown = 0
			}
			var d lifecycle.Decision
			last, d, stateProblems = r.decide(&q, p, failures, external, v, now)
			decided = true
			return d
		},
		Supersedes: Supersedes,
		Options:    lifecycle.ProposeOptions{GitPath: strings.TrimSpace(ns.Annotations[AnnotationGitPath])},
		AutoMerge:  r.AutoMerge && !strings.EqualFold(strings.TrimSpace(ns.Annotations[AnnotationAutoMerge]), "false"),
		Group:      r.Grouping.For(DetectorName, quotaTarget(q.Namespace, q.Name), "", r.GroupWindow),
	})
	for _, p := range last.Problems {
		metrics.InvalidInput.WithLabelValues(DetectorName, "quantity").Inc()
		log.V(1).Info("quota resource skipped", "problem", p)
	}
	r.reportStateProblems(log, q.Namespace+"/"+q.Name, stateProblems)
	r.logShrinks(log, policy, last)
	if decided {
		// Only a look that decided knows the shrinks; one the pipeline did not run keeps the last.
		r.reclaims().set(q.Namespace, q.Name, last.Shrinks)
	}
	if res.Committed != nil {
		for _, rc := range last.Recommendations {
			metrics.Decisions.WithLabelValues(DetectorName, string(rc.Trigger)).Inc()
			metrics.RecommendedValue.WithLabelValues(rc.Namespace, rc.Quota, string(rc.Resource)).Set(rc.Recommended.AsApproximateFloat64())
		}
	}
	if res.Merged != nil {
		forgetRecommendations(q.Namespace, q.Name, q.Status.Hard) // the recommendation is in Git now
	}
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
}

// forgetRecommendations deletes the kustos_recommended_value series of a quota that no longer
// has an open recommendation, so the metric never grows with quotas that come and go. With the
// quota's resources known, each series is deleted by its exact labels, which costs the same
// however many series exist; only a quota already gone from the cache needs the scan of every
// series that DeletePartialMatch is.
func forgetRecommendations(namespace, quota string, resources corev1.ResourceList) {
	if resources == nil {
		metrics.RecommendedValue.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "quota": quota})
		return
	}
	for r := range resources {
		metrics.RecommendedValue.DeleteLabelValues(namespace, quota, string(r))
	}
}

func quotaTarget(namespace, name string) lifecycle.Target {
	return lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: namespace, Name: name}
}

// findings are the Verdict's findings on the quota: missing resource fields, unreadable values.
func findings(q *corev1.ResourceQuota, d Verdict) []lifecycle.Finding {
	var out []lifecycle.Finding
	for _, m := range d.MissingSpecs {
		out = append(out, lifecycle.Finding{Reason: ReasonQuotaSpecMissing, Message: m.Message,
			ID: "spec|" + q.Name + "|" + m.Owner.Kind + "/" + m.Owner.Name + "|" + m.Missing})
	}
	for _, p := range d.Problems {
		out = append(out, lifecycle.Finding{Reason: ReasonInvalidQuota, Message: p,
			ID: "invalid|" + string(q.UID) + "|" + q.ResourceVersion + "|" + p})
	}
	return out
}

func (r *Reconciler) seen(key string) (any, bool) {
	r.reportedOnce.Do(func() { r.reported = lru.New(reportedEntries) })
	return r.reported.Get(key)
}

func (r *Reconciler) remember(key string, v any) {
	r.reportedOnce.Do(func() { r.reported = lru.New(reportedEntries) })
	r.reported.Add(key, v)
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
		// The cache holds Warning events (only FailedCreate ones while no other detector reads
		// Events); only FailedCreate ones about a quota matter.
		if IsFailedCreate(&list.Items[i]) && strings.Contains(list.Items[i].Message, "quota") {
			events = append(events, &list.Items[i])
		}
	}
	failures, problems, err := CollectFailures(events, quotaName, func(kind, name string) (runtime.Object, error) {
		return r.lookupOwner(ctx, namespace, kind, name)
	})
	for _, p := range problems {
		if _, seen := r.seen("event|" + p.Error()); !seen {
			r.remember("event|"+p.Error(), struct{}{})
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
	prev, seen := r.seen("ns|" + ns.Name)
	if prev == fingerprint || (!seen && fingerprint == "") {
		return // nothing new; namespaces without problems are not remembered at all
	}
	ref := corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}
	for _, p := range problems {
		metrics.InvalidInput.WithLabelValues(DetectorName, "annotation").Inc()
		log.Info("invalid annotation", "key", p.Key, "value", p.Value, "problem", p.Problem, "fallback", p.Fallback)
		if err := r.Reporter.Notify(ctx, ref, corev1.EventTypeWarning, ReasonInvalidAnnotation, p.Error(), "annotation|"+ns.Name+"|"+p.Key+"|"+p.Value, now); err != nil {
			log.Error(err, "could not write InvalidAnnotation event")
			return // not remembered: tried again on the next reconcile
		}
	}
	if fingerprint == "" {
		r.reported.Remove("ns|" + ns.Name) // fixed: nothing to remember
		return
	}
	r.remember("ns|"+ns.Name, fingerprint)
}

// SetupWithManager registers the controller: ResourceQuotas drive it; Namespace annotation
// changes and FailedCreate events map to the quotas they concern. Only objects of namespaces
// in Scope are enqueued, and a Namespace that joins it has its quotas looked at.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	nsMeta := &metav1.PartialObjectMetadata{}
	nsMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ctrl.NewControllerManagedBy(mgr).
		Named("quota").
		For(&corev1.ResourceQuota{}, builder.WithPredicates(nsscope.Objects(r.Scope), quotaStatusChanged())).
		WatchesMetadata(nsMeta, handler.EnqueueRequestsFromMapFunc(r.quotasOfNamespace),
			builder.WithPredicates(nsscope.Namespaces(r.Scope, predicate.AnnotationChangedPredicate{}))).
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(quotaOfEvent), builder.WithPredicates(nsscope.Objects(r.Scope))).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

// quotaStatusChanged lets through creations and updates that changed what Decide reads.
func quotaStatusChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := asQuota(e.ObjectOld)
			n, ok2 := asQuota(e.ObjectNew)
			if !ok1 || !ok2 {
				return true
			}
			return !equalResources(o.Status.Hard, n.Status.Hard) || !equalResources(o.Status.Used, n.Status.Used) ||
				n.DeletionTimestamp != nil
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

// asQuota is the quota an event carries: the cache's object itself, or the quota it holds in
// another form (the manager's cache packs quotas: objcache.PackedQuota), unpacked.
func asQuota(o client.Object) (*corev1.ResourceQuota, bool) {
	if q, ok := o.(*corev1.ResourceQuota); ok {
		return q, true
	}
	if o == nil {
		return nil, false
	}
	q, ok := o.DeepCopyObject().(*corev1.ResourceQuota)
	return q, ok
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
