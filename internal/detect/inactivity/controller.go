package inactivity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
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

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/nsscope"
)

// Pipeline is the change pipeline as the detector uses it (*pipeline.Pipeline).
type Pipeline interface {
	Run(ctx context.Context, req lifecycle.Request) (lifecycle.Result, error)
}

// Reporter writes Warning Events about metadata the detector cannot use, once per id.
type Reporter interface {
	Notify(ctx context.Context, ref corev1.ObjectReference, eventType, reason, message, id string, at time.Time) error
}

// Prober asks an exam endpoint whether it still answers.
type Prober interface {
	Probe(ctx context.Context, url string) Probe
}

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
		MergedNote:   "the target is paused or deleted when the GitOps tool syncs the merge",
		DeclinedNote: declinedNote,
	}
}

// declinedNote is what a closed proposal means, in its Declined Event and its "Opting out".
const declinedNote = "the target stays as it is; Kustos proposes nothing more until it is used and idle again"

// Scope says which namespaces this installation serves (--namespace-selector;
// *nsscope.Scope): targets of other namespaces belong to another installation.
type Scope interface {
	Selects(ctx context.Context, namespace string) (bool, error)
	Matches(nsLabels map[string]string) bool
}

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// Checked is the signal the check loop sends after each check: every target is looked at again.
type Checked = event.TypedGenericEvent[struct{}]

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
	Now     func() time.Time
	Log     logr.Logger

	mu        sync.Mutex
	lastProbe map[types.NamespacedName]time.Time
	// targets are the objects whose last look found a timeout or a probe: what a check's new
	// activity data can change. checks counts the checks, for the full sweeps.
	targets map[types.NamespacedName]bool
	checks  int
}

// FullSweepEvery is how often (in checks) a check is followed by a look at every object of the
// kind, not only at the targets: a template object is not watched, so a timeout its template
// gains is found at the next full sweep (hourly at the default 5-minute check interval).
// Between full sweeps only the targets are looked at again: in a cluster where one Deployment in
// ten is a lab environment, the nine others cost nothing at each check.
const FullSweepEvery = 12

// setTarget records whether the last look at n found it a target.
func (r *Reconciler) setTarget(n types.NamespacedName, target bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !target {
		delete(r.targets, n)
		return
	}
	if r.targets == nil {
		r.targets = map[types.NamespacedName]bool{}
	}
	r.targets[n] = true
}

// afterCheck is what a check queues: every object of the kind at the first check and every
// FullSweepEvery checks, else the targets.
func (r *Reconciler) afterCheck(ctx context.Context) []reconcile.Request {
	r.mu.Lock()
	r.checks++
	full := r.checks%FullSweepEvery == 1
	var reqs []reconcile.Request
	if !full {
		reqs = make([]reconcile.Request, 0, len(r.targets))
		for n := range r.targets {
			reqs = append(reqs, reconcile.Request{NamespacedName: n})
		}
	}
	r.mu.Unlock()
	if full {
		return r.all(ctx, "")
	}
	return reqs
}

