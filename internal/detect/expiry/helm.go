package expiry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kustos-dev/kustos/internal/detect/detectkit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/nsscope"
)

// Helm releases are targets of their own kind (lifecycle.ReleaseTarget, shared with the Cleaner
// detector): helm keeps a release in Secrets labelled owner=helm, name=<release> (its default
// storage driver), and its lifetime in the values env-cleaner sets
// (`helm install --set ec_owner=ana --set ec_ttl=1d`).
const (
	ReleaseGroup   = lifecycle.ReleaseGroup
	ReleaseVersion = lifecycle.ReleaseVersion
	ReleaseKind    = lifecycle.ReleaseKind
	// HelmOwnerLabel and HelmNameLabel are the labels of helm's release Secrets.
	HelmOwnerLabel = "owner"
	HelmOwnerValue = "helm"
	HelmNameLabel  = "name"
)

// ReleaseTarget is the Target of a helm release (lifecycle.ReleaseTarget).
func ReleaseTarget(namespace, name string) lifecycle.Target {
	return lifecycle.ReleaseTarget(namespace, name)
}

// Release is what the detector reads of a release (internal/actuate/helmrelease.Info).
type Release struct {
	Values        map[string]any
	FirstDeployed time.Time
	Labels        map[string]string
}

// Releases reads helm releases (internal/actuate/helmrelease.Uninstaller, through an adapter).
type Releases interface {
	// Release returns the latest revision; found is false when there is none installed.
	Release(ctx context.Context, namespace, name string) (r Release, found bool, err error)
	// Check returns an error matching lifecycle.ErrOutsideNamespace, naming the objects, when
	// the release's manifest or hooks reach outside namespace, so that uninstalling it is
	// refused; nil when it may be uninstalled.
	Check(ctx context.Context, namespace, name string) error
}

// HelmReconciler decides about helm releases: it watches the metadata of helm's release
// Secrets, reads the release's values through helm, and hands the decision to the pipeline
// like the Reconciler of workloads. Their removal is an uninstall (hooks run).
type HelmReconciler struct {
	Cache    client.Reader
	Releases Releases
	Pipeline Pipeline
	Reporter Reporter
	// Scope is --namespace-selector; nil: every namespace.
	Scope    Scope
	Settings Settings
	Links    func(key lifecycle.Key, deadline, expires time.Time) ([]lifecycle.NoticeLink, error)
	// LeaseTrigger: see Reconciler.LeaseTrigger.
	LeaseTrigger func(before, after client.Object) (lifecycle.Key, bool)
	// HasState: see Reconciler.HasState.
	HasState func(ctx context.Context, key lifecycle.Key) bool
	Now      func() time.Time
	Log      logr.Logger
}

