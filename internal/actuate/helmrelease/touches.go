package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/kustos-dev/kustos/internal/actuate/helmrelease/scope"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Authoriser tells whether author may make a request (*authorship.Reviewer: a
// SubjectAccessReview, briefly cached).
type Authoriser interface {
	Allowed(ctx context.Context, author authorship.Author, at authorship.Attributes) (bool, error)
}

// OnBehalf is whose rights an uninstall must stay within: every request of the uninstall's plan
// (see Touches) is asked of Access for Author, on the revision the uninstall then acts on.
type OnBehalf struct {
	Author authorship.Author
	Access Authoriser
}

// DeniedError is an uninstall refused because its author may not make one of its requests. It
// matches lifecycle.ErrAuthorDenied.
type DeniedError struct {
	Namespace, Release string
	Revision           int
	Author             authorship.Author
	Request            authorship.Attributes
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("helm release %s/%s (revision %d): its uninstall would %s, which %s may not do; Kustos uninstalls a release for someone only when they may make every request the uninstall makes",
		e.Namespace, e.Release, e.Revision, scope.Clean(e.Request.String()), e.Author)
}

// Unwrap makes a denial match lifecycle.ErrAuthorDenied, which the detectors know.
func (e *DeniedError) Unwrap() error { return lifecycle.ErrAuthorDenied }

// Touches reads release's history in namespace and returns every request Uninstall would make
// to the cluster with Kustos's rights, so that a caller can ask whether someone else may make
// them before it hands the uninstall over; found is false when the release has no history.
//
// The requests are the plan of the uninstall (planOf), decoded by the uninstall's own decoder
// from the same text its steps decode, and Uninstall for an author (OnBehalf) asks them again
// on the revision it acts on. The read is guarded as Uninstall's is: a release Uninstall would
// refuse (it reaches outside its namespace) is an error matching lifecycle.ErrOutsideNamespace.
func (u *Uninstaller) Touches(ctx context.Context, namespace, release string) (requests []authorship.Attributes, found bool, err error) {
	type out struct {
		requests []authorship.Attributes
		found    bool
	}
	o, err := run(ctx, u, namespace, release, func(s *session) (out, error) {
		s.guard()
		history, err := s.releases.History(release)
		if errors.Is(err, driver.ErrReleaseNotFound) || (err == nil && len(history) == 0) {
			return out{}, nil
		}
		if err != nil {
			return out{}, err
		}
		p, err := planOf(s.kube, namespace, history)
		if err != nil {
			return out{}, err
		}
		return out{requests: p.requests(), found: true}, nil
	})
	if refused := refusal(err); refused != nil {
		return nil, false, refused
	}
	if err != nil {
		return nil, false, fmt.Errorf("helmrelease: reading what uninstalling release %s/%s touches: %w", namespace, release, err)
	}
	return o.requests, o.found, nil
}

// plan is what uninstalling a release's latest revision does to the cluster, object by
// object, decoded by the functions the uninstall's steps (uninstall.go) decode with: the
// objects deleteRelease deletes (manifestObjects), the objects of every pre- and post-delete
// hook (hookObjects: created, and deleted by their policies), and the release's records (one
// storage Secret per revision, purged last). It may hold more than a given run does (a hook
// whose policy does not delete it, a hook run that fails early), never less.
type plan struct {
	namespace string
	deletes   []scope.Object
	creates   []scope.Object
	// records are the names of the storage Secrets purge deletes.
	records []string
}

// planOf is the plan of uninstalling history's latest revision (helm's Secrets driver in
// namespace, objects decoded with b). A document that does not decode is an error: the
// uninstall would stop there, and what it would do cannot be told.
func planOf(b scope.Builder, namespace string, history []*hrelease.Release) (plan, error) {
	p := plan{namespace: namespace}
	if len(history) == 0 {
		return p, nil
	}
	for _, r := range history {
		if r == nil {
			return plan{}, errors.New("an empty release record")
		}
		p.records = append(p.records, recordName(r))
	}
	sorted := slices.Clone(history)
	releaseutil.SortByRevision(sorted)
	rel := sorted[len(sorted)-1]
	if uninstalled(rel) {
		return p, nil // only purged
	}
	objs, err := manifestObjects(b, rel)
	if err != nil {
		return plan{}, err
	}
	p.deletes = append(p.deletes, objs...)
	for _, h := range deleteHooks(rel) {
		objs, err := hookObjects(b, h)
		if err != nil {
			return plan{}, fmt.Errorf("hook %s: %w", scope.Clean(h.Path), err)
		}
		p.creates = append(p.creates, objs...)
		p.deletes = append(p.deletes, objs...)
	}
	for _, o := range append(slices.Clone(p.deletes), p.creates...) {
		if o.Mapping == nil {
			return plan{}, fmt.Errorf("%s %s: no resource", o.Obj.GetKind(), scope.Clean(o.Name))
		}
	}
	return p, nil
}