// Reconcile decides about one target.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.WithLabelValues(DetectorName).Observe(time.Since(start).Seconds()) }()
	log := r.Log.WithValues("kind", r.Kind.Kind, "namespace", req.Namespace, "name", req.Name)

	// The reconcile only reads the target, its Namespace and its template (GetLabels and
	// GetAnnotations copy; Running, TemplateRefOf and ParsePolicy read): the manager's cache's
	// objects are read without a copy, which was most of what a check cycle allocated. (The
	// target cache holds its objects packed: a read of it is always the caller's own copy.)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.Kind)
	if err := r.Objects.Get(ctx, req.NamespacedName, obj, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetProbe(req.NamespacedName)
			r.setTarget(req.NamespacedName, false)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		r.setTarget(req.NamespacedName, false)
		return reconcile.Result{}, nil
	}
	if r.Scope != nil {
		// Another installation's namespace (or one that left the selector): no Event, no
		// decision; a proposal already open stays for people to close.
		if ok, err := r.Scope.Selects(ctx, obj.GetNamespace()); err != nil || !ok {
			if err == nil {
				r.setTarget(req.NamespacedName, false)
			}
			return reconcile.Result{}, err
		}
	}
	now := r.Now()
	target := lifecycle.Target{Group: r.Kind.Group, Version: r.Kind.Version, Kind: r.Kind.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	objRef := corev1.ObjectReference{APIVersion: r.Kind.GroupVersion().String(), Kind: r.Kind.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}

	sources := []Source{{Name: target.String(), Meta: Meta{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}}}
	var problems []Problem
	var refs []corev1.ObjectReference
	if len(r.TemplateRef) > 0 {
		tpl, ref, problem, err := r.template(ctx, obj)
		if err != nil {
			return reconcile.Result{}, err
		}
		if problem != nil {
			problems = append(problems, *problem)
		}
		if tpl != nil {
			sources = append(sources, *tpl)
			refs = append(refs, ref)
		}
	}
	if ns := obj.GetNamespace(); ns != "" {
		nsObj := &metav1.PartialObjectMetadata{}
		nsObj.SetGroupVersionKind(namespaceGVK)
		if err := r.Meta.Get(ctx, types.NamespacedName{Name: ns}, nsObj, client.UnsafeDisableDeepCopy); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if nsObj.DeletionTimestamp != nil {
			return reconcile.Result{}, nil
		}
		sources = append(sources, Source{Name: "Namespace/" + ns, Meta: Meta{Labels: nsObj.Labels, Annotations: nsObj.Annotations}})
		refs = append(refs, corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns, UID: nsObj.UID})
	}
	policy, more := ParsePolicy(sources, r.Settings)
	problems = append(problems, more...)
	if err := r.report(ctx, log, objRef, refs, problems, now); err != nil {
		return reconcile.Result{}, err
	}
	if policy.Ignored || (policy.Timeout <= 0 && policy.ProbeURL == "") {
		// Opted out, never times out, or metadata that cannot be used: no Lease, no look.
		r.setTarget(req.NamespacedName, false)
		return reconcile.Result{}, nil
	}
	r.setTarget(req.NamespacedName, true)
	running, err := Running(obj, r.Settings.Pause)
	if err != nil {
		if err := r.report(ctx, log, objRef, nil, []Problem{{On: target.String(), Key: "pause state", Value: err.Error(),
			Err: "cannot tell whether the target runs; it is left alone"}}, now); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}
	act, err := ActivityOf(obj, target, r.Sources, r.Tracker)
	if err != nil {
		// A source's target template cannot name this target (a label it indexes is missing):
		// its activity is unknown, so it is left alone, and said so on it.
		return reconcile.Result{}, r.report(ctx, log, objRef, nil, []Problem{{On: target.String(), Key: "--inactivity-config target",
			Value: err.Error(), Err: "a source cannot name this target in its results; its activity is unknown and it is left alone"}}, now)
	}
	var probe *Probe
	requeue := time.Duration(0)
	if policy.ProbeURL != "" && r.Prober != nil && running {
		if r.probeDue(req.NamespacedName, now) {
			p := r.Prober.Probe(ctx, policy.ProbeURL)
			p.At = now
			probe = &p
			if p.Refused {
				// A refused endpoint never answers, so the target is never ended by its probe;
				// its author is told once per URL, without the address it resolved to.
				msg := fmt.Sprintf("%s: %s: %s: not a destination this Kustos may send requests to (an internal address needs the operator's --allowed-destinations); the target is never ended by its probe",
					AnnotationProbeURL, policy.ProbeURL, egress.FailureRefused)
				if err := r.Reporter.Notify(ctx, objRef, corev1.EventTypeWarning, ReasonDestinationRefused, msg,
					"inactivity-refused|"+target.String()+"|"+policy.ProbeURL, now); err != nil {
					return reconcile.Result{}, err
				}
			}
		}
		requeue = r.ProbeInterval
	}

	key := lifecycle.KeyFor(DetectorName, target)
	uid := string(obj.GetUID())
	res, err := r.Pipeline.Run(ctx, lifecycle.Request{
		Key: key, Target: target, UID: uid, Now: now, AutoMerge: r.AutoMerge,
		Group: r.Grouping.For(DetectorName, target, policy.Owner, r.GroupWindow),
		// The owner is told when the termination is held (its submission failed).
		HeldNotice: &lifecycle.Notice{To: policy.OwnerAddress, Owner: policy.Owner, Target: target},
		Decide: func(v lifecycle.View) lifecycle.Decision {
			st, bad := ParseState(v.Bag)
			for _, b := range bad {
				metrics.InvalidInput.WithLabelValues(DetectorName, "state_lease").Inc()
				log.Info("unreadable inactivity state dropped", "entry", b)
			}
			d := Decide(Snapshot{Now: now, Target: target, UID: uid, Created: obj.GetCreationTimestamp().Time, Running: running,
				Policy: policy, Activity: act, Probe: probe, State: st,
				LastDecision: v.LastModified, ProposalOpen: v.ProposalOpen, Declined: v.Declined, Proposed: v.Proposed, Settings: r.Settings})
			log.V(1).Info("inactivity decided", "next", d.Next, "at", d.At, "lastActivity", d.LastActivity, "idleSince", d.IdleSince, "running", running, "resourceVersion", obj.GetResourceVersion())
			out := Findings(key, target, policy, act, d, now)
			if d.State == st && len(bad) == 0 {
				out.Bag = nil // unchanged: no write
			}
			return out
		},
		Supersedes: Supersedes,
	})
	if res.Committed != nil {
		metrics.Decisions.WithLabelValues(DetectorName, string(res.Committed.Edit.Op)).Inc()
	}
	if requeue > 0 && (res.RequeueAfter <= 0 || requeue < res.RequeueAfter) {
		res.RequeueAfter = requeue
	}
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
}

