package state

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// NamespaceSweeper deletes state Leases of namespaces that no longer exist, so that they do not
// pile up in the controller's namespace, and the Leases of groups no target needs. It runs on the
// leader only, once at start and then every Interval, and at once when told that a namespace
// is gone (NamespaceGone): an open pull request of a deleted namespace is closed then, not up
// to an Interval later.
type NamespaceSweeper struct {
	Store *Store
	// Live reads the namespaces: the API server, not a cache.
	Live client.Reader
	// Release closes the open PR of a Lease whose namespace is gone (PR mode; nil otherwise).
	Release func(context.Context, Record) error
	// ReleaseNamespace closes the open PRs of a gone namespace that no Lease may name (PR mode:
	// its namespace groups' PRs; nil otherwise). It is called at each sweep of a namespace
	// told gone, the recheck included: a group's PR opened while the first sweep deleted the
	// group's Lease is recorded nowhere.
	ReleaseNamespace func(ctx context.Context, namespace string) error
	Interval         time.Duration
	// Recheck is how long after a namespace's sweep it is swept once more (0:
	// DefaultGoneRecheck): a proposal under way when the namespace went can be opened and
	// recorded after the first sweep.
	Recheck time.Duration
	// Namespaces, when set, is the manager's cache: its Namespace informer tells the sweeper
	// of each deletion (NamespaceGone).
	Namespaces NamespaceDeletions
	// Swept, when set, counts the Leases deleted.
	Swept prometheus.Counter
	Log   logr.Logger

	mu     sync.Mutex
	gone   map[string]time.Time // namespace → when to sweep it
	wakeup chan struct{}
}

// DefaultGoneRecheck is NamespaceSweeper.Recheck's default.
const DefaultGoneRecheck = time.Minute

// NamespaceGone asks for a sweep of namespace's Leases now and once more after Recheck. It
// never blocks; calls in a burst (a tenant's namespaces deleted together) share sweeps.
func (s *NamespaceSweeper) NamespaceGone(namespace string) {
	s.mu.Lock()
	if s.gone == nil {
		s.gone = map[string]time.Time{}
	}
	s.gone[namespace] = time.Time{}
	s.mu.Unlock()
	s.wake()
}

func (s *NamespaceSweeper) wake() {
	select {
	case s.wakeups() <- struct{}{}:
	default: // a wake-up is already waiting; its sweep takes this namespace too
	}
}

func (s *NamespaceSweeper) wakeups() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wakeup == nil {
		s.wakeup = make(chan struct{}, 1)
	}
	return s.wakeup
}

