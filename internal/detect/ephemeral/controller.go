package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/lifecycle/conditions"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/nsscope"
)

// DetectorName names the detector in Keys (ephemeral/<Kind.group>/<ns>/<name>), and so in
// Lease names, group Keys and branches. It is persisted: an upgraded installation finds its
// Leases and follows its pull requests by it, so it stays "ephemeral" although people call the
// detector cleaner (Name).
const DetectorName = "ephemeral"

// Name is the detector's name wherever people read or type it: metrics' detector label, log
// lines, `kustos status`, --allow and --allow-delete (lifecycle.DetectorLabel of DetectorName).
const Name = "cleaner"

// Reasons of the Cleaner's step conditions and Events. Ready=False carries the failing step's.
const (
	// ReasonCleanupDue: every condition holds; the Change's reason, and the observer-form Event.
	ReasonCleanupDue = "CleanupDue"
	// ReasonInvalidSpec: the spec does not compile (the message has the field paths). Only seen
	// when the admission webhook is off; with it, such a spec is never stored.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonForbidden: a target is in another namespace or of a cluster-scoped kind.
	ReasonForbidden = "Forbidden"
	// ReasonKindNotFound: the API server serves no such kind (a CRD not installed yet).
	ReasonKindNotFound = "KindNotFound"
	// ReasonMissingPermission: Kustos's RBAC does not allow it to watch (or delete) a target
	// kind (the chart value cleaner.targetKinds grants it); or the Cleaner's author may not do
	// its cleanup, or cannot be verified (the message names the request refused, or why).
	ReasonMissingPermission = "MissingPermission"
	// ReasonEvaluationFailed: a condition failed at run time (it counts as false).
	ReasonEvaluationFailed = "EvaluationFailed"
	// ReasonWaitingForTTL: the TTL is not reached; nothing is resolved or evaluated yet.
	ReasonWaitingForTTL = "WaitingForTTL"
	// ReasonResolved: the targets' kinds resolved and may be read.
	ReasonResolved = "Resolved"
	// ReasonConditionsPending and ReasonConditionsHold: the conditions were evaluated.
	ReasonConditionsPending = "ConditionsPending"
	ReasonConditionsHold    = "ConditionsHold"
	// ReasonNothingDue: no action is due yet.
	ReasonNothingDue = "NothingDue"
	// ReasonObserverMode: the cleanup is due; observer mode only reports it.
	ReasonObserverMode = "ObserverMode"
	// ReasonCleanupBlocked: a target was decided on but is still there (the Warning Events on
	// it say why: managed by a GitOps tool, changed since, a declined pull request).
	ReasonCleanupBlocked = "CleanupBlocked"
	// ReasonCleanedUp: every target marked for deletion is gone.
	ReasonCleanedUp = "CleanedUp"
	// ReasonNoSink: no CloudEvent sink is configured.
	ReasonNoSink = "NoSink"
	// ReasonDelivered and ReasonNotDelivered: the sink acknowledged the CloudEvent, or not yet
	// (the Cleaner is kept and the event sent again, with the same id).
	ReasonDelivered    = "Delivered"
	ReasonNotDelivered = "NotDelivered"
	// ReasonDestinationRefused: the sink's address is not one this Kustos may send to
	// (loopback, link-local, private or cluster-internal, and not in --allowed-destinations).
	// The Cleaner stays; it is tried again at the Ready re-check interval, or when it changes.
	ReasonDestinationRefused = "DestinationRefused"
	// ReasonUninstallFailed: helm could not uninstall a release.
	ReasonUninstallFailed = "UninstallFailed"
	// ReasonReleaseOutsideNamespace: a release's manifest or hooks name an object in another
	// namespace, of a cluster-scoped kind, of a kind the API server does not serve, or one that
	// cannot be read: Kustos does not uninstall it (the message names the objects); the
	// Cleaner's other targets and releases go on.
	ReasonReleaseOutsideNamespace = "ReleaseOutsideNamespace"
)

// Steps of a Cleaner, in order: each reports its own condition, from which package conditions
// derives the root Available and Ready.
var steps = []string{v1alpha1.StepTargetsResolved, v1alpha1.StepConditionsEvaluated, v1alpha1.StepActionsDone, v1alpha1.StepEventDelivered}