// Findings is the pipeline's decision for d: the Change, the state to keep (always; the caller
// drops it when unchanged), the alert (an Event
// and a Notice to the owner) and the ActivityUnknown Event. The controller and the offline plan
// share it.
func Findings(key lifecycle.Key, target lifecycle.Target, p Policy, act activity.Activity, d Verdict, now time.Time) lifecycle.Decision {
	out := lifecycle.Decision{Change: d.Change, RequeueAfter: d.RequeueAfter, Withdraw: d.Withdraw}
	out.Bag = d.State.Bag()
	if d.Alert {
		idle := d.IdleSince.UTC().Format(time.RFC3339)
		id := "inactivity-alert|" + string(key) + "|" + idle + "|" + strconv.Itoa(d.State.AlertsSent)
		msg := AlertMessage(target, p, d)
		out.Findings = append(out.Findings, lifecycle.Finding{Reason: ReasonInactive, Message: msg, ID: id,
			Notice: &lifecycle.Notice{ID: id, Kind: NoticeAlert, To: p.OwnerAddress, Owner: p.Owner,
				Subject: fmt.Sprintf("%s %s has been idle since %s (alert %d of %d)", target.Kind, target.Name, idle, d.State.AlertsSent, p.MaxAlerts),
				Text:    msg, Target: target, Deadline: d.ActAt, At: now}})
	}
	if d.Unknown {
		out.Findings = append(out.Findings, lifecycle.Finding{Reason: ReasonActivityUnknown, Message: UnknownMessage(act),
			ID: "inactivity-unknown|" + string(key) + "|" + d.IdleSince.UTC().Format(time.RFC3339)})
	}
	return out
}

// NoticeAlert is the kind of an alert's Notice.
const NoticeAlert = "inactivity.alert"

// Running says whether a target runs: its pause field is not at the pause value, or (scale to
// zero) spec.replicas is absent or more than zero.
func Running(obj *unstructured.Unstructured, p Pause) (bool, error) {
	if len(p.Field) > 0 {
		v, found, err := unstructured.NestedFieldNoCopy(obj.Object, p.Field...)
		if err != nil {
			return false, err
		}
		return !found || fmt.Sprint(v) != p.Value, nil
	}
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas")
	if err != nil || !found {
		return true, err
	}
	switch n := v.(type) {
	case int64:
		return n > 0, nil
	case float64:
		return n > 0, nil
	}
	return false, fmt.Errorf("spec.replicas is a %T", v)
}

