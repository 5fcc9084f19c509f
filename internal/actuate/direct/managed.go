package direct

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// How GitOps tools mark the objects they manage.
const (
	// FluxKustomizePrefix starts the labels kustomize-controller puts on every object it applies
	// (kustomize.toolkit.fluxcd.io/name, …/namespace) and the annotations that steer it
	// (…/reconcile, …/prune, …/ssa).
	FluxKustomizePrefix = "kustomize.toolkit.fluxcd.io/"
	// FluxHelmPrefix starts the labels helm-controller puts on the objects of a HelmRelease.
	FluxHelmPrefix = "helm.toolkit.fluxcd.io/"
	// ArgoTrackingAnnotation is Argo CD's annotation-based resource tracking (the default since
	// Argo CD 3.0, and part of "annotation+label"). It names the Application unambiguously, so
	// it is always honoured.
	ArgoTrackingAnnotation = "argocd.argoproj.io/tracking-id"
	// DefaultArgoTrackingLabel is the instance label key Argo CD's documentation recommends
	// configuring (application.instanceLabelKey) for label-based tracking.
	DefaultArgoTrackingLabel = "argocd.argoproj.io/instance"
)

// DefaultArgoTrackingLabels returns the labels treated as Argo CD's tracking labels when
// Actuator.ArgoTrackingLabels is nil: only DefaultArgoTrackingLabel.
//
// Argo CD's label-based tracking uses app.kubernetes.io/instance unless configured otherwise
// (the default before Argo CD 3.0). That label is not a default here: Helm charts and
// operators set it on objects no Argo CD manages, and refusing all of those would make direct
// mode useless for them. A cluster whose Argo CD tracks by app.kubernetes.io/instance must list
// it in ArgoTrackingLabels (and accepts that Helm-labelled objects are refused too); with
// annotation tracking (the default since 3.0) nothing needs configuring.
func DefaultArgoTrackingLabels() []string { return []string{DefaultArgoTrackingLabel} }

// editable returns why obj must not be changed directly, or nil: a GitOps tool manages it
// (lifecycle.ErrManagedByGitOps) or a controller owns it (lifecycle.ErrSourceNotEditable).
func (a *Actuator) editable(obj *unstructured.Unstructured) error {
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	for _, k := range sortedKeys(labels) {
		if tool := fluxKey(k); tool != "" {
			return managed(tool, "label", k, labels[k])
		}
	}
	for _, k := range sortedKeys(annotations) {
		if tool := fluxKey(k); tool != "" {
			return managed(tool, "annotation", k, annotations[k])
		}
	}
	if v, ok := annotations[ArgoTrackingAnnotation]; ok {
		return managed("Argo CD", "annotation", ArgoTrackingAnnotation, v)
	}
	trackingLabels := a.ArgoTrackingLabels
	if trackingLabels == nil {
		trackingLabels = DefaultArgoTrackingLabels()
	}
	for _, k := range trackingLabels {
		if v, ok := labels[k]; ok {
			return managed("Argo CD", "label", k, v)
		}
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return fmt.Errorf("the object is controlled by its owner %s %s (uid %s), which would revert a direct change; change the owner instead: %w",
				ownerKind(ref.APIVersion, ref.Kind), ref.Name, ref.UID, lifecycle.ErrSourceNotEditable)
		}
	}
	return nil
}

func fluxKey(k string) string {
	if strings.HasPrefix(k, FluxKustomizePrefix) || strings.HasPrefix(k, FluxHelmPrefix) {
		return "Flux"
	}
	return ""
}

func managed(tool, what, key, value string) error {
	return fmt.Errorf("the object carries the %s %s=%q: it is managed by %s, so the change belongs in Git: %w",
		what, key, value, tool, lifecycle.ErrManagedByGitOps)
}

// ownerKind is "Kind" for the core group and "Kind.group" otherwise.
func ownerKind(apiVersion, kind string) string {
	if group, _, ok := strings.Cut(apiVersion, "/"); ok {
		return kind + "." + group
	}
	return kind
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
