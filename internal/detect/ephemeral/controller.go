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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/lifecycle/conditions"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// DetectorName names the detector in Keys (ephemeral/<Kind.group>/<ns>/<name>), Lease names,
// branches and metrics.
const DetectorName = "ephemeral"

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

// Steps of a Cleaner, in order (seed 002's adapters).
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

// Releases removes plain helm releases (internal/actuate/helmrelease.Uninstaller): hooks run,
// the release history goes with it.
type Releases interface {
	// Uninstall is idempotent: a release that is not installed is not an error. A release
	// whose manifest or hooks name objects outside namespace (or of cluster-scoped kinds) is
	// not touched: the error matches lifecycle.ErrOutsideNamespace and names them.
	Uninstall(ctx context.Context, namespace, release string) (removed bool, err error)
	// Check is the same refusal without uninstalling (nil: Uninstall would go ahead), for
	// observer mode to report what it would do.
	Check(ctx context.Context, namespace, release string) error
}

// Sink delivers the CloudEvent of a finished cleanup (internal/actuate/cloudevent.Sender). It
// returns nil only when the sink acknowledged; id is stable for one cleanup, so a repeat after a
// crash is recognisable as one. Its error's text may be shown to the Cleaner's author (the class
// of the failure, egress.ErrRefused wrapped when the destination is refused); an error with a
// Detail method has more for the operator's log.
type Sink interface {
	Send(ctx context.Context, sink, id, subject string, data any) error
}

// detailed is an error that holds more than its author may see (cloudevent's: the sink's
// answer, the network's words).
type detailed interface {
	Detail() string
}

// fluxHelmRelease is the kind of a helm release that Flux manages from Git.
var fluxHelmRelease = schema.GroupKind{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}

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
	// Observe: observer mode; what is due is reported and the Cleaner is kept.
	Observe bool
	// Proposing: PR mode; a removal waits for its pull request and then for the GitOps tool.
	Proposing bool
	// AutoMerge: the pipeline may merge the removal pull requests (--enable-auto-merge).
	AutoMerge bool
	// Releases removes helm releases; nil: a Cleaner that lists releases to delete is blocked.
	Releases Releases
	// Sink sends the CloudEvent of a finished cleanup; nil: a Cleaner with a sink is blocked.
	Sink Sink
	// Authors verifies who wrote a Cleaner, and AuthorAccess asks what that author may do:
	// outside observer mode nothing is deleted for a Cleaner unless its author may delete it
	// (nil: nothing is deleted for any Cleaner).
	Authors      Authors
	AuthorAccess AuthorAccess
	// ReleaseTouches lists what uninstalling a plain helm release deletes and creates, for the
	// author's SubjectAccessReviews; nil: only the Flux HelmRelease objects are asked about.
	ReleaseTouches ReleaseTouches
	// Policy is the re-check interval while Ready / not Ready (seed 002's sentinel).
	Policy conditions.Policy
	Now    func() time.Time
	Log    logr.Logger

	// MetadataCache holds the targets read as metadata only (see metadataOnly), with every
	// label and annotation (the manager's cache trims the metadata of what it holds for the
	// other detectors, and holds only helm's Secrets). Nil: the manager's cache.
	MetadataCache cache.Cache

	controller controller.Controller
	cache      cache.Cache

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
	if r.Mapper == nil {
		r.Mapper = mgr.GetRESTMapper()
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("cleaner").
		For(&v1alpha1.Cleaner{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Build(r)
	r.controller = c
	return err
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

// resourceKey renders "<resource>.<group>/<version>" ("<resource>/<version>" for core).
func resourceKey(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "/" + gvr.Version
	}
	return gvr.Resource + "." + gvr.Group + "/" + gvr.Version
}

// mapObject finds the Cleaners a change of o (of kind gvk) concerns: those that resolved it by
// name, and those with a selector target of its kind in its namespace.
func (r *Reconciler) mapObject(ctx context.Context, gvk schema.GroupVersionKind, o client.Object) []reconcile.Request {
	m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		r.Log.Error(err, "mapping a target change to Cleaners", "kind", gvk.String())
		return nil
	}
	kind := resourceKey(m.Resource)
	seen := map[types.NamespacedName]bool{}
	var out []reconcile.Request
	for _, key := range []string{o.GetName() + "." + kind, "*." + kind} {
		var list v1alpha1.CleanerList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{IndexTargets: key}); err != nil {
			r.Log.Error(err, "listing Cleaners for a target change", "key", key)
			continue
		}
		for i := range list.Items {
			n := types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}
			if !seen[n] {
				seen[n] = true
				out = append(out, reconcile.Request{NamespacedName: n})
			}
		}
	}
	r.Log.V(1).Info("target changed", "kind", kind, "namespace", o.GetNamespace(), "name", o.GetName(), "cleaners", len(out))
	return out
}