// Reconcile decides about one release (request name = the release name).
func (r *HelmReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	defer detectkit.Timed(DetectorName)()
	log := r.Log.WithValues("namespace", req.Namespace, "release", req.Name)
	rel, found, err := r.Releases.Release(ctx, req.Namespace, req.Name)
	if err != nil || !found {
		return reconcile.Result{}, err
	}
	nsObj, ok, err := detectkit.ReadNamespace(ctx, r.Cache, req.Namespace)
	if !ok || !detectkit.InScope(r.Scope, nil, nsObj) {
		return reconcile.Result{}, err // gone or going away, or another installation's
	}
	target := ReleaseTarget(req.Namespace, req.Name)
	values := map[string]string{}
	for _, k := range []string{HelmValueOwner, HelmValueTTL} {
		if v, ok := rel.Values[k]; ok && v != nil {
			values[k] = fmt.Sprint(v)
		}
	}
	sources := []Source{{Name: target.String(), Helm: true, Meta: Meta{Annotations: values}},
		{Name: "Namespace/" + nsObj.Name, Meta: Meta{Labels: nsObj.Labels, Annotations: nsObj.Annotations}}}
	now := r.Now()
	policy, problems := ParsePolicy(rel.FirstDeployed, sources, false, r.Settings)
	releaseRef := corev1.ObjectReference{APIVersion: ReleaseGroup + "/" + ReleaseVersion, Kind: ReleaseKind, Namespace: req.Namespace, Name: req.Name}
	if err := ReportProblems(ctx, r.Reporter, log, releaseRef, detectkit.NamespaceRef(nsObj), problems, now); err != nil {
		return reconcile.Result{}, err
	}
	key := lifecycle.KeyFor(DetectorName, target)
	if !scheduled(policy) {
		if hasState(ctx, r.HasState, key) {
			// It was scheduled: Decide clears what its Lease recorded (see Reconciler).
			res, err := r.Pipeline.Run(ctx, decideRequest(key, target, "", now, policy, r.Settings, r.Links, Pausable{}, log))
			detectkit.CountCommitted(DetectorName, res)
			return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
		}
		return reconcile.Result{}, nil
	}
	if m := managedBy(rel.Labels); m != "" {
		// Flux's helm-controller would install it again: the release goes by removing its
		// HelmRelease in Git, which people do; Kustos says so once and leaves it.
		return reconcile.Result{}, r.Reporter.Notify(ctx, releaseRef, corev1.EventTypeWarning, ReasonInvalidExpiry,
			fmt.Sprintf("helm release %s/%s has a lifetime (%s) but is managed by %s; remove it in Git, Kustos does not uninstall it", req.Namespace, req.Name, policy.From, m),
			"expiry-flux|"+req.Namespace+"|"+req.Name, now)
	}
	if err := r.Releases.Check(ctx, req.Namespace, req.Name); err != nil {
		if !errors.Is(err, lifecycle.ErrOutsideNamespace) {
			return reconcile.Result{}, err
		}
		// A tenant's release that would have Kustos delete or create objects in other
		// namespaces: never uninstalled, and its owner is neither warned nor told it went. It
		// is refused again whenever it changes (a new revision), with one Event per refusal.
		metrics.InvalidInput.WithLabelValues(DetectorName, "helm_release").Inc()
		log.Info("helm release refused: it reaches outside its namespace", "reason", ReasonReleaseOutsideNamespace, "error", err.Error())
		msg := err.Error()
		return reconcile.Result{}, r.Reporter.Notify(ctx, releaseRef, corev1.EventTypeWarning, ReasonReleaseOutsideNamespace, msg,
			"expiry-outside|"+req.Namespace+"|"+req.Name+"|"+msg, now)
	}
	res, err := r.Pipeline.Run(ctx, decideRequest(key, target, "", now, policy, r.Settings, r.Links, Pausable{}, log))
	detectkit.CountCommitted(DetectorName, res)
	return reconcile.Result{RequeueAfter: res.RequeueAfter}, err
}

// releasesOfNamespace maps a Namespace to the releases whose Secrets the cache holds in it.
func (r *HelmReconciler) releasesOfNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.Cache.List(ctx, list, client.InNamespace(ns.GetName()), client.MatchingLabels{HelmOwnerLabel: HelmOwnerValue}); err != nil {
		r.Log.Error(err, "listing helm releases of namespace", "namespace", ns.GetName())
		return nil
	}
	seen := map[string]bool{}
	var reqs []reconcile.Request
	for i := range list.Items {
		name := list.Items[i].Labels[HelmNameLabel]
		if name != "" && !seen[name] {
			seen[name] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns.GetName(), Name: name}})
		}
	}
	return reqs
}

// managedBy names the GitOps controller that manages a release, from its labels ("" if none).
func managedBy(labels map[string]string) string {
	for k, v := range labels {
		if strings.HasPrefix(k, "helm.toolkit.fluxcd.io/") {
			return "the Flux HelmRelease " + v
		}
	}
	return ""
}

// SetupWithManager watches helm's release Secrets as metadata (the cache holds only those
// labelled owner=helm) and maps each to its release.
func (r *HelmReconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	isRelease := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[HelmOwnerLabel] == HelmOwnerValue && o.GetLabels()[HelmNameLabel] != ""
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("expiry-helm-releases").
		WatchesMetadata(secret, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[HelmNameLabel]}}}
		}), builder.WithPredicates(nsscope.Objects(r.Scope), isRelease)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent})
	if r.Scope != nil {
		// A Namespace that joins the selector has its releases looked at.
		nsMeta := &metav1.PartialObjectMetadata{}
		nsMeta.SetGroupVersionKind(detectkit.NamespaceGVK)
		b = b.WatchesMetadata(nsMeta, handler.EnqueueRequestsFromMapFunc(r.releasesOfNamespace),
			builder.WithPredicates(nsscope.Joined(r.Scope)))
	}
	if r.LeaseTrigger != nil {
		b = b.Watches(&coordinationv1.Lease{}, leaseHandler(r.LeaseTrigger, ReleaseKind+"."+ReleaseGroup))
	}
	return b.Complete(r)
}
