package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/chartutil"
	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kustos-dev/kustos/internal/actuate/helmrelease/scope"
)

// DefaultTimeout bounds one call when Uninstaller.Timeout is zero. It is helm's own default for
// `helm uninstall --timeout`: long enough for a pre-delete hook Job to run.
const DefaultTimeout = 5 * time.Minute

// ErrNotFound is wrapped by Values when the release has no history in the namespace.
var ErrNotFound = errors.New("helm release not found")

// Uninstaller removes helm releases as `helm uninstall` does, on helm's own release storage and
// kubeClient (uninstall.go follows helm's action.Uninstall, kube.go helm's kube client): hooks
// run, release history in Secrets (the storage driver helm uses by default) goes too. The zero
// value is not usable: Config is required. Its methods may be called concurrently.
//
// It removes only a release that stays in its namespace (package scope): whoever may write
// Secrets in a namespace may write a release whose manifest or hooks name objects elsewhere,
// and helm would delete and create them there with Kustos's rights. Uninstall checks the
// revision it acts on, in the read it acts on, so no caller can uninstall around the check.
type Uninstaller struct {
	// Config reaches the API server. Kustos's own service account needs what `helm uninstall`
	// needs: Secrets in the release's namespace and delete on the release's objects.
	Config *rest.Config
	// Timeout bounds one call as a whole, hooks included (default DefaultTimeout). Each hook may
	// take nine tenths of it to become ready (a Job to complete), so that a hook that never does
	// is reported as the failure, rather than the call running out of time somewhere in helm.
	Timeout time.Duration
	// Log receives helm's debug output at V(1). The zero Logger discards it.
	Log logr.Logger
}

// Exists reports whether release is installed in namespace (any status but uninstalled): a
// release left "uninstalling" by a crash exists, so that Uninstall finishes it.
func (u *Uninstaller) Exists(ctx context.Context, namespace, release string) (bool, error) {
	exists, err := run(ctx, u, namespace, release, func(s *session) (bool, error) {
		last, err := lastRevision(s.releases, release)
		return last != nil && last.Info.Status != hrelease.StatusUninstalled, err
	})
	if err != nil {
		return false, fmt.Errorf("helmrelease: looking up release %s/%s: %w", namespace, release, err)
	}
	return exists, nil
}

// Uninstall removes release from namespace, as `helm uninstall` does: pre-delete hooks, then the
// release's objects (background propagation, keeping those with helm.sh/resource-policy: keep),
// post-delete hooks, then the release history. It returns removed=false, nil when there was
// nothing to remove (no history, or only the history of an uninstall that kept it, which is
// purged): a retry after a crash is fine, and a release left "uninstalling" is finished.
//
// It does not wait for the deleted objects to disappear (helm's --wait): their finalizers and
// graceful termination are the cluster's business, and what a retry needs — the release record —
// is gone when Uninstall returns. Hooks do run to completion, as they must: a pre-delete hook
// that never becomes ready (a Job that never completes) fails the uninstall after Timeout, with
// the release left in status uninstalling and its objects in place, so that a retry runs it again.
//
// A release whose latest revision names, in its manifest or any hook, an object outside
// namespace, of a cluster-scoped kind, of a kind the API server does not serve, or one that
// cannot be decoded, is not touched: Uninstall returns a *scope.Error (matching
// lifecycle.ErrOutsideNamespace) naming the objects, before any hook runs.
//
// When ctx ends first, Uninstall returns at once. Helm may still be running in the background
// then, but every request it makes fails, so it changes nothing more.
func (u *Uninstaller) Uninstall(ctx context.Context, namespace, release string) (removed bool, err error) {
	return u.UninstallFor(ctx, namespace, release, nil)
}

// UninstallFor is Uninstall on on's behalf (nil: Kustos's own, as Uninstall): in the same guarded
// read that checks the revision it acts on, every request the uninstall of that revision makes
// (the plan Touches lists) is asked of on.Access for on.Author, and the first one refused
// refuses the release with a *DeniedError (matching lifecycle.ErrAuthorDenied) before any hook
// runs or anything is deleted. A tenant who rewrites the release after a caller asked Touches
// gains nothing: the revision the uninstall acts on is the one asked about.
func (u *Uninstaller) UninstallFor(ctx context.Context, namespace, release string, on *OnBehalf) (removed bool, err error) {
	if on != nil && on.Access == nil {
		return false, fmt.Errorf("helmrelease: uninstalling release %s/%s for %s: nothing to ask what the author may do", namespace, release, on.Author)
	}
	removed, err = run(ctx, u, namespace, release, func(s *session) (bool, error) {
		s.on = on
		s.guard()
		return u.uninstall(s)
	})
	if refused := refusal(err); refused != nil {
		return false, refused
	}
	if err != nil {
		return false, fmt.Errorf("helmrelease: uninstalling release %s/%s: %w", namespace, release, err)
	}
	return removed, nil
}