// watchKey is one informer of a target kind: whole objects, or their metadata only.
type watchKey struct {
	gvk          schema.GroupVersionKind
	metadataOnly bool
}

// watch makes changes of kind gvk reach the Cleaners that read them (once per kind and form):
// metadataOnly watches (and caches) the objects' metadata only.
func (r *Reconciler) watch(gvk schema.GroupVersionKind, metadataOnly bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := watchKey{gvk: gvk, metadataOnly: metadataOnly}
	if r.watching[key] || r.controller == nil {
		return nil
	}
	var src source.Source
	if metadataOnly {
		o := &metav1.PartialObjectMetadata{}
		o.SetGroupVersionKind(gvk)
		src = source.Kind(r.metadataCache(), o, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
			return r.mapObject(ctx, gvk, o)
		}))
	} else {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		src = source.Kind(r.cache, u, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *unstructured.Unstructured) []reconcile.Request {
			return r.mapObject(ctx, gvk, o)
		}))
	}
	if err := r.controller.Watch(src); err != nil {
		return err
	}
	r.watching[key] = true
	return nil
}

func (r *Reconciler) metadataCache() cache.Cache {
	if r.MetadataCache != nil {
		return r.MetadataCache
	}
	return r.cache
}

// metadataOnly reports whether a target's objects are read as metadata only: when no condition
// reads them (a target only deleted), and always for Secrets, whose data Kustos never caches
// (a condition over a Secret sees its apiVersion, kind and metadata).
func metadataOnly(t Target, m *meta.RESTMapping) bool {
	return !t.Evaluated || isSecret(m.Resource.GroupResource())
}

func isSecret(gr schema.GroupResource) bool { return gr == schema.GroupResource{Resource: "secrets"} }

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
	// refused are the refusals of helm releases that reach outside the Cleaner's namespace.
	refused []string
}

func (o *outcome) report(step string, status metav1.ConditionStatus, reason, msg string) {
	o.reports = append(o.reports, conditions.Report{Step: step, Available: status, Applied: metav1.ConditionTrue,
		Health: metav1.ConditionTrue, Reason: reason, Message: msg})
}