// template reads the target's template object (its metadata) named by the TemplateRef field: a
// name (same namespace) or a {name, namespace} map. A reference that cannot be followed is a
// Problem; the target then goes by its own and its namespace's metadata.
func (r *Reconciler) template(ctx context.Context, obj *unstructured.Unstructured) (*Source, corev1.ObjectReference, *Problem, error) {
	ns, name, found, problem := TemplateRefOf(obj, r.TemplateRef)
	if !found {
		return nil, corev1.ObjectReference{}, problem, nil
	}
	tpl := &metav1.PartialObjectMetadata{}
	tpl.SetGroupVersionKind(r.TemplateKind)
	if err := r.Meta.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tpl, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, corev1.ObjectReference{}, &Problem{On: obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName(),
				Key: lifecycle.PathString(r.TemplateRef), Value: ns + "/" + name, Err: fmt.Sprintf("no %s of that name; the template's metadata is not read", r.TemplateKind.Kind)}, nil
		}
		return nil, corev1.ObjectReference{}, nil, err
	}
	src := &Source{Name: r.TemplateKind.Kind + "/" + ns + "/" + name, Meta: Meta{Labels: tpl.Labels, Annotations: tpl.Annotations}}
	ref := corev1.ObjectReference{APIVersion: r.TemplateKind.GroupVersion().String(), Kind: r.TemplateKind.Kind, Namespace: ns, Name: name, UID: tpl.UID}
	return src, ref, nil, nil
}

// report writes one Warning Event per unusable value on the object that carries it (the target,
// or one of others: its template, its Namespace), with a log line and a metric.
func (r *Reconciler) report(ctx context.Context, log logr.Logger, target corev1.ObjectReference, others []corev1.ObjectReference, problems []Problem, now time.Time) error {
	for _, p := range problems {
		ref := target
		for _, o := range others {
			if (p.On == o.Kind+"/"+o.Name || p.On == o.Kind+"/"+o.Namespace+"/"+o.Name) && r.mayWriteIn(ctx, o, target.Namespace) {
				ref = o
			}
		}
		reason, dedupe := ReasonInvalidInactivity, "inactivity-invalid|"
		if p.Reason != "" {
			reason, dedupe = p.Reason, "inactivity-invalid|"+p.Reason+"|"
		}
		metrics.InvalidInput.WithLabelValues(DetectorName, p.Key).Inc()
		log.Info("inactivity metadata cannot be used", "reason", reason, "on", p.On, "key", p.Key, "value", lifecycle.Clip(p.Value, 64), "problem", p.Err)
		if err := r.Reporter.Notify(ctx, ref, corev1.EventTypeWarning, reason, p.String(),
			dedupe+p.On+"|"+p.Key+"|"+p.Value, now); err != nil {
			return err
		}
	}
	return nil
}

// mayWriteIn says whether a problem found on o may be reported on o itself: a template object
// in another namespace that --namespace-selector does not select is another installation's, so
// the problem is reported on the target instead (which names o in the message).
func (r *Reconciler) mayWriteIn(ctx context.Context, o corev1.ObjectReference, targetNamespace string) bool {
	if r.Scope == nil || o.Namespace == "" || o.Namespace == targetNamespace {
		return true
	}
	ok, err := r.Scope.Selects(ctx, o.Namespace)
	return err == nil && ok
}

func (r *Reconciler) probeDue(n types.NamespacedName, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastProbe == nil {
		r.lastProbe = map[types.NamespacedName]time.Time{}
	}
	if last, ok := r.lastProbe[n]; ok && now.Sub(last) < r.ProbeInterval {
		return false
	}
	r.lastProbe[n] = now
	return true
}

func (r *Reconciler) forgetProbe(n types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.lastProbe, n)
}

// SetupWithManager registers the controller for Kind (whole objects, unstructured); a
// Namespace's metadata change maps to every target in it, and every activity check to every
// target.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.Kind)
	nsMeta := &metav1.PartialObjectMetadata{}
	nsMeta.SetGroupVersionKind(namespaceGVK)
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