// Index names of the Cleaners' field index.
const (
	// IndexTargets indexes Cleaners by status.resolvedTargets and, as "*.<resource>.<group>/<version>",
	// by status.selectorKinds.
	IndexTargets = "status.resolvedTargets"
	// maxResolvedTargets bounds status.resolvedTargets (the CRD's MaxItems).
	maxResolvedTargets = 256
	// bagDecided and bagBefore are the state the detector keeps in a target's Lease: the
	// version (UID/resourceVersion) decided on, and the Key's last decision time before it.
	bagDecided = "decided"
	bagBefore  = "before"
	// conflictRetry is how soon a Cleaner that changed under a write is looked at again.
	conflictRetry = 200 * time.Millisecond
)

// Pipeline is the change pipeline as the detector uses it (*pipeline.Pipeline).
type Pipeline interface {
	Run(ctx context.Context, req lifecycle.Request) (lifecycle.Result, error)
}

// Reporter writes Events about a Cleaner, once per id.
type Reporter interface {
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
}

// Access tells whether Kustos may do verb on a resource in a namespace ("" for all). The
// controller asks before it watches a kind (an informer without permission would block its
// reads) and before it deletes.
type Access interface {
	Allowed(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace string) (bool, error)
}

// Releases reads plain helm releases (internal/actuate/helmrelease.Uninstaller). Removing one
// is a Change (lifecycle.ReleaseTarget) that the pipeline's helm release actuator carries out.
type Releases interface {
	// Installed reports whether the release is installed and names that installation (it
	// changes when the release is installed anew): a removal is decided once per installation.
	Installed(ctx context.Context, namespace, release string) (installation string, found bool, err error)
	// Check returns an error matching lifecycle.ErrOutsideNamespace, naming the objects, when
	// the release's manifest or hooks name objects outside namespace (or of cluster-scoped
	// kinds): Kustos refuses to uninstall it, and says so in every mode before handing anything
	// over. Nil when it may be uninstalled.
	Check(ctx context.Context, namespace, release string) error
}

// detailed is an error that holds more than its author may see (cloudevent's: the sink's
// answer, the network's words): its Error is for the author, its Detail for the operator's log.
type detailed interface {
	error
	Detail() string
}

// fluxHelmRelease is the kind of a helm release that Flux manages from Git.
var fluxHelmRelease = schema.GroupKind{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}

// Scope says which namespaces this installation serves (--namespace-selector;
// *nsscope.Scope): a Cleaner of another namespace belongs to another installation.
type Scope interface {
	Selects(ctx context.Context, namespace string) (bool, error)
	Matches(nsLabels map[string]string) bool
}

// Reconciler gathers a Cleaner's snapshot from the caches, decides with Spec.Decide, reports the
// result in the Cleaner's status and hands what is due to the pipeline.
type Reconciler struct {
	// Client reads Cleaners and targets from the cache, writes Cleaner status, deletes Cleaners.
	Client client.Client
	// Live reads what is looked up rarely and never watched (a Flux HelmRelease of a release
	// to remove) from the API server, so that no informer is started for it.
	Live     client.Reader
	Mapper   meta.RESTMapper
	Access   Access
	Pipeline Pipeline
	Reporter Reporter
	// Scope is --namespace-selector (nil: every namespace): a Cleaner in a namespace outside it
	// is not served at all — no status write, no Event, no effect.
	Scope Scope
	// Observe: observer mode; what is due is reported and the Cleaner is kept.
	Observe bool
	// Proposing: PR mode; a removal waits for its pull request and then for the GitOps tool.
	Proposing bool
	// AutoMerge: the pipeline may merge the removal pull requests (--enable-auto-merge).
	AutoMerge bool
	// GroupWindow is --group-window: in PR mode a Cleaner's removals are one pull request,
	// opened once every one of them has joined, or after this long.
	GroupWindow time.Duration
	// Releases reads helm releases; nil: a Cleaner that lists releases to delete is blocked
	// (outside observer mode).
	Releases Releases
	// Authors verifies who wrote a Cleaner, and AuthorAccess asks what that author may do:
	// outside observer mode nothing is deleted for a Cleaner unless its author may delete it
	// (nil: nothing is deleted for any Cleaner).
	Authors      Authors
	AuthorAccess AuthorAccess
	// ReleaseTouches lists what uninstalling a plain helm release deletes and creates, for the
	// author's SubjectAccessReviews; nil: only the Flux HelmRelease objects are asked about.
	ReleaseTouches ReleaseTouches
	// Policy is the re-check interval while Ready / not Ready (without a change to look at).
	Policy conditions.Policy
	Now    func() time.Time
	Log    logr.Logger

	// TargetCache holds the targets, whole (for the conditions, which may read any field) or as
	// metadata only (see metadataOnly), with every label and annotation: the manager's cache
	// trims what it holds to what the other detectors read (the metadata of their kinds, the
	// fields of the inactivity detector's targets), and holds only helm's Secrets. Nil: the
	// manager's cache.
	TargetCache cache.Cache
	// SharedMetadata are the kinds whose metadata the manager's cache holds with every label
	// and annotation (those another detector watches as metadata): their metadata is read from
	// it, one informer for both, not from TargetCache.
	SharedMetadata map[schema.GroupVersionKind]bool
	// Fields is the union of the fields the conditions read per kind, which TargetCache's
	// transform (Fields.Transform) trims whole objects to. Nil: objects are cached whole.
	Fields *FieldRegistry

	controller controller.Controller
	cache      cache.Cache
	liveCopies liveCopies

	mu       sync.Mutex
	watching map[watchKey]bool
	// specs holds each Cleaner's compiled spec, by name: a Cleaner that is gone is forgotten
	// when its (NotFound) request comes, so the map holds only Cleaners that exist.
	specs map[types.NamespacedName]compiled
}

