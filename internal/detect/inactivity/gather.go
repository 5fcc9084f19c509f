package inactivity

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The snapshot's parts read off a target, shared by the controller (from the cache) and
// `kustos inactivity plan` (from files), so that both decide on the same inputs.

// TemplateRefOf reads the reference to a target's template object from its field ref: a name
// (the target's namespace) or a {name, namespace} map. found is false when the field is absent;
// a reference that cannot be followed is a Problem, and the target then goes by its own and its
// namespace's metadata.
func TemplateRefOf(obj *unstructured.Unstructured, ref []string) (namespace, name string, found bool, problem *Problem) {
	field := lifecycle.PathString(ref)
	on := obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, ref...)
	if err != nil {
		return "", "", false, &Problem{On: on, Key: field, Value: err.Error(), Err: "cannot read the template reference; the template's metadata is not read"}
	}
	if !found {
		return "", "", false, nil
	}
	namespace = obj.GetNamespace()
	switch r := v.(type) {
	case string:
		name = r
	case map[string]any:
		name, _ = r["name"].(string)
		if n, ok := r["namespace"].(string); ok && n != "" {
			namespace = n
		}
	}
	if name == "" {
		return "", "", false, &Problem{On: on, Key: field, Value: fmt.Sprint(v), Err: "want a template name or {name, namespace}; the template's metadata is not read"}
	}
	return namespace, name, true, nil
}

// ActivityOf is what the sources know of a target: its Ref in each source (the source's target
// templates over its namespace, name, kind, labels and annotations), looked up in tracker.
func ActivityOf(obj *unstructured.Unstructured, t lifecycle.Target, sources []activity.Compiled, tracker *activity.Tracker) (activity.Activity, error) {
	vars := activity.TargetVars{Namespace: t.Namespace, Name: t.Name, Kind: t.Kind, Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}
	if vars.Labels == nil {
		vars.Labels = map[string]string{}
	}
	if vars.Annotations == nil {
		vars.Annotations = map[string]string{}
	}
	refs := make(map[string]activity.Ref, len(sources))
	for i := range sources {
		ref, err := sources[i].RefOf(vars)
		if err != nil {
			return activity.Activity{}, err
		}
		refs[sources[i].Name] = ref
	}
	return tracker.Lookup(refs), nil
}

// gathered is what one look at a target found, for the pipeline's Decide to read with the
// target's Lease (snapshot).
type gathered struct {
	target          lifecycle.Target
	uid             string
	created         time.Time
	resourceVersion string
	// seen is what the look read of the target and its Namespace (lifecycle.Request.Seen).
	seen      string
	now       time.Time
	policy    Policy
	running   bool
	pauseFrom string
	act       activity.Activity
	probe     *Probe
	// requeue is the probe's: look again within ProbeInterval (0: no probe).
	requeue time.Duration
}

// readMetadata is what of a target's and its Namespace's metadata the detector decides on (the
// metadata of Watches).
var readMetadata = Watches(nil, Pause{}, nil)

// TargetReader reads the target of an inactivity Key from reader (the API server) as a look
// reads its metadata from the cache (detectkit.TargetReader), for the confirmation of a merge.
// A target template's metadata (--inactivity-template-ref) is not read.
func TargetReader(reader client.Reader, kinds []schema.GroupVersionKind) func(ctx context.Context, key lifecycle.Key) (string, bool, error) {
	return detectkit.TargetReader(reader, kinds, readMetadata)
}

// gather reads the target n and its Namespace from the cache, tells whether this installation
// serves it, reads its policy (reporting what of the metadata cannot be used), whether it runs,
// its activity, and probes its exam endpoint when due. ok is false when there is nothing to
// decide: the target or its Namespace is gone or going, it is another installation's, it never
// times out or is opted out (and has no Lease: one with a Lease is decided, to withdraw what was
// proposed for it), or what it needs cannot be read (said on it).
func (r *Reconciler) gather(ctx context.Context, n types.NamespacedName, log logr.Logger) (g gathered, ok bool, err error) {
	// The reconcile only reads the target, its Namespace and its template (GetLabels and
	// GetAnnotations copy; Running, TemplateRefOf and ParsePolicy read): the manager's cache's
	// objects are read without a copy, which was most of what a check cycle allocated. (The
	// target cache holds its objects packed: a read of it is always the caller's own copy.)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.Kind)
	forget := func(gone bool) {
		if gone {
			r.forgetProbe(n)
		}
		r.setTarget(n, false)
	}
	if ok, err := detectkit.ReadTarget(ctx, r.Objects, n, obj, forget, client.UnsafeDisableDeepCopy); !ok {
		return g, false, err
	}
	var nsObj *metav1.PartialObjectMetadata
	if ns := obj.GetNamespace(); ns != "" {
		if nsObj, ok, err = detectkit.ReadNamespace(ctx, r.Meta, ns, client.UnsafeDisableDeepCopy); !ok {
			return g, false, err
		}
	}
	if !detectkit.InScope(r.Scope, obj, nsObj) {
		// Another installation's namespace (or one that left the selector): no Event, no
		// decision; a proposal already open stays for people to close.
		r.setTarget(n, false)
		return g, false, nil
	}
	g = gathered{now: r.Now(), target: detectkit.TargetOf(r.Kind, obj), uid: string(obj.GetUID()),
		created: obj.GetCreationTimestamp().Time, resourceVersion: obj.GetResourceVersion(), seen: detectkit.SeenOf(readMetadata, obj, nsObj)}
	objRef := detectkit.RefOf(r.Kind, obj)
	if g.policy, err = r.policy(ctx, log, obj, nsObj, g.target, objRef, g.now); err != nil {
		return g, false, err
	}
	watched := !g.policy.Ignored && (g.policy.Timeout > 0 || g.policy.ProbeURL != "")
	r.setTarget(n, watched)
	if !watched && (r.HasState == nil || !r.HasState(ctx, lifecycle.KeyFor(DetectorName, g.target))) {
		// Opted out, never times out, or metadata that cannot be used, and nothing of it is
		// remembered: no Lease, no look.
		return g, false, nil
	}
	if g.running, err = Running(obj, r.Settings.Pause); err != nil {
		return g, false, r.report(ctx, log, objRef, nil, []Problem{{On: g.target.String(), Key: "pause state", Value: err.Error(),
			Err: "cannot tell whether the target runs; it is left alone"}}, g.now)
	}
	g.pauseFrom = PauseFieldValue(obj, r.Settings.Pause)
	if !watched {
		// It was watched (its Lease exists): Decide withdraws the pause or deletion proposed
		// for it. Its activity and its probe are no longer asked.
		return g, true, nil
	}
	if g.act, err = ActivityOf(obj, g.target, r.Sources, r.Tracker); err != nil {
		// A source's target template cannot name this target (a label it indexes is missing):
		// its activity is unknown, so it is left alone, and said so on it.
		return g, false, r.report(ctx, log, objRef, nil, []Problem{{On: g.target.String(), Key: "--inactivity-config target",
			Value: err.Error(), Err: "a source cannot name this target in its results; its activity is unknown and it is left alone"}}, g.now)
	}
	if g.requeue, err = r.probe(ctx, n, &g, objRef); err != nil {
		return g, false, err
	}
	return g, true, nil
}

