package app

import (
	"fmt"

	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// validateQuota checks the quota detector's flags (--cooldown; the --threshold and
// --increment defaults are parsed where they are read).
func validateQuota(o Options) error {
	if o.DefaultCooldown < 0 {
		return fmt.Errorf("--cooldown=%s: must not be negative", lifecycle.FormatDuration(o.DefaultCooldown))
	}
	return nil
}

// setupQuota adds the quota detector, which always runs: its pipeline (Keys quota/…) and its
// controller. Its Leases keep namespace-resizer's legacy names (the state store's
// LegacyOwners, set where the store is made).
func setupQuota(sh *shared) error {
	o, mgr := sh.o, sh.mgr
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
		History:         o.QuotaHistory,
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
