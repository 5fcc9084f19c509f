package expiry

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
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

// Scope says which namespaces this installation serves (--namespace-selector;
// *nsscope.Scope): objects of other namespaces, and those Namespaces themselves, belong to
// another installation. Cluster-scoped kinds other than Namespaces are always in scope.
type Scope interface {
	Selects(ctx context.Context, namespace string) (bool, error)
	Matches(nsLabels map[string]string) bool
}

// inScope: a Namespace by its own labels, another object by its namespace's (nil: cluster-scoped).
func inScope(s Scope, obj, ns *metav1.PartialObjectMetadata) bool {
	switch {
	case s == nil:
		return true
	case ns != nil:
		return s.Matches(ns.Labels)
	case obj.GroupVersionKind() == namespaceGVK:
		return s.Matches(obj.Labels)
	}
	return true
}

var namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

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
	Now      func() time.Time
	Log      logr.Logger

	mu sync.Mutex
	// orphans are the orphans' keys, hashed: only counted (the gauge), and held for every
	// orphan of the cluster (18,000 of the whole-cluster bench's Deployments), a hash is 8
	// bytes where a namespace and name are 32 and their strings. Two keys sharing a hash
	// (odds of about 10⁻¹¹ at 20,000 orphans) would count one too few until set again.
	orphans    map[uint64]struct{}
	orphanSeed maphash.Seed
}

// Reconcile decides about one object.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() { metrics.ReconcileDuration.WithLabelValues(DetectorName).Observe(time.Since(start).Seconds()) }()
	log := r.Log.WithValues("kind", r.Kind.Kind, "namespace", req.Namespace, "name", req.Name)

	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(r.Kind)
	if err := r.Cache.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.setOrphan(req.NamespacedName, false)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if obj.DeletionTimestamp != nil {
		r.setOrphan(req.NamespacedName, false)
		return reconcile.Result{}, nil
	}
	target := lifecycle.Target{Group: r.Kind.Group, Version: r.Kind.Version, Kind: r.Kind.Kind, Namespace: obj.Namespace, Name: obj.Name}
	var nsObj *metav1.PartialObjectMetadata
	var nsMeta *Meta
	if obj.Namespace != "" {
		nsObj = &metav1.PartialObjectMetadata{}
		nsObj.SetGroupVersionKind(namespaceGVK)
		if err := r.Cache.Get(ctx, types.NamespacedName{Name: obj.Namespace}, nsObj); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if nsObj.DeletionTimestamp != nil {
			return reconcile.Result{}, nil
		}
		nsMeta = &Meta{Labels: nsObj.Labels, Annotations: nsObj.Annotations}
	}
	if !inScope(r.Scope, obj, nsObj) {
		// Another installation's (or it left the selector): no Event, no decision; a proposal
		// already open stays for people to close.
		r.setOrphan(req.NamespacedName, false)
		return reconcile.Result{}, nil
	}
	now := r.Now()
	policy, problems := ParsePolicy(obj.CreationTimestamp.Time, SourcesOf(target, Meta{Labels: obj.Labels, Annotations: obj.Annotations}, nsMeta), r.Scalable, r.Settings)
	objRef := corev1.ObjectReference{APIVersion: r.Kind.GroupVersion().String(), Kind: r.Kind.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID}
	if err := ReportProblems(ctx, r.Reporter, log, objRef, namespaceRef(nsObj), problems, now); err != nil {
		return reconcile.Result{}, err
	}
	orphan := len(policy.Missing()) > 0 && len(problems) == 0
	r.setOrphan(req.NamespacedName, orphan)
	key := lifecycle.KeyFor(DetectorName, target)
	if !scheduled(policy) && !hasState(ctx, r.HasState, key) {
		// Opted out, an orphan, or metadata that cannot be used: nothing to schedule and
		// nobody to warn. No pipeline run, so no Lease either.
		return reconcile.Result{}, nil
	}
	// Scheduled, or it was (its Lease exists): then Decide clears the owner and deadline the
	// Lease recorded, so the former owner's page no longer lists it, and withdraws a removal
	// it proposed.
	pipelineReq := decideRequest(key, target, string(obj.UID), now, policy, r.Settings, r.Links, log)
	pipelineReq.AutoMerge = r.AutoMerge
	pipelineReq.Group = r.Grouping.For(DetectorName, target, policy.Owner, r.GroupWindow)
	res, err := r.Pipeline.Run(ctx, pipelineReq)
	countCommitted(res)
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
}

// scheduled: the policy names an owner and a deadline and the target is not opted out.
func scheduled(p Policy) bool { return !p.Ignored && !p.Deadline.IsZero() && p.Owner != "" }

// hasState asks has (nil: no Lease is looked for) whether key has a state Lease.
func hasState(ctx context.Context, has func(context.Context, lifecycle.Key) bool, key lifecycle.Key) bool {
	return has != nil && has(ctx, key)
}