// requests are p's requests, as the API server authorises them: create (without a name: a
// create is authorised on the collection, before the object has one) for the hooks' objects,
// delete for every object and record; each once, in that order.
func (p plan) requests() []authorship.Attributes {
	var out []authorship.Attributes
	seen := map[authorship.Attributes]bool{}
	add := func(at authorship.Attributes) {
		if !seen[at] {
			seen[at] = true
			out = append(out, at)
		}
	}
	for _, o := range p.creates {
		at := attributesOf("create", o)
		at.Name = ""
		add(at)
	}
	for _, o := range p.deletes {
		add(attributesOf("delete", o))
	}
	for _, name := range p.records {
		add(authorship.Attributes{Verb: "delete", Version: "v1", Resource: "secrets", Namespace: p.namespace, Name: name})
	}
	return out
}

// authorise asks access whether author may make every request of p; the first one refused is
// a *DeniedError about rel.
func (p plan) authorise(ctx context.Context, on *OnBehalf, release string, revision int) error {
	for _, at := range p.requests() {
		ok, err := on.Access.Allowed(ctx, on.Author, at)
		if err != nil {
			return err
		}
		if !ok {
			return &DeniedError{Namespace: p.namespace, Release: release, Revision: revision, Author: on.Author, Request: at}
		}
	}
	return nil
}

// attributesOf is verb on o, by the resource its kind maps to (no namespace when it is
// cluster-scoped: the Decoder leaves Namespace empty then).
func attributesOf(verb string, o scope.Object) authorship.Attributes {
	r := o.Mapping.Resource
	return authorship.Attributes{Verb: verb, Group: r.Group, Version: r.Version, Resource: r.Resource, Namespace: o.Namespace, Name: o.Name}
}

// recordName is the storage Secret of revision r, as helm's storage names it for its driver
// (storage.makeKey) and purge deletes it.
func recordName(r *hrelease.Release) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.Name, r.Version)
}

// manifestObjects are the objects deleteRelease deletes: rel's manifest split and ordered as
// helm's uninstall does, without hooks and without those a helm.sh/resource-policy keeps, each
// document decoded on its own, as scope.Check decodes it (helm decodes them joined into one
// stream; a JSON document reads differently there, and what is acted on must be what was
// checked).
func manifestObjects(b scope.Builder, rel *hrelease.Release) ([]scope.Object, error) {
	manifests := releaseutil.SplitManifests(rel.Manifest)
	_, files, err := releaseutil.SortManifests(manifests, nil, releaseutil.UninstallOrder)
	if err != nil {
		return nil, fmt.Errorf("corrupted release record. You must manually delete the resources: %w", err)
	}
	var resources []scope.Object
	for _, f := range toDelete(files) {
		objs, err := b.Build(strings.NewReader(f.Content))
		if err != nil {
			return nil, fmt.Errorf("unable to build kubernetes objects for delete: %w", err)
		}
		resources = append(resources, objs...)
	}
	return resources, nil
}

// hookObjects are the objects of hook h, which execHooks deletes (before creating them, and by
// their delete policies) and creates: every document of its manifest.
func hookObjects(b scope.Builder, h *hrelease.Hook) ([]scope.Object, error) {
	return b.Build(strings.NewReader(h.Manifest))
}

// deleteHooks are rel's hooks that an uninstall runs.
func deleteHooks(rel *hrelease.Release) []*hrelease.Hook {
	var out []*hrelease.Hook
	for _, h := range rel.Hooks {
		if h != nil && (slices.Contains(h.Events, hrelease.HookPreDelete) || slices.Contains(h.Events, hrelease.HookPostDelete)) {
			out = append(out, h)
		}
	}
	return out
}

// uninstalled: rel is the record of an uninstall that kept its history (only purged now).
func uninstalled(rel *hrelease.Release) bool {
	return rel.Info != nil && rel.Info.Status == hrelease.StatusUninstalled
}