// Reconcile looks at one Cleaner.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.WithLabelValues(DetectorName).Observe(time.Since(start).Seconds()) }()
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
		return ptrOr(res), err
	}
	if out.act != nil {
		out.reports = nil
		if err := out.act(&out); err != nil {
			return reconcile.Result{}, err
		}
		if root, res, err = r.writeStatus(ctx, log, &cl, out, now); err != nil || res != nil {
			return ptrOr(res), err
		}
	}
	if out.deleteCleaner {
		// The Cleaner goes like any object it deletes: through the pipeline, so that a Cleaner
		// defined in Git is removed by a pull request (deleted directly, Flux or Argo CD would
		// create it again) and one that is not is deleted with preconditions.
		target := lifecycle.Target{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "Cleaner",
			Namespace: cl.Namespace, Name: cl.Name}
		summary := fmt.Sprintf("Cleaner %s/%s: its cleanup is done (every target and release marked for deletion is gone); the Cleaner itself goes",
			cl.Namespace, cl.Name)
		_, _, res, err := r.remove(ctx, &cl, target, &cl, summary, now, false)
		if err != nil {
			return reconcile.Result{}, err
		}
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

// writeStatus applies out's step reports to cl's conditions (seed 002's rules) and writes the
// status when it changed. res is set when the reconcile should stop here (a conflict).
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

func ptrOr(r *reconcile.Result) reconcile.Result {
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
		metrics.InvalidInput.WithLabelValues(DetectorName, "cleaner_spec").Inc()
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
			metrics.InvalidInput.WithLabelValues(DetectorName, "cleaner_target").Inc()
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
		metrics.InvalidInput.WithLabelValues(DetectorName, "cleaner_condition").Inc()
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

// act hands every object marked for deletion to the pipeline and, once they are all gone,
// deletes the Cleaner (not in observer mode).
//
// resumed: the due evaluation was recorded by an earlier look, and targets were read again
// since. An object decided on then that has changed since is not acted on: the cleanup is
// withdrawn and the conditions are evaluated afresh.
func (r *Reconciler) act(ctx context.Context, log logr.Logger, cl *v1alpha1.Cleaner, spec *Spec, targets []resolvedTarget, now time.Time, resumed bool, out *outcome) error {
	if !r.Observe {
		// Kustos's rights are not lent: all of the cleanup must be what its author may do.
		if refused, err := r.authorize(ctx, cl, spec, targets, now, out); err != nil || refused {
			return err
		}
	}
	var remaining, blocked, names, changed []string
	for _, t := range targets {
		if !t.Delete {
			continue
		}
		for _, o := range t.objects {
			if o.GetDeletionTimestamp() != nil {
				continue // being deleted
			}
			target := lifecycle.Target{Group: t.mapping.GroupVersionKind.Group, Version: t.mapping.GroupVersionKind.Version,
				Kind: t.mapping.GroupVersionKind.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
			names = append(names, target.String())
			if !r.Observe {
				ok, err := r.Access.Allowed(ctx, "delete", t.mapping.Resource, cl.Namespace)
				if err != nil {
					return err
				}
				if !ok {
					out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonMissingPermission,
						fmt.Sprintf("Kustos may not delete %s in %s: add the kind to the chart value cleaner.targetKinds", t.mapping.Resource.GroupResource(), cl.Namespace))
					return nil
				}
			}
			stuck, moved, res, err := r.remove(ctx, cl, target, o, "", now, resumed)
			if err != nil {
				return err
			}
			if moved {
				changed = append(changed, target.String())
				continue
			}
			if res.RequeueAfter > 0 && (out.retry == 0 || res.RequeueAfter < out.retry) {
				out.retry = res.RequeueAfter
			}
			remaining = append(remaining, target.String())
			if stuck {
				blocked = append(blocked, target.String())
			}
		}
	}
	releases, err := r.removeReleases(ctx, cl, spec, now, resumed, out, &remaining, &blocked, &changed)
	if err != nil || out.failed {
		return err
	}
	if len(changed) > 0 {
		msg := "changed since the conditions were evaluated: " + strings.Join(changed, ", ") + "; evaluating again"
		log.Info("cleanup withdrawn", "changed", changed)
		out.evaluation = &v1alpha1.Evaluation{Time: metav1.NewTime(now), Due: false}
		out.report(v1alpha1.StepConditionsEvaluated, metav1.ConditionUnknown, "TargetChanged", msg)
		out.retry = time.Second
		return nil
	}
	if !resumed && out.evaluation != nil {
		out.evaluation.Deletes = setOf(append([]string{}, names...), maxResolvedTargets)
	}
	if err := r.announce(ctx, cl, append(names, releasesOf(releases)...), now); err != nil {
		return err
	}
	switch {
	case len(out.refused) > 0:
		// Before observer mode: what it reports is what Kustos would do.
		out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonReleaseOutsideNamespace,
			clip(strings.Join(out.refused, "; "), 2048))
		return nil
	case r.Observe:
		msg := "the cleanup is due; observer mode only reports it"
		if len(names) > 0 {
			msg = "the cleanup is due (would delete " + strings.Join(names, ", ") + "); observer mode only reports it"
		}
		out.report(v1alpha1.StepActionsDone, metav1.ConditionTrue, ReasonObserverMode, msg)
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonObserverMode, "observer mode sends no CloudEvent")
		return nil
	case len(blocked) > 0:
		out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonCleanupBlocked,
			"still present after the decision to delete them (see their Warning Events): "+strings.Join(blocked, ", "))
		return nil
	case len(remaining) > 0:
		// In progress (a pull request to merge, a deletion to observe): Unknown, which seed 002
		// keeps out of the root conditions; the Cleaner is looked at again when they go.
		out.report(v1alpha1.StepActionsDone, metav1.ConditionUnknown, "CleanupInProgress", "waiting for "+strings.Join(remaining, ", ")+" to go")
		return nil
	}
	out.report(v1alpha1.StepActionsDone, metav1.ConditionTrue, ReasonCleanedUp, "every target and release marked for deletion is gone")
	if spec.Sink != "" {
		if r.Sink == nil {
			out.report(v1alpha1.StepEventDelivered, metav1.ConditionFalse, ReasonNotDelivered, "this Kustos sends no CloudEvents")
			return nil
		}
		var deleted []string
		if ev := cl.Status.LastEvaluation; ev != nil {
			deleted = ev.Deletes
		}
		if out.evaluation != nil && len(out.evaluation.Deletes) > 0 {
			deleted = out.evaluation.Deletes
		}
		data := lifecycle.Cleaned{Cleaner: cl.Namespace + "/" + cl.Name, Targets: orEmpty(deleted), Releases: orEmpty(releases), At: now.UTC()}
		id := fmt.Sprintf("%s/%d", cl.UID, cl.Generation)
		if delivered(cl) {
			// Sent and acknowledged at an earlier look; the Cleaner now waits for its own
			// removal (a pull request to merge): the sink gets the event once.
			out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonDelivered, "the sink acknowledged the CloudEvent "+id)
		} else if err := r.Sink.Send(ctx, spec.Sink, id, data.Cleaner, data); err != nil {
			if d := detailed(nil); errors.As(err, &d) {
				log.Info("CloudEvent not delivered", "detail", d.Detail())
			}
			msg := clip(err.Error(), 1024)
			if errors.Is(err, egress.ErrRefused) {
				// Only the operator can change that (--allowed-destinations, then a restart,
				// which looks at every Cleaner), or the author (a new sink, a new generation).
				out.report(v1alpha1.StepEventDelivered, metav1.ConditionFalse, ReasonDestinationRefused, msg+" (the Cleaner stays until the sink acknowledges)")
				out.retry = r.Policy.RecheckAfter(true)
				return r.warn(ctx, cl, ReasonDestinationRefused, msg, now)
			}
			out.report(v1alpha1.StepEventDelivered, metav1.ConditionFalse, ReasonNotDelivered, msg+" (the Cleaner stays until the sink acknowledges)")
			out.retry = r.Policy.RecheckAfter(false)
			return r.warn(ctx, cl, ReasonNotDelivered, msg, now)
		}
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonDelivered, "the sink acknowledged the CloudEvent "+id)
	} else {
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonNoSink, "no CloudEvent sink is configured")
	}
	log.Info("cleanup done", "deleted", len(names), "releases", len(releases))
	out.deleteCleaner = true
	return nil
}

