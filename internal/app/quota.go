package app

import (
	"fmt"

	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// validateQuota checks the quota detector's flags (--cooldown, and --prometheus-url, which the
// usage history is read from; the --threshold and --increment defaults are parsed where they are
// read).
func validateQuota(o Options) error {
	if o.DefaultCooldown < 0 {
		return fmt.Errorf("--cooldown=%s: must not be negative", lifecycle.FormatDuration(o.DefaultCooldown))
	}
	if o.Inactivity.Prometheus.URL != "" {
		// The quotas' usage history comes from it, whether or not inactivity is on.
		return o.Inactivity.Prometheus.Validate()
	}
	return nil
}

// setupQuota adds the quota detector, which always runs: its pipeline (Keys quota/…) and its
// controller. Its Leases keep namespace-resizer's legacy names (the state store's
// LegacyOwners, set where the store is made).
func setupQuota(sh *shared) error {
	o, mgr := sh.o, sh.mgr
	history := o.QuotaHistory
	if history == nil && o.Inactivity.Prometheus.URL != "" {
		// With a Prometheus, the usage window is kube-state-metrics' history of every quota,
		// read at once; without one, each quota's state Lease keeps its daily peaks.
		prom, err := quotahistory.NewPrometheus(o.Inactivity.Prometheus, quotahistory.Options{Log: o.Log.WithName("quota-history")})
		if err != nil {
			return fmt.Errorf("quota usage history: %w", err)
		}
		history = prom
	}
	rec := &quota.Reconciler{
		Pipeline:        sh.pipelineFor(quota.DetectorName, quota.Vocabulary(), false),
		Reporter:        sh.recorder,
		Scope:           o.scope,
		Cache:           mgr.GetClient(),
		Live:            mgr.GetAPIReader(),
		Defaults:        o.Defaults,
		DefaultCooldown: o.DefaultCooldown,
		Window:          o.QuotaWindow,
		Observe:         o.Mode == ModeObserve,
		History:         history,
		AutoMerge:       o.Mode == ModePR && o.PR.AutoMerge,
		Grouping:        o.PR.GroupingFor(quota.DetectorName),
		GroupWindow:     o.PR.GroupWindow,
		Now:             o.Now,
		Log:             o.Log.WithName("quota"),
	}
	if err := rec.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
		return fmt.Errorf("setting up quota detector: %w", err)
	}
	return nil
}