// compiled is a Cleaner's spec compiled at one generation.
type compiled struct {
	uid        types.UID
	generation int64
	spec       *Spec
	errs       field.ErrorList
}

// SetupWithManager registers the field index and the controller. Target kinds are watched as
// Cleaners come to need them.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, workers int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.Cleaner{}, IndexTargets, indexTargets); err != nil {
		return err
	}
	r.watching = map[watchKey]bool{}
	r.specs = map[types.NamespacedName]compiled{}
	r.cache = mgr.GetCache()
	r.liveCopies = newLiveCopies()
	if r.Mapper == nil {
		r.Mapper = mgr.GetRESTMapper()
	}
	nsMeta := &metav1.PartialObjectMetadata{}
	nsMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("cleaner").
		// A predicate gets no context: its cache read of the Namespace runs under its own.
		For(&v1alpha1.Cleaner{}, builder.WithPredicates(nsscope.Objects(r.Scope), predicate.GenerationChangedPredicate{})). //nolint:contextcheck // predicates get no context
		// A Namespace that joins the selector has its Cleaners looked at.
		WatchesMetadata(nsMeta, handler.EnqueueRequestsFromMapFunc(r.cleanersOfNamespace), builder.WithPredicates(nsscope.Joined(r.Scope))).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Build(r)
	r.controller = c
	return err
}

// cleanersOfNamespace maps a Namespace to its Cleaners.
func (r *Reconciler) cleanersOfNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	var list v1alpha1.CleanerList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns.GetName())); err != nil {
		r.Log.Error(err, "listing Cleaners of namespace", "namespace", ns.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
	}
	return reqs
}

func indexTargets(o client.Object) []string {
	cl, ok := o.(*v1alpha1.Cleaner)
	if !ok {
		return nil
	}
	keys := append([]string{}, cl.Status.ResolvedTargets...)
	for _, k := range cl.Status.SelectorKinds {
		keys = append(keys, "*."+k)
	}
	return keys
}

func (r *Reconciler) compile(cl *v1alpha1.Cleaner) compiled {
	name := types.NamespacedName{Namespace: cl.Namespace, Name: cl.Name}
	r.mu.Lock()
	c, ok := r.specs[name]
	r.mu.Unlock()
	if ok && c.uid == cl.UID && c.generation == cl.Generation {
		return c
	}
	spec, errs := Compile(cl.Spec)
	if spec != nil {
		errs = append(errs, spec.CheckNamespace(cl.Namespace)...)
	}
	c = compiled{uid: cl.UID, generation: cl.Generation, spec: spec, errs: errs}
	r.mu.Lock()
	r.specs[name] = c
	r.mu.Unlock()
	return c
}

func (r *Reconciler) forget(name types.NamespacedName) {
	r.mu.Lock()
	delete(r.specs, name)
	r.mu.Unlock()
}