// uninstall is Uninstall within a session whose reads are guarded.
func (u *Uninstaller) uninstall(s *session) (bool, error) {
	// Helm's order: is the API server there, then the history. A forbidden or unreachable API
	// server is an error, never "nothing to remove".
	if err := s.kube.IsReachable(); err != nil {
		return false, err
	}
	// Read through the guard: what is acted on below is this history, as checked.
	history, err := s.releases.History(s.release)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if len(history) == 0 {
		// The driver skipped records it could not decode; helm would fail on them too.
		return false, fmt.Errorf("no readable revision of release %q", s.release)
	}
	releaseutil.SortByRevision(history)
	// Removed unless only the history of an uninstall that kept it was left (purged now).
	removed := !uninstalled(history[len(history)-1])
	if rel, err := s.uninstallRelease(history, u.timeout()*9/10); err != nil {
		return false, describeFailure(rel, err)
	}
	return removed, nil
}

// Check tells what Uninstall would do with release's latest revision now: nil when it would
// uninstall it (or there is nothing to uninstall), a *scope.Error matching
// lifecycle.ErrOutsideNamespace when it would refuse it, and another error when it cannot tell
// (the API server). A detector asks before it schedules a removal, so that a release Kustos will
// not remove is reported instead of announced.
func (u *Uninstaller) Check(ctx context.Context, namespace, release string) error {
	_, err := run(ctx, u, namespace, release, func(s *session) (struct{}, error) {
		s.guard()
		_, err := lastRevision(s.releases, release)
		return struct{}{}, err
	})
	if refused := refusal(err); refused != nil {
		return refused
	}
	if err != nil {
		return fmt.Errorf("helmrelease: checking release %s/%s: %w", namespace, release, err)
	}
	return nil
}

// refusal is the *scope.Error or *DeniedError in err's tree, whatever helm wrapped it in; nil if
// there is none.
func refusal(err error) error {
	var refused *scope.Error
	if errors.As(err, &refused) {
		return refused
	}
	var denied *DeniedError
	if errors.As(err, &denied) {
		return denied
	}
	return nil
}

// Values returns the release's user-supplied values (helm get values, without the chart's
// defaults) of its latest revision, never nil. The expiry detector reads ec_owner and ec_ttl from
// them. A release without history is an error wrapping ErrNotFound.
func (u *Uninstaller) Values(ctx context.Context, namespace, release string) (map[string]any, error) {
	values, err := run(ctx, u, namespace, release, func(s *session) (map[string]any, error) {
		last, err := lastRevision(s.releases, release)
		if err != nil {
			return nil, err
		}
		if last == nil {
			return nil, ErrNotFound
		}
		return last.Config, nil
	})
	if err != nil {
		return nil, fmt.Errorf("helmrelease: reading values of release %s/%s: %w", namespace, release, err)
	}
	if values == nil {
		values = map[string]any{}
	}
	return values, nil
}

// Info is what the expiry detector reads of a release's latest revision.
type Info struct {
	// Values are the user-supplied values (never nil).
	Values map[string]any
	// FirstDeployed is when the release was first installed: a lifetime counts from it.
	FirstDeployed time.Time
	// Status is the latest revision's status (deployed, failed, uninstalling, …).
	Status string
	// Labels are the release's own labels (helm 3.13+ stores them on its Secrets); Flux's
	// helm-controller marks the releases it manages with helm.toolkit.fluxcd.io/ labels.
	Labels map[string]string
}

