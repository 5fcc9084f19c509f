package direct

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// DefaultFieldManager is the field manager of Kustos's writes when Actuator.FieldManager is
// empty.
const DefaultFieldManager = "kustos"

// Actuator carries out Changes by writing the cluster (it implements pipeline.Actuator).
type Actuator struct {
	// Client reads and writes the live API server. It must not read from an informer cache: the
	// resourceVersion and UID it reads are the preconditions of the writes.
	Client client.Client
	// Mapper resolves a Target's kind to its resource and scope; nil: Client.RESTMapper().
	Mapper meta.RESTMapper
	// FieldManager names Kustos in the objects' managedFields; empty: DefaultFieldManager.
	FieldManager string
	// ArgoTrackingLabels are the labels by which Argo CD tracks the objects it manages (its
	// application.instanceLabelKey); nil: DefaultArgoTrackingLabels(), empty: none (only the
	// annotation counts). An object carrying one of them, or the annotation
	// ArgoTrackingAnnotation (always), is refused. See DefaultArgoTrackingLabels for why
	// app.kubernetes.io/instance is not among the defaults.
	ArgoTrackingLabels []string
	// Allow says which resources each detector (Change.Detector) may delete and pause; nil
	// allows nothing. A Delete it does not allow is refused with lifecycle.ErrDeleteNotAllowed,
	// a pause with lifecycle.ErrPauseNotAllowed.
	Allow allow.Policy
	// Pausers are the detectors whose SetFields pause their target (the inactivity detector's
	// pause field, e.g. spec.running=false): such a SetFields needs Allow's pause like a
	// ScaleToZero. Another detector's SetFields (the quota detector's new limits) is no pause.
	Pausers []string
}

// Apply carries out c on the live object c.Target. It returns Outcome{Applied: true} when it
// changed the object, Outcome{} when the object already was as c asks (or, for Delete, already
// gone or being deleted), and an error that names the object otherwise:
//
//   - lifecycle.ErrInvalidChange: c lacks what is needed, its kind is not served, or a field
//     cannot take the value;
//   - lifecycle.ErrDeleteNotAllowed: c is a Delete of a resource Allow does not give
//     c.Detector (checked before the object is read);
//   - lifecycle.ErrPauseNotAllowed: c is a pause (a ScaleToZero, or a SetFields of one of
//     Pausers) of a resource Allow does not give c.Detector (checked before the object is read);
//   - lifecycle.ErrSourceNotFound: the object does not exist (or is being deleted), except
//     for Delete;
//   - lifecycle.ErrManagedByGitOps: Flux or Argo CD manages the object;
//   - lifecycle.ErrSourceNotEditable: a controller owns the object;
//   - lifecycle.ErrSourceConflict: a field no longer holds FieldChange.From;
//   - anything else (API errors, a write that conflicted twice) is worth retrying.
//
// Every write is conditional on the object read just before: a concurrent change makes it
// fail with a conflict, after which Apply reads the object again, checks everything again and
// tries once more.
//
// A Change names its target by kind, namespace and name, not by UID: Delete deletes the object
// that carries the name when Apply reads it (its UID and resourceVersion are the delete's
// preconditions), which is the object the checks above were made on and never another one
// created with the same name in the meantime.
func (a *Actuator) Apply(ctx context.Context, c lifecycle.Change, _ time.Time, _ lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	if err := validate(c); err != nil {
		return lifecycle.Outcome{}, err
	}
	t := c.Target
	gvk := schema.GroupVersionKind{Group: t.Group, Version: t.Version, Kind: t.Kind}
	gr, err := a.checkScope(gvk, t)
	if err != nil {
		return lifecycle.Outcome{}, err
	}
	if verb, ok := a.verb(c); ok {
		if err := a.Allow.Check(c, verb, gr, describe(t)); err != nil {
			return lifecycle.Outcome{}, fmt.Errorf("direct: %w", err)
		}
	}
	for attempt := 1; attempt <= 2; attempt++ {
		var out lifecycle.Outcome
		out, err = a.applyOnce(ctx, c, gvk)
		if !apierrors.IsConflict(err) {
			return out, err
		}
		// Someone changed (or replaced) the object between the read and the write: read it
		// again, check everything again.
	}
	return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: the object changed concurrently twice in a row: %w", c.Edit.Op, describe(t), err)
}

// verb is what of Allow c needs, if anything: a Delete deletes, a ScaleToZero pauses, and so
// does a SetFields of a detector among Pausers.
func (a *Actuator) verb(c lifecycle.Change) (allow.Verb, bool) {
	switch c.Edit.Op {
	case lifecycle.EditDelete:
		return allow.VerbDelete, true
	case lifecycle.EditScaleToZero:
		return allow.VerbPause, true
	case lifecycle.EditSetFields:
		return allow.VerbPause, slices.Contains(a.Pausers, c.Detector)
	}
	return "", false
}

