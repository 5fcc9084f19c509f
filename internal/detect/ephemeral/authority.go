package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
)

// Authors tells who wrote a Cleaner: the author its stamp names, once the stamp is verified
// against the Cleaner's namespace, name, creation and current spec (authorship.Signer).
type Authors interface {
	Author(cl *v1alpha1.Cleaner) (authorship.Author, error)
}

// AuthorAccess tells whether a Cleaner's author may make a request (*authorship.Reviewer: a
// SubjectAccessReview, briefly cached).
type AuthorAccess interface {
	Allowed(ctx context.Context, author authorship.Author, at authorship.Attributes) (bool, error)
}

// ReleaseTouches lists every request uninstalling a plain helm release would make, each with
// the resource it names (internal/actuate/helmrelease.Uninstaller.Touches: the uninstall's own
// plan, which the uninstall asks about again on the revision it acts on). A release the
// uninstall would refuse outright is an error matching lifecycle.ErrOutsideNamespace.
type ReleaseTouches interface {
	Touches(ctx context.Context, namespace, release string) (requests []authorship.Attributes, found bool, err error)
}

// Values of the refusal metric's reason label.
const (
	refusedNoKey      = "no_author_key"
	refusedUnverified = "author_unverified"
	refusedDenied     = "author_denied"
)

// authorize checks, before anything of cl's cleanup is carried out, that the Cleaner's author
// may do all of it: the stamp is verified, and a SubjectAccessReview for the author is asked
// for every object the cleanup deletes (targets marked delete, a Flux HelmRelease, a plain
// release's storage Secrets, manifest objects and delete hooks) and every hook object it
// creates. One refusal refuses the whole cleanup (nothing is deleted in this look): a Cleaner
// acts all or nothing, and its condition names the first request refused. refused reports
// that out now says why; otherwise by is the verified author, on whose behalf a release's
// uninstall is handed over (the actuator asks the same requests again on the revision it acts
// on).
func (r *Reconciler) authorize(ctx context.Context, cl *v1alpha1.Cleaner, spec *Spec, targets []resolvedTarget, now time.Time, out *outcome) (by *lifecycle.Principal, refused bool, err error) {
	refuse := func(reason, msg string) (*lifecycle.Principal, bool, error) {
		return nil, true, r.refuseAuthor(ctx, cl, reason, msg, now, out)
	}
	if r.Authors == nil || r.AuthorAccess == nil {
		return refuse(refusedNoKey, "this Kustos cannot tell who wrote the Cleaner (it has no --cleaner-author-key-file), so it deletes nothing for it")
	}
	author, err := r.Authors.Author(cl)
	if err != nil {
		hint := "apply the Cleaner again while Kustos's admission webhook runs, which records who wrote it"
		if errors.Is(err, authorship.ErrSpecChanged) {
			hint = "its spec was changed without Kustos's admission webhook recording who changed it; " + hint
		}
		return refuse(refusedUnverified, fmt.Sprintf("the Cleaner's author cannot be verified (%v): %s; nothing was deleted", err, hint))
	}
	requests, err := r.requestsOf(ctx, cl, spec, targets)
	if err != nil {
		return nil, false, err
	}
	for _, at := range requests {
		ok, err := r.AuthorAccess.Allowed(ctx, author, at)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return refuse(refusedDenied, fmt.Sprintf("the Cleaner's author %s may not %s; a Cleaner acts with the rights of the last person who changed its spec, so nothing was deleted",
				author, at))
		}
	}
	r.Log.V(1).Info("the Cleaner's author may do its cleanup", "cleaner", cl.Namespace+"/"+cl.Name, "author", author.Username, "requests", len(requests))
	return &lifecycle.Principal{User: author.Username, UID: author.UID, Groups: author.Groups, Extra: author.Extra}, false, nil
}

// refuseAuthor reports that cl's cleanup is not done because of its author (reason is the
// refusal metric's label): the ActionsDone condition, a MissingPermission Warning, a count.
func (r *Reconciler) refuseAuthor(ctx context.Context, cl *v1alpha1.Cleaner, reason, msg string, now time.Time, out *outcome) error {
	metrics.PermissionRefusals.WithLabelValues(Name, reason).Inc()
	out.report(v1alpha1.StepActionsDone, metav1.ConditionFalse, ReasonMissingPermission, msg)
	out.failed = true
	return r.warn(ctx, cl, ReasonMissingPermission, msg, now)
}

// requestsOf lists every request cl's cleanup makes, as its author would make them.
func (r *Reconciler) requestsOf(ctx context.Context, cl *v1alpha1.Cleaner, spec *Spec, targets []resolvedTarget) ([]authorship.Attributes, error) {
	var out []authorship.Attributes
	for _, t := range targets {
		if !t.Delete {
			continue
		}
		for _, o := range t.objects {
			if o.GetDeletionTimestamp() != nil {
				continue
			}
			out = append(out, attributes("delete", t.mapping, o.GetNamespace(), o.GetName()))
		}
	}
	for _, rel := range spec.Releases {
		if !rel.Delete {
			continue
		}
		hr, m, err := r.fluxRelease(ctx, cl.Namespace, rel.Name)
		if err != nil {
			return nil, err
		}
		if hr != nil {
			out = append(out, attributes("delete", m, cl.Namespace, rel.Name))
			continue
		}
		if r.ReleaseTouches == nil {
			continue // removeReleases reports that this Kustos cannot uninstall releases
		}
		requests, found, err := r.ReleaseTouches.Touches(ctx, cl.Namespace, rel.Name)
		if errors.Is(err, lifecycle.ErrOutsideNamespace) {
			continue // never handed over: releases refuses it, saying why
		}
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, requests...)
		}
	}
	return out, nil
}

// attributes is the request verb on the object namespace/name of mapping m's kind (no
// namespace for a cluster-scoped kind).
func attributes(verb string, m *meta.RESTMapping, namespace, name string) authorship.Attributes {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	return authorship.Attributes{Verb: verb, Group: m.Resource.Group, Version: m.Resource.Version, Resource: m.Resource.Resource,
		Namespace: namespace, Name: name}
}
