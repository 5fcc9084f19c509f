package app

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
)

// ExpiryOptions configure the expiry detector (owners and lifetimes on workloads and Namespaces).
type ExpiryOptions struct {
	// Enabled is --enable-expiry.
	Enabled bool
	// Kinds are --lifecycle-kinds (Namespaces are always watched).
	Kinds []schema.GroupVersionKind
	// Settings: --default-ttl, --expiry-warning-before, --notification-interval, the owners
	// file (--expiry-owners). Acts is derived from the mode.
	Settings expiry.Settings
}

// DefaultLifecycleKinds is --lifecycle-kinds' default.
const DefaultLifecycleKinds = "apps/v1/Deployment,apps/v1/StatefulSet"

func (e ExpiryOptions) validate() error {
	s := e.Settings
	switch {
	case s.DefaultTTL < 0:
		return fmt.Errorf("--default-ttl=%s: must not be negative", s.DefaultTTL)
	case s.WarningBefore < 0:
		return fmt.Errorf("--expiry-warning-before=%s: must not be negative", s.WarningBefore)
	case s.NotificationInterval < 0:
		return fmt.Errorf("--notification-interval=%s: must not be negative", s.NotificationInterval)
	}
	return nil
}

// expiryWatches is what the expiry detector adds to the caches, when it runs.
func expiryWatches(o Options) []lifecycle.Watches {
	if !o.Expiry.Enabled {
		return nil
	}
	return []lifecycle.Watches{expiry.Watches()}
}

// setupExpiry adds the expiry detector: one controller per lifecycle kind and one for
// Namespaces, on their own pipeline (Keys expiry/…) sharing the store, the reporter and the
// actuators of the quota detector's. In PR mode a target no manifest defines is removed
// directly (never what a GitOps tool's labels say it manages).
func setupExpiry(mgr ctrl.Manager, o Options, base *pipeline.Pipeline, live client.Client) error {
	pl := *base
	pl.Detector = expiry.DetectorName
	pl.Vocab = expiry.Vocabulary()
	pl.Log = o.Log.WithName("pipeline").WithValues("detector", expiry.DetectorName)
	if o.Mode == ModePR {
		pl.Actuator = fallbackActuator{primary: base.Actuator, fallback: directActuator(live)}
	}
	rep, ok := base.Reporter.(expiry.Reporter)
	if !ok {
		return fmt.Errorf("the pipeline's reporter cannot write Events about expiring objects")
	}
	settings := o.Expiry.Settings
	settings.Acts = o.Mode != ModeObserve
	kinds := append([]schema.GroupVersionKind{{Version: "v1", Kind: "Namespace"}}, o.Expiry.Kinds...)
	for _, k := range kinds {
		if _, err := mgr.GetRESTMapper().RESTMapping(k.GroupKind(), k.Version); err != nil {
			return fmt.Errorf("--lifecycle-kinds: %s is not served by the API server: %w", k, err)
		}
		r := &expiry.Reconciler{
			Cache:     mgr.GetClient(),
			Pipeline:  &pl,
			Reporter:  rep,
			Kind:      k,
			Scalable:  expiry.Scalable(k),
			Settings:  settings,
			AutoMerge: o.Mode == ModePR && o.PR.AutoMerge,
			Now:       o.Now,
			Log:       o.Log.WithName("expiry"),
		}
		if err := r.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
			return fmt.Errorf("setting up the expiry detector for %s: %w", k, err)
		}
	}
	return nil
}