// countCommitted counts a decision the pipeline recorded, by what it does.
func countCommitted(res lifecycle.Result) {
	if res.Committed != nil {
		metrics.Decisions.WithLabelValues(DetectorName, string(res.Committed.Edit.Op)).Inc()
	}
}

// decideRequest is the pipeline Request of one target, shared by workloads, Namespaces and
// helm releases: the pure Decide over the Lease's state, its warning and done messages as
// Findings with Notices (extension links minted by links, when set).
func decideRequest(key lifecycle.Key, target lifecycle.Target, uid string, now time.Time, policy Policy, settings Settings,
	links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error), log logr.Logger) lifecycle.Request {
	req := KeptRequest(key, target, uid, now, settings, links, log, func(State) (Policy, Kept) { return policy, Kept{} })
	// The owner is told when the removal is held (a backup or submission before it failed).
	// Kept lifetimes (VMs) have no step before their quarantine, hence none there.
	req.HeldNotice = &lifecycle.Notice{To: policy.OwnerAddress, Owner: policy.Owner, Target: target}
	return req
}

// PolicyOf is the policy of a target whose lifetime Kustos keeps in its state, given what the
// Lease remembers: the policy, and the lifetime to keep from now on.
type PolicyOf func(State) (Policy, Kept)

// KeptRequest is the pipeline Request of a target whose lifetime lives (also) in its Lease
// (State.Kept): policyOf reads the kept lifetime and what the target says now, and what it
// returns to keep is written back with the rest of the state. Targets whose metadata is never
// lost pass a policyOf that ignores the state (decideRequest). The schedule is Decide's.
func KeptRequest(key lifecycle.Key, target lifecycle.Target, uid string, now time.Time, settings Settings,
	links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error), log logr.Logger, policyOf PolicyOf) lifecycle.Request {
	return lifecycle.Request{
		Key: key, Target: target, UID: uid, Now: now,
		Decide: func(v lifecycle.View) lifecycle.Decision {
			st, bad := ParseState(v.Bag)
			for _, b := range bad {
				metrics.InvalidInput.WithLabelValues(DetectorName, "state_lease").Inc()
				log.Info("unreadable expiry state dropped", "entry", b)
			}
			policy, kept := policyOf(st)
			st0 := st
			st.Kept = kept
			last := Decide(Snapshot{Now: now, Target: target, UID: uid,
				Policy: policy, State: st, LastDecision: v.LastModified, ProposalOpen: v.ProposalOpen, Declined: v.Declined,
				Proposed: v.Proposed, Settings: settings})
			log.V(1).Info("expiry decided", "next", last.Next, "at", last.At, "deadline", last.Deadline)
			out := lifecycle.Decision{Change: last.Change, RequeueAfter: last.RequeueAfter, Withdraw: last.Withdraw}
			if !reflect.DeepEqual(last.State, st0) || len(bad) > 0 {
				out.Bag = last.State.Bag()
			}
			if last.Warn {
				id := "expiry-warning|" + string(key) + "|" + last.Deadline.Format(time.RFC3339)
				msg := WarningMessage(target, policy, last.Deadline, last.At)
				n := notice(id, NoticeWarning, target, policy, last, msg, now)
				if links != nil {
					ls, err := links(key, last.Deadline, last.At.Add(LinkGrace))
					if err != nil {
						log.Error(err, "cannot make extension links; the warning goes without them")
					}
					n.Links = ls
				}
				out.Findings = append(out.Findings, lifecycle.Finding{Reason: ReasonExpiryWarning, Message: msg, ID: id, Notice: n})
			}
			if last.SendDone {
				id := "expiry-done|" + string(key) + "|" + last.Deadline.Format(time.RFC3339)
				msg := DoneMessage(target, policy, last.Deadline, last.Action)
				out.Findings = append(out.Findings, lifecycle.Finding{Reason: ReasonExpired, Message: msg, ID: id,
					Notice: notice(id, NoticeDone, target, policy, last, msg, now)})
			}
			return out
		},
		Supersedes: Supersedes,
	}
}

// LinkGrace is how long an extension link works after the environment would go: in PR mode its
// removal may wait for room in the pull-request budget or for a reviewer, and until it is merged
// the owner can still keep it (an extension takes it out of the queue or the pull request).
// A link still works once; one used after the removal extends nothing that exists.
const LinkGrace = 7 * 24 * time.Hour

// Notice kinds.
const (
	NoticeWarning = "expiry.warning"
	NoticeDone    = "expiry.done"
)

func notice(id, kind string, t lifecycle.Target, p Policy, d Verdict, text string, now time.Time) *lifecycle.Notice {
	name := t.Kind + " " + t.Name
	if p.Label != "" {
		name = p.Label
	}
	subject := fmt.Sprintf("%s expires at %s", name, d.Deadline.UTC().Format(time.RFC3339))
	at := d.At
	if kind == NoticeDone {
		subject = fmt.Sprintf("%s expired and was %s", name, pastTense(d.Action))
		at = now
	}
	return &lifecycle.Notice{ID: id, Kind: kind, To: p.OwnerAddress, Owner: p.Owner, Subject: subject, Text: text,
		Target: t, Deadline: d.Deadline, At: at}
}