// CheckLoop runs the activity checks (on the leader): one query per source every Interval,
// then every target is looked at again.
type CheckLoop struct {
	Checker  *activity.Checker
	Tracker  *activity.Tracker
	Interval time.Duration
	// Notify are the reconcilers' Checked channels.
	Notify []chan Checked
	Now    func() time.Time
	Log    logr.Logger
}

// NeedLeaderElection: only the leader decides, so only the leader asks Prometheus.
func (l *CheckLoop) NeedLeaderElection() bool { return true }

// Start checks at once, then every Interval, until ctx ends.
func (l *CheckLoop) Start(ctx context.Context) error {
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	for {
		l.CheckOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// CheckOnce runs one check and tells the reconcilers.
func (l *CheckLoop) CheckOnce(ctx context.Context) activity.Result {
	now := l.Now()
	start := time.Now()
	minStep := l.Checker.MinStep
	if minStep <= 0 {
		minStep = time.Minute
	}
	window := l.Tracker.Window(now, l.Interval+2*minStep, activity.Names(l.Checker.Sources))
	res := l.Checker.Check(ctx, now, window)
	l.Tracker.Observe(res)
	metrics.ActivityCheckDuration.Observe(time.Since(start).Seconds())
	for _, s := range res.Sources {
		metrics.ActivityQueries.WithLabelValues(s.Name, s.QueryStatus()).Inc()
		if s.Requests > 1 {
			l.Log.Info("Prometheus refused the query for the samples it would hold; asked again at a coarser step (activity found up to that step later)",
				"source", s.Name, "step", s.Step, "checkStep", res.Step, "requests", s.Requests, "window", res.Window)
		}
		up := 0.0
		if s.Status == activity.StatusOK {
			up = 1
		} else {
			kv := []any{"source", s.Name, "status", s.Status, "detail", s.Detail}
			if len(s.Warnings) > 0 {
				// Prometheus's own text (a Thanos store that did not answer): for the
				// operator, never in the tenants' Events.
				kv = append(kv, "warnings", s.Warnings)
			}
			l.Log.Info("activity source not usable; nothing is declared inactive until it is", kv...)
		}
		metrics.ActivitySourceUp.WithLabelValues(s.Name).Set(up)
		if s.Invalid > 0 {
			metrics.InvalidInput.WithLabelValues(DetectorName, "activity_series").Add(float64(s.Invalid))
			l.Log.Info("activity series skipped: no target labels or no time as value", "source", s.Name, "count", s.Invalid)
		}
	}
	l.Log.V(1).Info("activity checked", "window", res.Window, "step", res.Step, "queries", res.Queries, "took", time.Since(start))
	for _, ch := range l.Notify {
		select {
		case ch <- Checked{}:
		default: // a signal is pending already: one look at every target is enough
		}
	}
	return res
}

// HTTPProber probes exam endpoints with GET: any answer below 500 is alive; an error, a
// timeout or a 5xx is a failure.
type HTTPProber struct {
	// Client asks the tenant's URL: an internal/egress Guard's client (--allowed-destinations),
	// which refuses internal destinations and follows no redirect.
	Client *http.Client
	// Log receives the failure's own words (addresses, TLS names), which the tenant is not
	// shown.
	Log logr.Logger
}

var _ Prober = HTTPProber{}

// Probe asks url once. The result's Detail is the class of a failure only ("timeout", "HTTP
// 5xx", "destination refused"): it reaches the target's Events and the PR body.
func (p HTTPProber) Probe(ctx context.Context, url string) Probe {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return Probe{Detail: "not a URL"}
	}
	req.Header.Set("User-Agent", "kustos-probe")
	resp, err := p.Client.Do(req)
	if err != nil {
		p.Log.Info("exam probe failed", "url", req.URL.Redacted(), "error", lifecycle.Clip(err.Error(), 300))
		return Probe{Detail: egress.Failure(err), Refused: errors.Is(err, egress.ErrRefused)}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 500 {
		p.Log.Info("exam probe failed", "url", req.URL.Redacted(), "status", resp.Status)
		return Probe{Detail: egress.StatusClass(resp.StatusCode)}
	}
	return Probe{OK: true}
}
