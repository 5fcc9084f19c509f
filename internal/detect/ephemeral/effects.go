package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// A Cleaner's effects — each object's deletion, each helm release's removal, its CloudEvent and
// its own deletion — are Changes the detector hands to the pipeline, one Key each; the pipeline's
// actuators carry them out (observe reports them, direct and pr act). Nothing here deletes,
// uninstalls or sends.

// act hands every object and release marked for deletion to the pipeline and, once they are all
// gone, the CloudEvent and then the Cleaner's own deletion (not in observer mode, which hands the
// CloudEvent at once so that it is reported beside the rest).
//
// resumed: the due evaluation was recorded by an earlier look, and targets were read again
// since. An object decided on then that has changed since is not acted on: the cleanup is
// withdrawn and the conditions are evaluated afresh.
func (r *Reconciler) act(ctx context.Context, log logr.Logger, cl *v1alpha1.Cleaner, spec *Spec, targets []resolvedTarget, now time.Time, resumed bool, out *outcome) error {
	var author *lifecycle.Principal
	if !r.Observe {
		// Kustos's rights are not lent: all of the cleanup must be what its author may do.
		by, refused, err := r.authorize(ctx, cl, spec, targets, now, out)
		if err != nil || refused {
			return err
		}
		author = by
	}
	var p progress
	out.acted = true
	defer func() { out.pullRequests = setOf(p.prs, 16) }()
	flux, err := r.fluxReleases(ctx, cl, spec)
	if err != nil {
		return err
	}
	p.group = r.cleanupGroup(cl, removals(targets)+len(flux))
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
			p.names = append(p.names, target.String())
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
			h, err := r.handOver(ctx, cl, r.deletion(cl, target, o, ""), string(o.GetUID()), objectVersion(o), now, resumed, p.group)
			if err != nil {
				return err
			}
			p.account(target.String(), h, r.blocks(h), out)
		}
	}
	releases, err := r.releases(ctx, cl, spec, flux, author, now, resumed, out, &p)
	if err != nil || out.failed {
		return err
	}
	if len(p.changed) > 0 {
		msg := "changed since the conditions were evaluated: " + strings.Join(p.changed, ", ") + "; evaluating again"
		log.Info("cleanup withdrawn", "changed", p.changed)
		out.evaluation = &v1alpha1.Evaluation{Time: metav1.NewTime(now), Due: false}
		out.report(v1alpha1.StepConditionsEvaluated, metav1.ConditionUnknown, "TargetChanged", msg)
		out.retry = time.Second
		return nil
	}
	if !resumed && out.evaluation != nil {
		out.evaluation.Deletes = setOf(append([]string{}, p.names...), maxResolvedTargets)
	}
	if err := r.announce(ctx, cl, append(p.names, releasesOf(releases)...), now); err != nil {
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
		if len(p.names) > 0 {
			msg = "the cleanup is due (would delete " + strings.Join(p.names, ", ") + "); observer mode only reports it"
		}
		out.report(v1alpha1.StepActionsDone, metav1.ConditionTrue, ReasonObserverMode, msg)
		if spec.Sink == "" {
			out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonObserverMode, "observer mode sends no CloudEvent (and no sink is configured)")
			return nil
		}
		return r.deliver(ctx, log, cl, spec, p.names, releases, now, out)
	case len(p.blocked) > 0:
		out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonCleanupBlocked,
			"still present after the decision to delete them (see their Warning Events): "+strings.Join(p.blocked, ", "))
		return nil
	case len(p.remaining) > 0:
		// In progress (a pull request to merge, a deletion to observe): Unknown, which the root
		// conditions discard (work in progress is no report); the Cleaner is looked at again when
		// they go.
		out.report(v1alpha1.StepActionsDone, metav1.ConditionUnknown, "CleanupInProgress", "waiting for "+strings.Join(p.remaining, ", ")+" to go")
		return nil
	}
	if left, err := r.stillLive(ctx, cl, targets); err != nil || len(left) > 0 {
		// The target cache said every target is gone; the API server does not: the cache is
		// behind (after an API server restart its watch comes back only after a backoff). The
		// Cleaner goes once its cache has caught up and those, too, are deleted.
		if err == nil {
			log.Info("cleanup waits: the API server still has targets the cache does not show", "targets", left)
			out.report(v1alpha1.StepActionsDone, metav1.ConditionUnknown, "CleanupInProgress", "waiting for "+strings.Join(left, ", ")+" to go")
			out.retry = time.Second
		}
		return err
	}
	out.report(v1alpha1.StepActionsDone, metav1.ConditionTrue, ReasonCleanedUp, "every target and release marked for deletion is gone")
	if spec.Sink == "" {
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonNoSink, "no CloudEvent sink is configured")
	} else {
		var deleted []string
		if ev := cl.Status.LastEvaluation; ev != nil {
			deleted = ev.Deletes
		}
		if out.evaluation != nil && len(out.evaluation.Deletes) > 0 {
			deleted = out.evaluation.Deletes
		}
		if err := r.deliver(ctx, log, cl, spec, deleted, releases, now, out); err != nil || !out.delivered {
			return err
		}
	}
	log.Info("cleanup done", "deleted", len(p.names), "releases", len(releases))
	out.deleteCleaner = true
	return nil
}