// policy reads the target's policy from its sources (the target, its template object, its
// Namespace ns; nil for cluster-scoped targets) and reports what of them cannot be used.
func (r *Reconciler) policy(ctx context.Context, log logr.Logger, obj *unstructured.Unstructured, ns *metav1.PartialObjectMetadata,
	target lifecycle.Target, objRef corev1.ObjectReference, now time.Time) (Policy, error) {
	sources := []Source{{Name: target.String(), Meta: Meta{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}}}
	var problems []Problem
	var refs []corev1.ObjectReference
	if len(r.TemplateRef) > 0 {
		tpl, ref, problem, err := r.template(ctx, obj)
		if err != nil {
			return Policy{}, err
		}
		if problem != nil {
			problems = append(problems, *problem)
		}
		if tpl != nil {
			sources = append(sources, *tpl)
			refs = append(refs, ref)
		}
	}
	if ns != nil {
		sources = append(sources, Source{Name: "Namespace/" + ns.Name, Meta: Meta{Labels: ns.Labels, Annotations: ns.Annotations}})
		refs = append(refs, *detectkit.NamespaceRef(ns))
	}
	policy, more := ParsePolicy(sources, r.Settings)
	problems = append(problems, more...)
	return policy, r.report(ctx, log, objRef, refs, problems, now)
}

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

// PauseFieldValue is the value the field a pause sets holds on obj (spec.replicas, or the pause
// field), in its Kubernetes string form: what a pause decided now would record. Empty when the
// field is absent or not a single value.
func PauseFieldValue(obj *unstructured.Unstructured, p Pause) string {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, pausePath(p)...)
	if err != nil || !found {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case bool, int64:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
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
// or one of others: its template, its Namespace, when mayWriteIn allows), with a log line and a
// metric.
func (r *Reconciler) report(ctx context.Context, log logr.Logger, target corev1.ObjectReference, others []corev1.ObjectReference, problems []Problem, now time.Time) error {
	mayWrite := func(o corev1.ObjectReference) bool { return r.mayWriteIn(ctx, o, target.Namespace) }
	return detectkit.Problems{Detector: DetectorName, Reason: ReasonInvalidInactivity, Reporter: r.Reporter, Log: log}.
		Report(ctx, target, others, mayWrite, problems, now)
}

// mayWriteIn says whether a problem found on o may be reported on o itself: a template object
// in another namespace that --namespace-selector does not select is another installation's, so
// the problem is reported on the target instead (which names o in the message). Scope.Selects
// here, not Matches: o's Namespace is not one the reconcile read.
func (r *Reconciler) mayWriteIn(ctx context.Context, o corev1.ObjectReference, targetNamespace string) bool {
	if r.Scope == nil || o.Namespace == "" || o.Namespace == targetNamespace {
		return true
	}
	ok, err := r.Scope.Selects(ctx, o.Namespace)
	return err == nil && ok
}

// snapshot is what Decide reads: what gather found, and the Lease's state and memory.
func (g *gathered) snapshot(v lifecycle.View, st State, s Settings) Snapshot {
	return Snapshot{Now: g.now, Target: g.target, UID: g.uid, Created: g.created, Running: g.running, PauseFrom: g.pauseFrom,
		Policy: g.policy, Activity: g.act, Probe: g.probe, State: st,
		LastDecision: v.LastModified, ProposalOpen: v.ProposalOpen, Declined: v.Declined, Proposed: v.Proposed, Settings: s}
}