func pastTense(a Action) string {
	if a == ActionPause {
		return "paused"
	}
	if a == ActionUninstall {
		return "uninstalled"
	}
	if a == ActionQuarantine {
		return "quarantined"
	}
	return "removed"
}

// SourcesOf are the places an object's expiry metadata is looked up, in order: the object,
// then its namespace (nil for Namespaces and cluster-scoped kinds). The controller and
// `kustos expiry plan` both use it.
func SourcesOf(t lifecycle.Target, obj Meta, ns *Meta) []Source {
	out := []Source{{Name: t.String(), Meta: obj}}
	if ns != nil && t.Namespace != "" {
		out = append(out, Source{Name: "Namespace/" + t.Namespace, Meta: *ns})
	}
	return out
}

// Supersedes: a removal for a later deadline (a new cycle after an extension or a new
// expires-at) replaces a declined or open one; the same deadline again does not.
var Supersedes = lifecycle.LaterEvidence("deadline")

// WarningMessage is the warning's text: which environment, its deadline and where it comes
// from, and the earliest time it is removed.
func WarningMessage(t lifecycle.Target, p Policy, deadline, actAt time.Time) string {
	keep := fmt.Sprintf("set %s in Git or opt its namespace out", AnnotationExpiresAt)
	if p.KeptInState {
		keep = "use an extension link, or write a longer lifetime into it"
	}
	return fmt.Sprintf("%s expires at %s (%s) and will be %s at %s at the earliest; owner %s. To keep it longer, %s.",
		p.label(t), deadline.UTC().Format(time.RFC3339), p.From, actionWords(p.Action), actAt.UTC().Format(time.RFC3339), p.Owner, keep)
}

// DoneMessage tells the owner it happened.
func DoneMessage(t lifecycle.Target, p Policy, deadline time.Time, a Action) string {
	return fmt.Sprintf("%s expired at %s and was %s; owner %s.", p.label(t), deadline.UTC().Format(time.RFC3339), actionWords(a), p.Owner)
}

// actionWords is what happens to an environment, in a message.
func actionWords(a Action) string {
	switch a {
	case ActionPause:
		return "paused (scaled to zero)"
	case ActionQuarantine:
		return "quarantined (powered off, renamed and moved into the quarantine folder; not destroyed)"
	}
	return "removed"
}

// ReportProblems writes one Warning Event per unusable value, on the object that carries it
// (target, or its namespace ns; nil for targets without one), with a log line and a metric.
// Workloads, helm releases and vSphere VMs share it.
func ReportProblems(ctx context.Context, rep Reporter, log logr.Logger, target corev1.ObjectReference, ns *corev1.ObjectReference,
	problems []Problem, now time.Time) error {
	for _, p := range problems {
		ref := target
		if ns != nil && p.On == "Namespace/"+ns.Name {
			ref = *ns
		}
		reason, dedupe := ReasonInvalidExpiry, "expiry-invalid|"
		if p.Reason != "" {
			reason, dedupe = p.Reason, "expiry-invalid|"+p.Reason+"|"
		}
		metrics.InvalidInput.WithLabelValues(DetectorName, strings.TrimPrefix(p.Key, "label ")).Inc()
		log.Info("expiry metadata cannot be used", "reason", reason, "on", p.On, "key", p.Key, "value", lifecycle.Clip(p.Value, 64), "problem", p.Err)
		if err := rep.Notify(ctx, ref, corev1.EventTypeWarning, reason, p.String(),
			dedupe+p.On+"|"+p.Key+"|"+p.Value, now); err != nil {
			return err
		}
	}
	return nil
}

// namespaceRef is the Event reference of a Namespace.
func namespaceRef(ns *metav1.PartialObjectMetadata) *corev1.ObjectReference {
	if ns == nil {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}
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
	if r.Targets != nil && r.Kind != namespaceGVK {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(r.Kind)
		b = b.WatchesRawSource(source.Kind[client.Object](r.Targets, u, &handler.EnqueueRequestForObject{}, r.targetsChanged()))
	} else {
		b = b.WatchesMetadata(obj, &handler.EnqueueRequestForObject{}, builder.WithPredicates(r.targetsChanged()))
	}
	if r.Kind != namespaceGVK {
		nsMeta := &metav1.PartialObjectMetadata{}
		nsMeta.SetGroupVersionKind(namespaceGVK)
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
	if r.Kind == namespaceGVK {
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
	for _, k := range w.MetadataLabels {
		va, oka := a.GetLabels()[k]
		vb, okb := b.GetLabels()[k]
		if oka != okb || va != vb {
			return false
		}
	}
	read := func(o client.Object) map[string]string {
		m := map[string]string{}
		for k, v := range o.GetAnnotations() {
			for _, p := range w.MetadataAnnotationPrefixes {
				if strings.HasPrefix(k, p) {
					m[k] = v
					break
				}
			}
		}
		return m
	}
	return maps.Equal(read(a), read(b))
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