// progress is where a cleanup's Changes stand, by target.
type progress struct {
	// names are the objects to delete; remaining those still there, blocked those of them
	// decided on before and still there (the pipeline said why), changed those decided on in
	// another version (only when resumed).
	names, remaining, blocked, changed []string
	// group is the Cleaner's removals' group (cleanupGroup); prs the open pull requests
	// carrying them.
	group lifecycle.Group
	prs   []string
}

// removals counts the objects of targets marked for deletion that are not being deleted.
func removals(targets []resolvedTarget) int {
	n := 0
	for _, t := range targets {
		if !t.Delete {
			continue
		}
		for _, o := range t.objects {
			if o.GetDeletionTimestamp() == nil {
				n++
			}
		}
	}
	return n
}

// account adds one Change's hand-over to p, and its requeue to out.
func (p *progress) account(name string, h handed, blocked bool, out *outcome) {
	if h.moved {
		p.changed = append(p.changed, name)
		return
	}
	if rq := h.res.RequeueAfter; rq > 0 && (out.retry == 0 || rq < out.retry) {
		out.retry = rq
	}
	if h.proposal > 0 {
		// The pull request carrying it (the Cleaner's one, in PR mode): where a reviewer acts.
		pr := fmt.Sprintf("#%d", h.proposal)
		name += " (pull request " + pr + ")"
		if !slices.Contains(p.prs, pr) {
			p.prs = append(p.prs, pr)
		}
	}
	p.remaining = append(p.remaining, name)
	if blocked {
		p.blocked = append(p.blocked, name)
	}
}

// blocks reports whether a removal handed over is blocked: stuck although direct mode carries
// decisions out at once, or, in PR mode, whose pull request a person closed unmerged (after a
// merge PR mode waits for the GitOps tool; observer mode only reports).
func (r *Reconciler) blocks(h handed) bool {
	return h.stuck() && !r.Observe && (!r.Proposing || h.declined)
}