// delivered reports whether the sink acknowledged this generation's CloudEvent already.
func delivered(cl *v1alpha1.Cleaner) bool {
	c := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.StepEventDelivered)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ReasonDelivered && c.ObservedGeneration == cl.Generation
}

// remove hands the deletion of one object to the pipeline: a pull request when the GitOps
// repository defines it, a preconditioned delete when it does not, an Event in observer mode.
// stuck reports that this very version was decided on before and is still here: the
// pipeline reported why (a refusal, a declined pull request), and no second decision is made
// for it.
//
// moved (only when resumed) reports that another version of the object was decided on before:
// it changed since, and nothing is decided.
func (r *Reconciler) remove(ctx context.Context, cl *v1alpha1.Cleaner, target lifecycle.Target, o metav1.Object, summary string, now time.Time, resumed bool) (stuck, moved bool, res lifecycle.Result, err error) {
	version := string(o.GetUID()) + "/" + o.GetResourceVersion()
	if summary == "" {
		summary = fmt.Sprintf("Cleaner %s/%s: its TTL passed and every condition holds; %s is to be deleted", cl.Namespace, cl.Name, target)
	}
	change := lifecycle.Change{
		Key: lifecycle.KeyFor(DetectorName, target), Detector: DetectorName, Target: target,
		Edit: lifecycle.Edit{Op: lifecycle.EditDelete, Preconditions: &lifecycle.Preconditions{
			UID: string(o.GetUID()), ResourceVersion: o.GetResourceVersion()}},
		Reason:  ReasonCleanupDue,
		Summary: summary,
		Evidence: []map[string]string{{
			"cleaner": cl.Namespace + "/" + cl.Name, "expiresAt": cl.CreationTimestamp.Add(r.compile(cl).spec.TTL).UTC().Format(time.RFC3339),
			"conditions": strings.Join(cl.Spec.Conditions, " && "), "uid": string(o.GetUID()), "resourceVersion": o.GetResourceVersion(),
		}},
	}
	res, err = r.Pipeline.Run(ctx, lifecycle.Request{
		Key: change.Key, Target: target, UID: string(o.GetUID()), Now: now, AutoMerge: r.AutoMerge,
		Decide: func(v lifecycle.View) lifecycle.Decision {
			// The bag names the version decided on and the Key's last decision time before it.
			// The pipeline writes the bag before it records the decision, so a bag whose
			// "before" is still the last decision time is a decision not recorded yet (made in
			// this Run, or cut short by a crash): decide it (again). Once recorded, this version
			// is never decided a second time: one Event, one pull request, one delete per version.
			before := v.LastModified.UTC().Format(time.RFC3339Nano)
			if resumed && v.Bag[bagDecided] != "" && v.Bag[bagDecided] != version && !v.ProposalOpen {
				moved = true
				return lifecycle.Decision{}
			}
			if v.Bag[bagDecided] == version && v.Bag[bagBefore] != before {
				if !v.ProposalOpen && !r.Proposing && !r.Observe {
					stuck = true
				}
				return lifecycle.Decision{}
			}
			bag := map[string]string{bagDecided: version, bagBefore: before}
			if v.Bag[bagDecided] == version {
				bag[bagBefore] = v.Bag[bagBefore]
			}
			return lifecycle.Decision{Change: &change, Bag: bag}
		},
	})
	return stuck, moved, res, err
}