// due takes the namespaces due for a sweep at now and says when the next one falls due (zero:
// none waiting).
func (s *NamespaceSweeper) due(now time.Time) (names []string, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recheck := s.Recheck
	if recheck <= 0 {
		recheck = DefaultGoneRecheck
	}
	for ns, at := range s.gone {
		switch {
		case at.IsZero(): // told now: sweep, and once more after recheck
			names = append(names, ns)
			s.gone[ns] = now.Add(recheck)
		case !at.After(now): // the second sweep
			names = append(names, ns)
			delete(s.gone, ns)
		}
	}
	for _, at := range s.gone {
		if at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	sort.Strings(names)
	return names, next
}

// NamespaceDeletions is what the sweeper needs of the manager's cache: the informer of
// Namespaces, to hear of their deletion.
type NamespaceDeletions interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// WatchDeletions calls NamespaceGone for every Namespace the informer of c sees deleted.
func (s *NamespaceSweeper) WatchDeletions(ctx context.Context, c NamespaceDeletions) error {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	inf, err := c.GetInformer(ctx, ns)
	if err != nil {
		return fmt.Errorf("watching namespace deletions: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: s.onDelete})
	if err != nil {
		return fmt.Errorf("watching namespace deletions: %w", err)
	}
	return nil
}

// onDelete is the informer's delete handler: the object, or the tombstone of one whose
// deletion the watch missed.
func (s *NamespaceSweeper) onDelete(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if o, ok := obj.(metav1.Object); ok && o.GetName() != "" {
		s.NamespaceGone(o.GetName())
	}
}

var _ manager.LeaderElectionRunnable = (*NamespaceSweeper)(nil)

// NeedLeaderElection is true: one replica sweeps.
func (s *NamespaceSweeper) NeedLeaderElection() bool { return true }

// Start sweeps until ctx ends; a failed sweep is logged and tried again at the next tick.
func (s *NamespaceSweeper) Start(ctx context.Context) error {
	if s.Namespaces != nil {
		if err := s.WatchDeletions(ctx, s.Namespaces); err != nil {
			return err
		}
	}
	wakeup := s.wakeups()
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	recheck := time.NewTimer(s.Interval)
	defer recheck.Stop()
	s.sweepAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.sweepAll(ctx)
		case <-wakeup:
		case <-recheck.C:
		}
		if next := s.sweepGone(ctx); !next.IsZero() {
			recheck.Reset(time.Until(next))
		} else {
			recheck.Stop()
		}
	}
}

// sweepGone sweeps the namespaces told gone that are due, and says when the next is due.
func (s *NamespaceSweeper) sweepGone(ctx context.Context) time.Time {
	names, next := s.due(time.Now())
	for _, ns := range names {
		n, err := s.Store.SweepNamespace(ctx, ns, s.namespaceExists, s.Release)
		if err != nil {
			s.Log.Error(err, "lease sweep of a deleted namespace failed; the periodic sweep tries again", "namespace", ns)
		}
		if n > 0 {
			s.count(n)
			s.Log.Info("deleted state leases of a deleted namespace", "namespace", ns, "count", n)
		}
		s.releaseNamespace(ctx, ns)
	}
	return next
}

// releaseNamespace hands namespace, if it is gone, to ReleaseNamespace; a failure is logged,
// and the recheck (or, after it, nothing) tries again.
func (s *NamespaceSweeper) releaseNamespace(ctx context.Context, ns string) {
	if s.ReleaseNamespace == nil {
		return
	}
	exists, err := s.namespaceExists(ctx, ns)
	if err == nil && !exists {
		err = s.ReleaseNamespace(ctx, ns)
	}
	if err != nil {
		s.Log.Error(err, "closing the pull requests of a deleted namespace failed", "namespace", ns)
	}
}

// sweepAll is one periodic pass: every namespace's Leases, then the groups'.
func (s *NamespaceSweeper) sweepAll(ctx context.Context) {
	n, err := s.Store.Sweep(ctx, s.namespaceExists, s.Release)
	if err != nil {
		s.Log.Error(err, "lease sweep failed; will try again")
	}
	if n > 0 {
		s.count(n)
		s.Log.Info("deleted state leases of deleted namespaces", "count", n)
	}
	g, err := s.Store.SweepGroups(ctx)
	if err != nil {
		s.Log.Error(err, "group lease sweep failed; will try again")
	}
	if g > 0 {
		s.count(g)
		s.Log.Info("deleted the leases of groups no target needs", "count", g)
	}
}

func (s *NamespaceSweeper) count(n int) {
	if s.Swept != nil {
		s.Swept.Add(float64(n))
	}
}

// namespaceExists asks the API server, not the cache: deleting state on a stale cache
// would forget a cooldown.
func (s *NamespaceSweeper) namespaceExists(ctx context.Context, name string) (bool, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err := s.Live.Get(ctx, types.NamespacedName{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// LegacyQuotaOwners counts the quotas whose Lease name by namespace-resizer's convention
// (state-<ns>-<quota>, which Kustos adopts) is name: a Lease without kustos.io/key is adopted only
// when exactly one quota fits it. It is the Store's LegacyOwners for the quota detector.
func LegacyQuotaOwners(ctx context.Context, c client.Reader, name string) (int, error) {
	var list corev1.ResourceQuotaList
	if err := c.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing quotas: %w", err)
	}
	n := 0
	for i := range list.Items {
		if LeaseName(lifecycle.NewKey(quotaDetector, list.Items[i].Namespace, list.Items[i].Name)) == name {
			n++
		}
	}
	return n, nil
}