// releases hands the removal of every helm release marked for deletion to the pipeline: one
// that a Flux HelmRelease object manages as that object's deletion (a pull request removing it
// from Git), a plain one as a Change of the release itself (lifecycle.ReleaseTarget), which
// the helm release actuator uninstalls (hooks run) and observer mode reports. A release whose
// manifest or hooks reach outside the Cleaner's namespace is not handed over at all: it is
// refused here (out.refused), in every mode. It returns the releases that are (or would be)
// removed. flux are the releases Flux manages (fluxReleases); author is the Cleaner's verified
// author (nil in observer mode), on whose behalf a plain release is uninstalled: the actuator
// asks whether they may make every request of the uninstall on the revision it acts on, and a
// refusal there is reported as MissingPermission.
func (r *Reconciler) releases(ctx context.Context, cl *v1alpha1.Cleaner, spec *Spec, flux map[string]fluxObject, author *lifecycle.Principal, now time.Time, resumed bool, out *outcome, p *progress) ([]string, error) {
	var names []string
	for _, rel := range spec.Releases {
		if !rel.Delete {
			continue
		}
		names = append(names, rel.Name)
		if f, ok := flux[rel.Name]; ok {
			hr, m := f.object, f.mapping
			target := lifecycle.Target{Group: m.GroupVersionKind.Group, Version: m.GroupVersionKind.Version, Kind: m.GroupVersionKind.Kind,
				Namespace: cl.Namespace, Name: rel.Name}
			h, err := r.handOver(ctx, cl, r.deletion(cl, target, hr, ""), string(hr.GetUID()), objectVersion(hr), now, resumed, p.group)
			if err != nil {
				return names, err
			}
			p.account(target.String(), h, r.blocks(h), out)
			continue
		}
		if r.Releases == nil {
			if r.Observe {
				continue
			}
			out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonUninstallFailed, "this Kustos cannot uninstall helm releases")
			out.failed = true
			return names, nil
		}
		installation, found, err := r.Releases.Installed(ctx, cl.Namespace, rel.Name)
		if err != nil {
			return names, err
		}
		if !found {
			continue // gone (or never installed): nothing to remove
		}
		if err := r.Releases.Check(ctx, cl.Namespace, rel.Name); err != nil {
			if !errors.Is(err, lifecycle.ErrOutsideNamespace) {
				return names, err
			}
			names = names[:len(names)-1]
			if err := r.refuseRelease(ctx, cl, err, now, out); err != nil {
				return names, err
			}
			continue
		}
		target := lifecycle.ReleaseTarget(cl.Namespace, rel.Name)
		removal := r.releaseRemoval(cl, target)
		removal.OnBehalfOf = author
		h, err := r.handOver(ctx, cl, removal, "", "release/"+installation, now, resumed, lifecycle.Group{})
		switch {
		case errors.Is(err, lifecycle.ErrAuthorDenied) && !r.Observe:
			// Rewritten since authorize: the revision helm read to act on asks for what the
			// author may not do. Nothing was deleted, no hook ran; the decision stays pending
			// and is asked again at every look.
			return names, r.refuseAuthor(ctx, cl, refusedDenied,
				fmt.Sprintf("%s; a Cleaner acts with the rights of the last person who changed its spec, so nothing was deleted", clip(actuatorMessage(err), 1024)), now, out)
		case errors.Is(err, lifecycle.ErrOutsideNamespace):
			// Rewritten since the check above: the actuator refused it, on the revision helm
			// read to act on. The decision stays pending and is refused again at every look.
			names = names[:len(names)-1]
			if err := r.refuseRelease(ctx, cl, err, now, out); err != nil {
				return names, err
			}
			continue
		case err != nil && !r.Observe:
			// Helm failed (a hook that never completes, the API server); the pipeline keeps the
			// decision pending and the next look tries again.
			msg := fmt.Sprintf("helm release %s/%s: %s", cl.Namespace, rel.Name, clip(actuatorMessage(err), 1024))
			out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonUninstallFailed, msg)
			out.failed = true
			return names, r.warn(ctx, cl, ReasonUninstallFailed, msg, now)
		case err != nil:
			return names, err
		}
		if h.recorded && h.decidedNow && !r.Observe {
			continue // uninstalled in this Run (helm's uninstall returns when the release is gone)
		}
		p.account(target.String(), h, r.blocks(h), out)
		// Nothing watches a release's storage for the Cleaner, so its going wakes no look: one
		// still read (the cache of helm's Secrets a moment behind an uninstall of an earlier
		// look) is looked at again after the not-ready recheck, not the ready one. Observer
		// mode uninstalls nothing: nothing to wait for.
		if rq := r.Policy.RecheckAfter(false); !r.Observe && (out.retry == 0 || rq < out.retry) {
			out.retry = rq
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
	msg := clip(actuatorMessage(refusal), 1024)
	out.refused = append(out.refused, msg)
	metrics.InvalidInput.WithLabelValues(Name, "helm_release").Inc()
	return r.warn(ctx, cl, ReasonReleaseOutsideNamespace, msg, now)
}

// deliver hands the CloudEvent of cl's finished cleanup to the pipeline (reported only, in
// observer mode) and maps what came of it to the EventDelivered step: Delivered (out.delivered),
// NotDelivered or DestinationRefused with a Warning Event whose message is the failure's class,
// fit for the author (the sink's answer and the network's words go to the log only).
func (r *Reconciler) deliver(ctx context.Context, log logr.Logger, cl *v1alpha1.Cleaner, spec *Spec, deleted, releases []string, now time.Time, out *outcome) error {
	id := cloudEventID(cl)
	if !r.Observe && delivered(cl) {
		// Sent and acknowledged at an earlier look; the Cleaner now waits for its own removal
		// (a pull request to merge): the sink gets the event once.
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonDelivered, "the sink acknowledged the CloudEvent "+id)
		out.delivered = true
		return nil
	}
	data := lifecycle.Cleaned{Cleaner: cl.Namespace + "/" + cl.Name, Targets: orEmpty(deleted), Releases: orEmpty(releases), At: now.UTC()}
	change, err := r.cloudEvent(cl, spec.Sink, id, data)
	if err != nil {
		// Too large to record as a decision (more than lifecycle.MaxCloudEventData): the author
		// must list fewer objects; nothing a retry can change.
		msg := clip(err.Error(), 1024)
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionFalse, ReasonNotDelivered, msg)
		return r.warn(ctx, cl, ReasonNotDelivered, msg, now)
	}
	h, err := r.handOver(ctx, cl, change, string(cl.UID), id, now, false, lifecycle.Group{})
	if err != nil {
		if !errors.Is(err, lifecycle.ErrNotDelivered) && !errors.Is(err, egress.ErrRefused) {
			return err
		}
		if d := detailed(nil); errors.As(err, &d) {
			log.Info("CloudEvent not delivered", "detail", d.Detail())
		}
		msg := clip(actuatorMessage(err), 1024)
		if errors.Is(err, egress.ErrRefused) {
			// Only the operator can change that (--allowed-destinations, then a restart, which
			// looks at every Cleaner), or the author (a new sink, a new generation).
			out.report(v1alpha1.StepEventDelivered, metav1.ConditionFalse, ReasonDestinationRefused, msg+" (the Cleaner stays until the sink acknowledges)")
			out.retry = r.Policy.RecheckAfter(true)
			return r.warn(ctx, cl, ReasonDestinationRefused, msg, now)
		}
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionFalse, ReasonNotDelivered, msg+" (the Cleaner stays until the sink acknowledges)")
		out.retry = r.Policy.RecheckAfter(false)
		return r.warn(ctx, cl, ReasonNotDelivered, msg, now)
	}
	switch {
	case r.Observe:
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonObserverMode,
			"observer mode sends no CloudEvent; it reported the one it would send ("+ReasonCloudEventDue+" Event)")
	case h.recorded:
		// The decision for this id is recorded and nothing is pending: the actuator sent it and
		// the sink acknowledged (in this look or an earlier one).
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionTrue, ReasonDelivered, "the sink acknowledged the CloudEvent "+id)
		out.delivered = true
	default:
		// Another replica is carrying the decision out: look again soon.
		out.report(v1alpha1.StepEventDelivered, metav1.ConditionUnknown, ReasonNotDelivered, "the CloudEvent "+id+" is being sent")
		if rq := h.res.RequeueAfter; rq > 0 && (out.retry == 0 || rq < out.retry) {
			out.retry = rq
		}
	}
	return nil
}