// announce writes one CleanupDue Event on the Cleaner per generation.
func (r *Reconciler) announce(ctx context.Context, cl *v1alpha1.Cleaner, names []string, now time.Time) error {
	msg := "Every condition holds"
	if len(names) > 0 {
		msg += "; deleting " + strings.Join(names, ", ")
	}
	if r.Observe {
		msg += " (observer mode: reported only)"
	}
	return r.Reporter.Notify(ctx, cleanerRef(cl), corev1.EventTypeNormal, ReasonCleanupDue, msg,
		fmt.Sprintf("cleanupdue|%s|%d", cl.UID, cl.Generation), now)
}

// warn writes one Warning Event on the Cleaner per generation and message.
func (r *Reconciler) warn(ctx context.Context, cl *v1alpha1.Cleaner, reason, msg string, now time.Time) error {
	r.Log.Info("Cleaner cannot proceed", "cleaner", cl.Namespace+"/"+cl.Name, "reason", reason, "message", msg)
	return r.Reporter.Notify(ctx, cleanerRef(cl), corev1.EventTypeWarning, reason, msg,
		fmt.Sprintf("%s|%s|%d|%s", reason, cl.UID, cl.Generation, msg), now)
}

func cleanerRef(cl *v1alpha1.Cleaner) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Cleaner",
		Namespace: cl.Namespace, Name: cl.Name, UID: cl.UID}
}

// resolvedTarget is a target with its kind resolved and its objects read.
type resolvedTarget struct {
	Target
	mapping  *meta.RESTMapping
	objects  []*unstructured.Unstructured
	resolved []string
}

