package state

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// NamespaceSweeper deletes state Leases of namespaces that no longer exist, so that they do not
// pile up in the controller's namespace, and the Leases of groups no target needs. It runs on the
// leader only, once at start and then every Interval.
type NamespaceSweeper struct {
	Store *Store
	// Live reads the namespaces: the API server, not a cache.
	Live client.Reader
	// Release closes the open PR of a Lease whose namespace is gone (PR mode; nil otherwise).
	Release  func(context.Context, Record) error
	Interval time.Duration
	// Swept, when set, counts the Leases deleted.
	Swept prometheus.Counter
	Log   logr.Logger
}

var _ manager.LeaderElectionRunnable = (*NamespaceSweeper)(nil)

// NeedLeaderElection is true: one replica sweeps.
func (s *NamespaceSweeper) NeedLeaderElection() bool { return true }

// Start sweeps until ctx ends; a failed sweep is logged and tried again at the next tick.
func (s *NamespaceSweeper) Start(ctx context.Context) error {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
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
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
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