// delivered reports whether the sink acknowledged this generation's CloudEvent already.
func delivered(cl *v1alpha1.Cleaner) bool {
	c := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.StepEventDelivered)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == ReasonDelivered && c.ObservedGeneration == cl.Generation
}

// actuatorMessage is the text of an actuator's error for the Cleaner's author: the actuator's
// own error (a detailed error's message without its detail, a helm refusal naming the objects),
// without the pipeline's words around it.
func actuatorMessage(err error) string {
	if d := detailed(nil); errors.As(err, &d) {
		return d.Error()
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if k := errors.Unwrap(e); k == lifecycle.ErrOutsideNamespace || k == lifecycle.ErrAuthorDenied { //nolint:errorlint // the refusal itself, right above the kind
			return e.Error()
		}
	}
	return strings.TrimPrefix(err.Error(), "carrying out the change: ")
}

// fluxObject is a Flux HelmRelease object and its mapping.
type fluxObject struct {
	object  *unstructured.Unstructured
	mapping *meta.RESTMapping
}

// fluxReleases reads, once per look, the Flux HelmRelease objects of the releases spec marks
// for deletion, by release name: their removals are Git's (a pull request of the Cleaner's
// group), the others helm's.
func (r *Reconciler) fluxReleases(ctx context.Context, cl *v1alpha1.Cleaner, spec *Spec) (map[string]fluxObject, error) {
	out := map[string]fluxObject{}
	for _, rel := range spec.Releases {
		if !rel.Delete {
			continue
		}
		hr, m, err := r.fluxRelease(ctx, cl.Namespace, rel.Name)
		if err != nil {
			return nil, err
		}
		if hr != nil {
			out[rel.Name] = fluxObject{object: hr, mapping: m}
		}
	}
	return out, nil
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

// stillLive reads the objects of cl's targets marked for deletion from the API server (not the
// cache), by the same name or selector as resolve, and returns those not being deleted.
func (r *Reconciler) stillLive(ctx context.Context, cl *v1alpha1.Cleaner, targets []resolvedTarget) ([]string, error) {
	var left []string
	for _, t := range targets {
		if !t.Delete {
			continue
		}
		gvk := t.mapping.GroupVersionKind
		var objs []metav1.PartialObjectMetadata
		if t.Selector == nil {
			o := metav1.PartialObjectMetadata{}
			o.SetGroupVersionKind(gvk)
			err := r.Live.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: t.ObjectName}, &o)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("reading %s %s/%s from the API server: %w", gvk.Kind, cl.Namespace, t.ObjectName, err)
			}
			if err == nil {
				objs = append(objs, o)
			}
		} else {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := r.Live.List(ctx, list, client.InNamespace(cl.Namespace), client.MatchingLabelsSelector{Selector: t.Selector}); err != nil {
				return nil, fmt.Errorf("listing %s in %s from the API server: %w", gvk.Kind, cl.Namespace, err)
			}
			objs = list.Items
		}
		for _, o := range objs {
			if o.DeletionTimestamp == nil {
				left = append(left, lifecycle.Target{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.Namespace, Name: o.Name}.String())
			}
		}
	}
	return left, nil
}