// resolve maps every target's kind (kind or resource name, any case) through the RESTMapper,
// refuses cluster-scoped kinds, checks that Kustos may watch them, watches them, and reads their
// objects from the cache. A non-empty reason says why the targets cannot be used.
func (r *Reconciler) resolve(ctx context.Context, cl *v1alpha1.Cleaner, spec *Spec) (out []resolvedTarget, reason, msg string, err error) {
	for i, t := range spec.Targets {
		path := fmt.Sprintf("spec.targets[%d]", i)
		m, merr := r.mapping(t)
		if merr != nil {
			if meta.IsNoMatchError(merr) {
				return nil, ReasonKindNotFound, fmt.Sprintf("%s: the API server serves no kind %q in %s/%s", path, t.Kind, t.Group, t.Version), nil
			}
			return nil, "", "", merr
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			return nil, ReasonForbidden, fmt.Sprintf("%s: %s is cluster-scoped; a Cleaner acts only in its own namespace", path, m.GroupVersionKind.Kind), nil
		}
		for _, verb := range []string{"list", "watch"} {
			ok, aerr := r.Access.Allowed(ctx, verb, m.Resource, "")
			if aerr != nil {
				return nil, "", "", aerr
			}
			if !ok {
				return nil, ReasonMissingPermission, fmt.Sprintf("%s: Kustos may not %s %s: add the kind to the chart value cleaner.targetKinds",
					path, verb, m.Resource.GroupResource()), nil
			}
		}
		metaOnly := metadataOnly(t, m)
		if err := r.watch(m.GroupVersionKind, metaOnly); err != nil {
			return nil, "", "", fmt.Errorf("watching %s: %w", m.GroupVersionKind, err)
		}
		rt := resolvedTarget{Target: t, mapping: m}
		kind := resourceKey(m.Resource)
		objs, err := r.read(ctx, m.GroupVersionKind, cl.Namespace, t, metaOnly)
		if err != nil {
			return nil, "", "", err
		}
		rt.objects = objs
		if t.Selector == nil {
			rt.resolved = []string{t.ObjectName + "." + kind}
		} else {
			for _, o := range objs {
				rt.resolved = append(rt.resolved, o.GetName()+"."+kind)
			}
		}
		out = append(out, rt)
	}
	return out, "", "", nil
}

// read returns the target's objects in namespace from the cache, sorted by name: whole, or
// (metaOnly) as apiVersion, kind and metadata.
func (r *Reconciler) read(ctx context.Context, gvk schema.GroupVersionKind, namespace string, t Target, metaOnly bool) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	if t.Selector == nil {
		var err error
		if metaOnly {
			o := &metav1.PartialObjectMetadata{}
			o.SetGroupVersionKind(gvk)
			if err = r.metadataCache().Get(ctx, client.ObjectKey{Namespace: namespace, Name: t.ObjectName}, o); err == nil {
				var u *unstructured.Unstructured
				if u, err = fromMetadata(gvk, o); err == nil {
					out = append(out, u)
				}
			}
		} else {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err = r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: t.ObjectName}, u); err == nil {
				out = append(out, u)
			}
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, namespace, t.ObjectName, err)
		}
		return out, nil
	}
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: t.Selector}}
	listKind := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if metaOnly {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(listKind)
		if err := r.metadataCache().List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, namespace, err)
		}
		for i := range list.Items {
			u, err := fromMetadata(gvk, &list.Items[i])
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	} else {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(listKind)
		if err := r.Client.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, namespace, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// fromMetadata is o as the conditions see an object read as metadata: apiVersion, kind and
// metadata, nothing else.
func fromMetadata(gvk schema.GroupVersionKind, o *metav1.PartialObjectMetadata) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&o.ObjectMeta)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": m}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// mapping resolves a target's kind, which may be a kind (Service) or a resource name (service,
// services) in any case, to the served kind as the API spells it.
func (r *Reconciler) mapping(t Target) (*meta.RESTMapping, error) {
	gvk, err := r.Mapper.KindFor(schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: strings.ToLower(t.Kind)})
	if err != nil {
		// Not a resource name: a kind, as written.
		m, kerr := r.Mapper.RESTMapping(schema.GroupKind{Group: t.Group, Kind: t.Kind}, t.Version)
		if kerr != nil {
			return nil, err
		}
		gvk = m.GroupVersionKind
	}
	return r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

func allForbidden(errs field.ErrorList) bool {
	for _, e := range errs {
		if e.Type != field.ErrorTypeForbidden {
			return false
		}
	}
	return len(errs) > 0
}

