package expiry

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// gathered is what one look at a target found, for the pipeline's Decide to read with the
// target's Lease.
type gathered struct {
	target lifecycle.Target
	uid    string
	// seen is what the look read of the target and its Namespace (lifecycle.Request.Seen).
	seen   string
	policy Policy
	now    time.Time
}

// gather reads the object n and its Namespace from the cache, tells whether this installation
// serves it, reads its policy and reports what of its metadata cannot be used (and whether it
// is an orphan). ok is false when there is nothing to decide about: the object or its
// Namespace is gone or going, or it is another installation's.
func (r *Reconciler) gather(ctx context.Context, n types.NamespacedName, log logr.Logger) (g gathered, ok bool, err error) {
	obj, nsObj, ok, err := detectkit.ReadObjects(ctx, r.Cache, r.Kind, n, func(bool) { r.setOrphan(n, false) })
	if !ok {
		return g, false, err
	}
	var nsMeta *Meta
	if nsObj != nil {
		nsMeta = &Meta{Labels: nsObj.Labels, Annotations: nsObj.Annotations}
	}
	if !detectkit.InScope(r.Scope, obj, nsObj) {
		// Another installation's (or it left the selector): no Event, no decision; a proposal
		// already open stays for people to close.
		r.setOrphan(n, false)
		return g, false, nil
	}
	g = gathered{target: detectkit.TargetOf(r.Kind, obj), uid: string(obj.UID), seen: detectkit.SeenOf(Watches(), obj, nsObj), now: r.Now()}
	var problems []Problem
	g.policy, problems = ParsePolicy(obj.CreationTimestamp.Time, SourcesOf(g.target, Meta{Labels: obj.Labels, Annotations: obj.Annotations}, nsMeta), r.Scalable, r.Settings)
	if err := ReportProblems(ctx, r.Reporter, log, detectkit.RefOf(r.Kind, obj), detectkit.NamespaceRef(nsObj), problems, g.now); err != nil {
		return g, false, err
	}
	r.setOrphan(n, len(g.policy.Missing()) > 0 && len(problems) == 0)
	return g, true, nil
}

// TargetReader reads the target of an expiry Key from reader (the API server) as a look reads
// it from the cache (detectkit.TargetReader), for the confirmation of a merge.
func TargetReader(reader client.Reader, kinds []schema.GroupVersionKind) func(ctx context.Context, key lifecycle.Key) (string, bool, error) {
	return detectkit.TargetReader(reader, kinds, Watches())
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

// ReportProblems writes one Warning Event per unusable value, on the object that carries it
// (target, or its namespace ns; nil for targets without one), with a log line and a metric.
// Workloads, helm releases and vSphere VMs share it.
func ReportProblems(ctx context.Context, rep Reporter, log logr.Logger, target corev1.ObjectReference, ns *corev1.ObjectReference,
	problems []Problem, now time.Time) error {
	var others []corev1.ObjectReference
	if ns != nil {
		others = []corev1.ObjectReference{*ns}
	}
	return detectkit.Problems{Detector: DetectorName, Reason: ReasonInvalidExpiry, Reporter: rep, Log: log}.Report(ctx, target, others, nil, problems, now)
}