// applyOnce reads the object and carries c out on what it read.
func (a *Actuator) applyOnce(ctx context.Context, c lifecycle.Change, gvk schema.GroupVersionKind) (lifecycle.Outcome, error) {
	t := c.Target
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := a.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Name}, obj)
	switch {
	case apierrors.IsNotFound(err) && c.Edit.Op == lifecycle.EditDelete:
		return lifecycle.Outcome{}, nil // deleted already
	case apierrors.IsNotFound(err):
		return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: the object does not exist in the cluster: %w",
			c.Edit.Op, describe(t), lifecycle.ErrSourceNotFound)
	case err != nil:
		return lifecycle.Outcome{}, fmt.Errorf("direct: reading %s: %w", describe(t), err)
	}
	if err := a.editable(obj); err != nil {
		return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: %w", c.Edit.Op, describe(t), err)
	}
	if obj.GetDeletionTimestamp() != nil {
		if c.Edit.Op == lifecycle.EditDelete {
			return lifecycle.Outcome{}, nil // being deleted already
		}
		return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: the object is being deleted: %w",
			c.Edit.Op, describe(t), lifecycle.ErrSourceNotFound)
	}

	if pre := c.Edit.Preconditions; pre != nil {
		if string(obj.GetUID()) != pre.UID {
			return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: the object was replaced since it was decided on (UID %s, decided on %s): %w",
				c.Edit.Op, describe(t), obj.GetUID(), pre.UID, lifecycle.ErrSourceConflict)
		}
		if pre.ResourceVersion != "" && obj.GetResourceVersion() != pre.ResourceVersion {
			return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: the object changed since it was decided on (resourceVersion %s, decided on %s): %w",
				c.Edit.Op, describe(t), obj.GetResourceVersion(), pre.ResourceVersion, lifecycle.ErrSourceConflict)
		}
	}

	var out lifecycle.Outcome
	switch c.Edit.Op {
	case lifecycle.EditSetFields:
		out, err = a.setFields(ctx, obj, c.Edit.Fields)
	case lifecycle.EditSetAnnotations:
		out, err = a.setAnnotations(ctx, obj, c.Edit.Annotations)
	case lifecycle.EditScaleToZero:
		out, err = a.scaleToZero(ctx, obj)
	case lifecycle.EditDelete:
		out, err = a.delete(ctx, obj)
	}
	switch {
	case err == nil:
		return out, nil
	case apierrors.IsConflict(err):
		return lifecycle.Outcome{}, err // Apply reads again
	case apierrors.IsNotFound(err) && c.Edit.Op == lifecycle.EditDelete:
		return lifecycle.Outcome{}, nil // deleted by someone else since the read
	case apierrors.IsNotFound(err):
		return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: the object was deleted while being written: %w",
			c.Edit.Op, describe(t), lifecycle.ErrSourceNotFound)
	case errors.Is(err, lifecycle.ErrInvalidChange), errors.Is(err, lifecycle.ErrSourceConflict):
		return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: %w", c.Edit.Op, describe(t), err)
	default:
		return lifecycle.Outcome{}, fmt.Errorf("direct: %s %s: writing the object: %w", c.Edit.Op, describe(t), err)
	}
}

// validate checks that c has what Apply needs.
func validate(c lifecycle.Change) error {
	t := c.Target
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("direct: %s %s: %s: %w", c.Edit.Op, describe(t), fmt.Sprintf(format, args...), lifecycle.ErrInvalidChange)
	}
	if t.Version == "" || t.Kind == "" || t.Name == "" {
		return invalid("the target lacks a version, kind or name")
	}
	switch c.Edit.Op {
	case lifecycle.EditSetFields:
		if len(c.Edit.Fields) == 0 {
			return invalid("no fields to set")
		}
		for _, f := range c.Edit.Fields {
			if err := checkPath(f.Path); err != nil {
				return invalid("%v", err)
			}
		}
	case lifecycle.EditSetAnnotations:
		if len(c.Edit.Annotations) == 0 {
			return invalid("no annotations to set")
		}
	case lifecycle.EditScaleToZero, lifecycle.EditDelete:
	default:
		return invalid("unknown edit %q", c.Edit.Op)
	}
	return nil
}

// checkScope checks that the API server serves gvk and that t has a namespace exactly when
// the kind is namespaced, and returns the kind's resource.
func (a *Actuator) checkScope(gvk schema.GroupVersionKind, t lifecycle.Target) (schema.GroupResource, error) {
	mapper := a.Mapper
	if mapper == nil {
		mapper = a.Client.RESTMapper()
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return schema.GroupResource{}, fmt.Errorf("direct: %s: the API server serves no kind %s in %s: %w",
			describe(t), gvk.Kind, gvk.GroupVersion(), lifecycle.ErrInvalidChange)
	}
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("direct: resolving the kind of %s: %w", describe(t), err)
	}
	namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
	switch {
	case namespaced && t.Namespace == "":
		return schema.GroupResource{}, fmt.Errorf("direct: %s: kind %s is namespaced but the target has no namespace: %w",
			describe(t), t.KindGroup(), lifecycle.ErrInvalidChange)
	case !namespaced && t.Namespace != "":
		return schema.GroupResource{}, fmt.Errorf("direct: %s: kind %s is cluster-scoped but the target has a namespace: %w",
			describe(t), t.KindGroup(), lifecycle.ErrInvalidChange)
	}
	return m.Resource.GroupResource(), nil
}

func (a *Actuator) fieldManager() string {
	if a.FieldManager == "" {
		return DefaultFieldManager
	}
	return a.FieldManager
}

// describe names a target as "Kind[.group] namespace/name" (cluster-scoped: "Kind name").
func describe(t lifecycle.Target) string {
	if t.Namespace == "" {
		return t.KindGroup() + " " + t.Name
	}
	return t.KindGroup() + " " + t.Namespace + "/" + t.Name
}