func evaluationOf(d Decision, now time.Time) *v1alpha1.Evaluation {
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

func failures(d Decision) string {
	var parts []string
	for _, res := range d.Results {
		if res.Err != nil {
			parts = append(parts, fmt.Sprintf("spec.conditions[%d]: %s", res.Index, clip(res.Err.Error(), 512)))
		}
	}
	return strings.Join(parts, "; ") + " (a condition that cannot be evaluated counts as false)"
}

func falseOnes(d Decision) string {
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

// removeReleases removes the helm releases marked for deletion: one that a Flux HelmRelease
// object manages goes through the pipeline like any object (a pull request removing it from
// Git); a plain one is uninstalled with helm (hooks run), unless its manifest or hooks reach
// outside the Cleaner's namespace (out.refused). Observer mode only lists them, and refuses the
// same releases. It returns the releases that are (or would be) removed.
func (r *Reconciler) removeReleases(ctx context.Context, cl *v1alpha1.Cleaner, spec *Spec, now time.Time, resumed bool,
	out *outcome, remaining, blocked, changed *[]string) ([]string, error) {
	var names []string
	for _, rel := range spec.Releases {
		if !rel.Delete {
			continue
		}
		names = append(names, rel.Name)
		if r.Observe {
			if r.Releases == nil {
				continue
			}
			if err := r.Releases.Check(ctx, cl.Namespace, rel.Name); err != nil {
				if !errors.Is(err, lifecycle.ErrOutsideNamespace) {
					return names, err
				}
				names = names[:len(names)-1]
				if err := r.refuseRelease(ctx, cl, err, now, out); err != nil {
					return names, err
				}
			}
			continue
		}
		hr, m, err := r.fluxRelease(ctx, cl.Namespace, rel.Name)
		if err != nil {
			return names, err
		}
		if hr != nil {
			target := lifecycle.Target{Group: m.GroupVersionKind.Group, Version: m.GroupVersionKind.Version, Kind: m.GroupVersionKind.Kind,
				Namespace: cl.Namespace, Name: rel.Name}
			stuck, moved, res, err := r.remove(ctx, cl, target, hr, "", now, resumed)
			if err != nil {
				return names, err
			}
			switch {
			case moved:
				*changed = append(*changed, target.String())
			case stuck:
				*blocked = append(*blocked, target.String())
				*remaining = append(*remaining, target.String())
			default:
				*remaining = append(*remaining, target.String())
			}
			if res.RequeueAfter > 0 && (out.retry == 0 || res.RequeueAfter < out.retry) {
				out.retry = res.RequeueAfter
			}
			continue
		}
		if r.Releases == nil {
			out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonUninstallFailed, "this Kustos cannot uninstall helm releases")
			out.failed = true
			return names, nil
		}
		if _, err := r.Releases.Uninstall(ctx, cl.Namespace, rel.Name); err != nil {
			if errors.Is(err, lifecycle.ErrOutsideNamespace) {
				names = names[:len(names)-1]
				if err := r.refuseRelease(ctx, cl, err, now, out); err != nil {
					return names, err
				}
				continue
			}
			msg := fmt.Sprintf("helm release %s/%s: %s", cl.Namespace, rel.Name, clip(err.Error(), 1024))
			out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonUninstallFailed, msg)
			out.failed = true
			return names, r.warn(ctx, cl, ReasonUninstallFailed, msg, now)
		}
	}
	return names, nil
}

// refuseRelease reports a release that would have Kustos act outside the Cleaner's namespace
// (refusal matches lifecycle.ErrOutsideNamespace and names the objects): a Warning Event, a log
// line, a count, and out.refused for the status. The Cleaner's other releases go on; this one is
// refused again at every look (the Cleaner is not ready, so looked at after the not-ready
// recheck), with one Event per generation and message.
func (r *Reconciler) refuseRelease(ctx context.Context, cl *v1alpha1.Cleaner, refusal error, now time.Time, out *outcome) error {
	msg := clip(refusal.Error(), 1024)
	out.refused = append(out.refused, msg)
	metrics.InvalidInput.WithLabelValues(DetectorName, "helm_release").Inc()
	return r.warn(ctx, cl, ReasonReleaseOutsideNamespace, msg, now)
}

// fluxRelease returns the Flux HelmRelease object named name, or nil when Flux is not installed
// or defines no such release.
func (r *Reconciler) fluxRelease(ctx context.Context, namespace, name string) (*unstructured.Unstructured, *meta.RESTMapping, error) {
	m, err := r.Mapper.RESTMapping(fluxHelmRelease)
	if meta.IsNoMatchError(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind)
	reader := r.Live
	if reader == nil {
		reader = r.Client
	}
	err = reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading HelmRelease %s/%s: %w", namespace, name, err)
	}
	return u, m, nil
}

func releasesOf(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "helm release " + n
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