// Release returns Info of release's latest revision; found is false when it has no history or
// was uninstalled (history kept).
func (u *Uninstaller) Release(ctx context.Context, namespace, release string) (info Info, found bool, err error) {
	type out struct {
		info  Info
		found bool
	}
	o, err := run(ctx, u, namespace, release, func(s *session) (out, error) {
		last, err := lastRevision(s.releases, release)
		if err != nil || last == nil || last.Info == nil || last.Info.Status == hrelease.StatusUninstalled {
			return out{}, err
		}
		i := Info{Values: last.Config, FirstDeployed: last.Info.FirstDeployed.Time, Status: last.Info.Status.String(), Labels: last.Labels}
		if i.Values == nil {
			i.Values = map[string]any{}
		}
		return out{info: i, found: true}, nil
	})
	if err != nil {
		return Info{}, false, fmt.Errorf("helmrelease: reading release %s/%s: %w", namespace, release, err)
	}
	return o.info, o.found, nil
}

// Installed reports whether release is installed in namespace (as Release finds it) and names
// that installation: the time it was first deployed, which an upgrade keeps and an uninstall
// and install anew changes. A detector that decides once per installation keys on it.
func (u *Uninstaller) Installed(ctx context.Context, namespace, release string) (installation string, found bool, err error) {
	info, found, err := u.Release(ctx, namespace, release)
	if err != nil || !found {
		return "", false, err
	}
	return info.FirstDeployed.UTC().Format(time.RFC3339Nano), true, nil
}

// session is one call's clients, for one release: kubeClient (what helm's kube client does:
// build, create, watch and delete objects) and helm's release storage, Secrets in namespace.
type session struct {
	// ctx is the call's (run's): every request the session makes ends with it.
	ctx       context.Context
	kube      kube
	releases  *storage.Storage
	getter    *restClientGetter
	namespace string
	release   string
	log       func(format string, v ...any)
	// on is whose rights the guarded reads check the uninstall against (nil: none).
	on *OnBehalf
}

// guard makes helm's reads of the release's history check its latest revision (check) before
// they return it: what helm then acts on is what was checked, read in the same request.
func (s *session) guard() {
	s.releases.Driver = &checkedDriver{Driver: s.releases.Driver, check: s.check}
}

// check refuses the history whose latest revision is rel unless uninstalling it stays in the
// session's namespace (scope.Check) and, when the session acts for someone (s.on), unless they
// may make every request of its plan (planOf, decoded by the uninstall's own decoder from this
// very history). A revision already uninstalled (history kept) is not scope-checked: helm only
// purges its records then (which s.on is still asked about).
func (s *session) check(rel *hrelease.Release, history []*hrelease.Release) error {
	if rel == nil {
		return nil
	}
	if !uninstalled(rel) {
		// Discovery first: an API server that cannot say which kinds it serves is a failure to
		// retry, not a release to refuse. A group whose discovery failed (an aggregated API that
		// is down) is not: its kinds are unknown, and a release naming them is refused.
		dc, err := s.getter.ToDiscoveryClient()
		if err != nil {
			return err
		}
		if _, _, err := dc.ServerGroupsAndResources(); err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
			return fmt.Errorf("discovering the kinds the API server serves: %w", err)
		}
		if err := scope.Check(s.kube, s.namespace, s.release, rel); err != nil {
			return err
		}
	}
	// The guard checks the revision of the highest number and helm sorts to find the one it
	// acts on; two records of that number (helm never writes them) could each be either.
	for _, r := range history {
		if r != nil && r != rel && r.Version == rel.Version {
			return &scope.Error{Namespace: s.namespace, Release: s.release, Revision: rel.Version, Offences: []scope.Offence{
				{In: "the release record", Object: fmt.Sprintf("revision %d", rel.Version), Why: "is stored twice, and Kustos cannot tell which of them it would act on"}}}
		}
	}
	if s.on == nil {
		return nil
	}
	p, err := planOf(s.kube, s.namespace, history)
	if err != nil {
		return err
	}
	return p.authorise(s.ctx, s.on, s.release, rel.Version)
}

// checkedDriver is helm's release storage with every read of history checked: uninstall reads
// the release it acts on through Query (History, then the highest revision), so the revision it
// acts on is the one check passed — a tenant who rewrites the release Secret between a check and
// the uninstall gains nothing.
type checkedDriver struct {
	driver.Driver
	check func(latest *hrelease.Release, history []*hrelease.Release) error
}

var _ driver.Driver = (*checkedDriver)(nil)

// Query checks the latest of the revisions found, the one uninstall acts on, with all of them
// (the records uninstall purges).
func (d *checkedDriver) Query(labels map[string]string) ([]*hrelease.Release, error) {
	rels, err := d.Driver.Query(labels)
	if err != nil || len(rels) == 0 {
		return rels, err
	}
	latest := rels[0]
	for _, r := range rels[1:] {
		if r != nil && (latest == nil || r.Version > latest.Version) {
			latest = r
		}
	}
	if err := d.check(latest, rels); err != nil {
		return nil, err
	}
	return rels, nil
}