// outcome is what one look at a Cleaner found, for its status.
type outcome struct {
	reports []conditions.Report
	// next is when to look again (zero: only on change or the re-check).
	next           time.Time
	retry          time.Duration
	expiresAt      *metav1.Time
	resolved       []string
	selectorKinds  []string
	evaluation     *v1alpha1.Evaluation
	nextEvaluation *metav1.Time
	deleteCleaner  bool
	// act carries out the due cleanup, once the status recorded that it is due.
	act func(*outcome) error
	// failed: act reported a failure and stopped.
	failed bool
	// delivered: the sink acknowledged the CloudEvent (or none is configured).
	delivered bool
	// refused are the refusals of helm releases that reach outside the Cleaner's namespace.
	refused []string
	// acted: act ran; pullRequests are the open pull requests carrying what it handed over.
	acted        bool
	pullRequests []string
}

func (o *outcome) report(step string, status metav1.ConditionStatus, reason, msg string) {
	o.reports = append(o.reports, conditions.Report{Step: step, Available: status, Applied: metav1.ConditionTrue,
		Health: metav1.ConditionTrue, Reason: reason, Message: msg})
}

// Reconcile looks at one Cleaner.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.WithLabelValues(Name).Observe(time.Since(start).Seconds()) }()
	var cl v1alpha1.Cleaner
	if err := r.Client.Get(ctx, req.NamespacedName, &cl); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if cl.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if r.Scope != nil {
		ok, err := r.Scope.Selects(ctx, cl.Namespace)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !ok {
			r.forget(req.NamespacedName) // another installation's, or it left the selector
			return reconcile.Result{}, nil
		}
	}
	now := r.Now()
	log := r.Log.WithValues("cleaner", req.String(), "generation", cl.Generation)
	out, err := r.look(ctx, log, &cl, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	// The status is the commit point: a due evaluation is recorded before anything is acted on,
	// so that a Cleaner whose conditions stop holding because of the cleanup itself (they read
	// the objects it deletes) finishes it after a crash or on its next look.
	root, res, err := r.writeStatus(ctx, log, &cl, out, now)
	if err != nil || res != nil {
		return resultOrZero(res), err
	}
	if out.act != nil {
		out.reports = nil
		if err := out.act(&out); err != nil {
			return reconcile.Result{}, err
		}
		if root, res, err = r.writeStatus(ctx, log, &cl, out, now); err != nil || res != nil {
			return resultOrZero(res), err
		}
	}
	if out.deleteCleaner {
		// The Cleaner goes like any object it deletes: through the pipeline, so that a Cleaner
		// defined in Git is removed by a pull request (deleted directly, Flux or Argo CD would
		// create it again) and one that is not is deleted with preconditions.
		summary := fmt.Sprintf("Cleaner %s/%s: its cleanup is done (every target and release marked for deletion is gone); the Cleaner itself goes",
			cl.Namespace, cl.Name)
		h, err := r.handOver(ctx, &cl, r.deletion(&cl, cleanerTarget(&cl), &cl, summary), string(cl.UID), objectVersion(&cl), now, false, lifecycle.Group{})
		if err != nil {
			return reconcile.Result{}, err
		}
		res := h.res
		log.V(1).Info("cleanup done; the Cleaner's own deletion is handed to the pipeline")
		if res.RequeueAfter > 0 {
			return reconcile.Result{RequeueAfter: res.RequeueAfter}, nil
		}
		return reconcile.Result{RequeueAfter: r.Policy.RecheckAfter(true)}, nil
	}

	after := r.Policy.RecheckAfter(root.Ready() == metav1.ConditionTrue)
	if !out.next.IsZero() {
		after = min(after, max(out.next.Sub(now), 0))
	}
	if out.retry > 0 {
		after = min(after, out.retry)
	}
	if after <= 0 {
		after = time.Second // due now: look again promptly, never in a busy loop
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// writeStatus applies out's step reports to cl's conditions (package conditions' rules) and writes
// the status when it changed. res is set when the reconcile should stop here (a conflict).
func (r *Reconciler) writeStatus(ctx context.Context, log logr.Logger, cl *v1alpha1.Cleaner, out outcome, now time.Time) (*conditions.Root, *reconcile.Result, error) {
	root, rerr := conditions.FromConditions(cl.Status.Conditions, cl.Generation, steps...)
	if rerr != nil {
		// Conditions a human edited into something unusable: start over from this look.
		root, _ = conditions.New(cl.Generation, steps...)
	}
	for _, rep := range out.reports {
		rep.ObservedGeneration, rep.At = cl.Generation, now
		if err := root.Accept(rep); err != nil && !errors.Is(err, conditions.ErrAvailabilityUnknown) {
			log.V(1).Info("step report not accepted", "step", rep.Step, "error", err.Error())
		}
	}
	before := cl.Status.DeepCopy()
	st := &cl.Status
	root.SetConditions(&st.Conditions, now)
	st.ObservedGeneration = cl.Generation
	st.ExpiresAt, st.NextScheduledEvaluation = out.expiresAt, out.nextEvaluation
	if out.resolved != nil {
		st.ResolvedTargets, st.SelectorKinds = out.resolved, out.selectorKinds
	}
	if out.evaluation != nil {
		st.LastEvaluation = out.evaluation
	}
	if out.act == nil || out.acted {
		// Not due, or acted on in this look: the pull requests are what it found (a look
		// before acting keeps the last ones).
		st.PullRequests = out.pullRequests
	}
	if statusEqual(before, st) {
		return root, nil, nil
	}
	if err := r.Client.Status().Update(ctx, cl); err != nil {
		if apierrors.IsConflict(err) {
			return root, &reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return root, nil, fmt.Errorf("updating the status of Cleaner %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	return root, nil, nil
}

// resultOrZero returns *r, or the zero Result (nothing to requeue) when r is nil.
func resultOrZero(r *reconcile.Result) reconcile.Result {
	if r == nil {
		return reconcile.Result{}
	}
	return *r
}

// committed reports whether cl's last evaluation, at its current generation, found the cleanup
// due: it is then carried through without evaluating again.
func committed(cl *v1alpha1.Cleaner) bool {
	ev := cl.Status.LastEvaluation
	return ev != nil && ev.Due && cl.Status.ObservedGeneration == cl.Generation
}

// look decides about cl; what is due is returned as out.act, run after the status recorded it. Errors are transient (the API); what is
// wrong with the Cleaner goes into outcome's reports.
func (r *Reconciler) look(ctx context.Context, log logr.Logger, cl *v1alpha1.Cleaner, now time.Time) (outcome, error) {
	var out outcome
	c := r.compile(cl)
	if len(c.errs) > 0 {
		reason := ReasonInvalidSpec
		if allForbidden(c.errs) {
			reason = ReasonForbidden
		}
		msg := c.errs.ToAggregate().Error()
		out.report(v1alpha1.StepTargetsResolved, metav1.ConditionFalse, reason, msg)
		out.report(v1alpha1.StepConditionsEvaluated, metav1.ConditionFalse, reason, msg)
		metrics.InvalidInput.WithLabelValues(Name, "cleaner_spec").Inc()
		return out, r.warn(ctx, cl, reason, msg, now)
	}
	spec := c.spec
	expires := metav1.NewTime(cl.CreationTimestamp.Add(spec.TTL))
	out.expiresAt = &expires
	if now.Before(expires.Time) {
		msg := "the TTL ends at " + expires.UTC().Format(time.RFC3339)
		out.report(v1alpha1.StepTargetsResolved, metav1.ConditionTrue, ReasonWaitingForTTL, msg)
		out.report(v1alpha1.StepConditionsEvaluated, metav1.ConditionTrue, ReasonWaitingForTTL, msg)
		out.report(v1alpha1.StepActionsDone, metav1.ConditionTrue, ReasonNothingDue, msg)
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonNothingDue, msg)
		out.next, out.nextEvaluation = expires.Time, &expires
		return out, nil
	}

	targets, reason, msg, err := r.resolve(ctx, cl, spec)
	if err != nil {
		return out, err
	}
	if reason != "" {
		out.report(v1alpha1.StepTargetsResolved, metav1.ConditionFalse, reason, msg)
		if reason != ReasonKindNotFound && reason != ReasonMissingPermission {
			metrics.InvalidInput.WithLabelValues(Name, "cleaner_target").Inc()
		}
		return out, r.warn(ctx, cl, reason, msg, now)
	}
	objects := map[string][]map[string]any{}
	found := 0
	for _, t := range targets {
		list := make([]map[string]any, len(t.objects))
		for i, o := range t.objects {
			list[i] = o.Object
		}
		objects[t.Name] = list
		found += len(t.objects)
		out.resolved = append(out.resolved, t.resolved...)
		if t.Selector != nil {
			out.selectorKinds = append(out.selectorKinds, resourceKey(t.mapping.Resource))
		}
	}
	out.resolved, out.selectorKinds = setOf(out.resolved, maxResolvedTargets), setOf(out.selectorKinds, 0)
	out.report(v1alpha1.StepTargetsResolved, metav1.ConditionTrue, ReasonResolved,
		fmt.Sprintf("%d targets resolved to %d objects", len(targets), found))

	if committed(cl) {
		out.report(v1alpha1.StepConditionsEvaluated, metav1.ConditionTrue, ReasonConditionsHold,
			"every condition held at "+cl.Status.LastEvaluation.Time.UTC().Format(time.RFC3339)+"; the cleanup is under way")
		out.act = func(o *outcome) error { return r.act(ctx, log, cl, spec, targets, now, true, o) }
		return out, nil
	}
	d := spec.Decide(ctx, Snapshot{Created: cl.CreationTimestamp.Time, Now: now, Objects: objects})
	out.evaluation = evaluationOf(d, now)
	if d.Failed() {
		msg := failures(d)
		out.report(v1alpha1.StepConditionsEvaluated, metav1.ConditionFalse, ReasonEvaluationFailed, msg)
		metrics.InvalidInput.WithLabelValues(Name, "cleaner_condition").Inc()
		if err := r.warn(ctx, cl, ReasonEvaluationFailed, msg, now); err != nil {
			return out, err
		}
	} else if d.Due {
		out.report(v1alpha1.StepConditionsEvaluated, metav1.ConditionTrue, ReasonConditionsHold, "every condition holds")
	} else {
		how := "periodic retry"
		if d.Searched {
			how = "the earliest time they hold (monotonic search)"
		}
		out.report(v1alpha1.StepConditionsEvaluated, metav1.ConditionTrue, ReasonConditionsPending,
			fmt.Sprintf("%s; evaluating again at %s, %s", falseOnes(d), d.Next.UTC().Format(time.RFC3339), how))
	}
	if !d.Due {
		next := metav1.NewTime(d.Next)
		out.next, out.nextEvaluation = d.Next, &next
		out.report(v1alpha1.StepActionsDone, metav1.ConditionTrue, ReasonNothingDue, "the conditions do not all hold")
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonNothingDue, "the conditions do not all hold")
		return out, nil
	}
	out.act = func(o *outcome) error { return r.act(ctx, log, cl, spec, targets, now, false, o) }
	return out, nil
}

func allForbidden(errs field.ErrorList) bool {
	for _, e := range errs {
		if e.Type != field.ErrorTypeForbidden {
			return false
		}
	}
	return len(errs) > 0
}

func evaluationOf(d Verdict, now time.Time) *v1alpha1.Evaluation {
	ev := &v1alpha1.Evaluation{Time: metav1.NewTime(now), Due: d.Due}
	for _, res := range d.Results {
		cr := v1alpha1.ConditionResult{Index: int32(res.Index), Value: res.Value} // at most 16 conditions (the CRD's MaxItems)
		if res.Err != nil {
			cr.Error = clip(res.Err.Error(), 1024)
		}
		ev.Results = append(ev.Results, cr)
	}
	return ev
}

func failures(d Verdict) string {
	var parts []string
	for _, res := range d.Results {
		if res.Err != nil {
			parts = append(parts, fmt.Sprintf("spec.conditions[%d]: %s", res.Index, clip(res.Err.Error(), 512)))
		}
	}
	return strings.Join(parts, "; ") + " (a condition that cannot be evaluated counts as false)"
}

func falseOnes(d Verdict) string {
	var idx []string
	for _, res := range d.Results {
		if !res.Value {
			idx = append(idx, fmt.Sprintf("spec.conditions[%d]", res.Index))
		}
	}
	return strings.Join(idx, ", ") + " false"
}

func setOf(in []string, limit int) []string {
	sort.Strings(in)
	out := in[:0]
	for i, s := range in {
		if i == 0 || s != in[i-1] {
			out = append(out, s)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func statusEqual(a, b *v1alpha1.CleanerStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}