// Get checks the revision it returns (uninstall does not read one this way; a change that does
// must not escape the check).
func (d *checkedDriver) Get(key string) (*hrelease.Release, error) {
	rel, err := d.Driver.Get(key)
	if err != nil {
		return rel, err
	}
	if err := d.check(rel, []*hrelease.Release{rel}); err != nil {
		return nil, err
	}
	return rel, nil
}

// run calls fn with a helm configuration for namespace whose API requests end with ctx or after
// u.Timeout, and returns what fn returns, or ctx's cause when ctx ends first. fn's results travel
// back over a channel: an fn abandoned at ctx's end must write nothing the caller reads.
func run[T any](ctx context.Context, u *Uninstaller, namespace, name string, fn func(*session) (T, error)) (T, error) {
	var zero T
	if u.Config == nil {
		return zero, errors.New("no API server configuration")
	}
	if namespace == "" {
		return zero, errors.New("no namespace")
	}
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return zero, err
	}
	timeout := u.timeout()
	ctx, cancel := context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("gave up after %v (the Uninstaller's Timeout): %w", timeout, context.DeadlineExceeded))
	defer cancel()

	// What helm's action.Configuration.Init set up with the "secret" driver.
	config := withContext(ctx, u.Config)
	getter := newRESTClientGetter(config, namespace)
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return zero, err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return zero, err
	}
	mapper, err := getter.ToRESTMapper()
	if err != nil {
		return zero, err
	}
	kc := &kubeClient{ctx: ctx, decoder: scope.Decoder{Mapper: mapper, Namespace: namespace}, dynamic: dyn,
		discovery: clientset.Discovery(), log: u.debugLog}
	secrets := driver.NewSecrets(clientset.CoreV1().Secrets(namespace))
	secrets.Log = u.debugLog
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	s := &session{ctx: ctx, kube: kc, releases: storage.Init(secrets), getter: getter, namespace: namespace, release: name, log: u.debugLog}
	go func() {
		v, err := fn(s)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	}
}

// lastRevision returns the release's latest revision, or nil when it has no history.
func lastRevision(releases *storage.Storage, name string) (*hrelease.Release, error) {
	history, err := releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(history) == 0 {
		// The driver skipped records it could not decode; helm would fail on them too.
		return nil, fmt.Errorf("no readable revision of release %q", name)
	}
	releaseutil.SortByRevision(history)
	return history[len(history)-1], nil
}

func (u *Uninstaller) timeout() time.Duration {
	if u.Timeout > 0 {
		return u.Timeout
	}
	return DefaultTimeout
}

func (u *Uninstaller) debugLog(format string, v ...any) {
	if u.Log.V(1).Enabled() {
		u.Log.V(1).Info(fmt.Sprintf(format, v...))
	}
}

// describeFailure names the hooks of rel that failed, which helm's error does not ("timed out
// waiting for the condition"), and flattens helm's multi-line multierror into one line for Events
// and logs.
func describeFailure(rel *hrelease.Release, err error) error {
	if multi, ok := err.(interface{ WrappedErrors() []error }); ok && len(multi.WrappedErrors()) > 0 {
		msgs := make([]string, 0, len(multi.WrappedErrors()))
		for _, e := range multi.WrappedErrors() {
			msgs = append(msgs, e.Error())
		}
		err = &flatError{msg: strings.Join(msgs, "; "), err: err}
	}
	if rel == nil {
		return err
	}
	var failed []string
	for _, h := range rel.Hooks {
		if h.LastRun.Phase == hrelease.HookPhaseFailed {
			events := make([]string, 0, len(h.Events))
			for _, e := range h.Events {
				events = append(events, string(e))
			}
			failed = append(failed, fmt.Sprintf("%s hook %s %s", strings.Join(events, ","), h.Kind, h.Name))
		}
	}
	if len(failed) == 0 {
		return err
	}
	return fmt.Errorf("%s failed: %w", strings.Join(failed, ", "), err)
}

// flatError is helm's error with a one-line message.
type flatError struct {
	msg string
	err error
}

func (e *flatError) Error() string { return e.msg }
func (e *flatError) Unwrap() error { return e.err }
