package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/nsscope"
	"github.com/kustos-dev/kustos/internal/objcache"
	"github.com/kustos-dev/kustos/internal/orphans"
	"github.com/kustos-dev/kustos/internal/state"
)

// ExpiryOptions configure the expiry detector (expiry.Options: owners, lifetimes, the orphan
// digest, helm releases), the extension server behind its warnings' links, and the owners'
// channels (notify.ChainConfig: --notify-webhook-*, --notify-mail-*), which serve the
// inactivity detector too.
type ExpiryOptions struct {
	expiry.Options
	Extension extension.Options
	notify.ChainConfig
}

func (e ExpiryOptions) validate() error {
	if err := e.Validate(e.Mail.Host != ""); err != nil { // expiry.Options'; ChainConfig has none
		return err
	}
	return e.Extension.Validate()
}

// setupExpiry adds the expiry detector: one controller per lifecycle kind and one for
// Namespaces, on their own pipeline (Keys expiry/…), the helm releases' (--expiry-helm-releases),
// the VM crawler (--enable-vsphere) and the orphan digest (--admin-email). In PR mode a target
// no manifest defines is removed directly (never what a GitOps tool's labels say it manages).
func setupExpiry(sh *shared) error {
	o, mgr, live, nt, targets := sh.o, sh.mgr, sh.live, sh.notifiers, sh.targets
	pl := sh.pipelineFor(expiry.DetectorName, expiry.Vocabulary(), true)
	var uninstaller *helmrelease.Uninstaller
	if o.Expiry.HelmReleases {
		jsonCfg := rest.CopyConfig(mgr.GetConfig())
		jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
		uninstaller = &helmrelease.Uninstaller{Config: jsonCfg, Log: o.Log.WithName("helm")}
		if o.Mode != ModeObserve {
			// An uninstall is a deletion: --allow=expiry:delete:helm.sh/releases opts in.
			pl.Actuator = allow.ReleaseRemovals{Allow: o.Allow, Next: helmrelease.Actuator{Releases: uninstaller, Next: pl.Actuator}}
		}
	}
	if o.Mode != ModeObserve {
		// A backup or submission before a removal (--backup, --enable-submission).
		var err error
		if pl.Actuator, err = gated(o, mgr, live, pl.Reporter, pl.Actuator); err != nil {
			return err
		}
	}
	settings := o.Expiry.SettingsFor(o.Mode != ModeObserve, nt.Mail != nil)
	if nt.Mail != nil && o.Expiry.AdminEmail != "" {
		namespaces, err := nsscope.Parse(o.NamespaceSelector)
		if err != nil {
			return err
		}
		if err := mgr.Add(&orphans.Digest{Reader: mgr.GetAPIReader(), Kinds: o.Expiry.Kinds, Namespaces: namespaces, Settings: settings, Notifier: nt.Mail, StateNamespace: o.StateNamespace,
			To: o.Expiry.AdminEmail, Interval: o.Expiry.DigestInterval, Now: o.Now, Log: o.Log.WithName("orphan-digest")}); err != nil {
			return err
		}
	}
	pl.Notifier = nt.Notifier
	if o.VSphere.Enabled {
		if err := setupVSphere(sh, pl, settings); err != nil {
			return err
		}
	}
	// Whether a target that is no longer scheduled still has a Lease to clear: from the cache.
	cachedState := &state.Store{Reader: mgr.GetClient(), Namespace: o.StateNamespace}
	kinds := append([]schema.GroupVersionKind{{Version: "v1", Kind: "Namespace"}}, o.Expiry.Kinds...)
	held := sh.plan.HeldWhole
	if sh.base.Confirm != nil {
		sh.base.Confirm.Register(expiry.DetectorName, expiry.TargetReader(mgr.GetAPIReader(), kinds))
	}
	for _, k := range kinds {
		var cached client.Reader = mgr.GetClient()
		var objects cache.Cache
		if held[k] {
			// The target cache holds the kind's objects for the inactivity detector and the
			// Cleaners: their metadata is read from there, not from a second informer.
			objects = targets
			cached = objcache.MetadataView{Objects: targets.Cache, Rest: mgr.GetClient()}
		}
		r := &expiry.Reconciler{
			Cache:        cached,
			Targets:      objects,
			Pipeline:     pl,
			Reporter:     sh.recorder,
			Scope:        o.scope,
			Kind:         k,
			Scalable:     expiry.Scalable(k),
			Settings:     settings,
			AutoMerge:    o.Mode == ModePR && o.PR.AutoMerge,
			Grouping:     o.PR.GroupingFor(expiry.DetectorName),
			GroupWindow:  o.PR.GroupWindow,
			Links:        nt.NoticeLinks,
			LeaseTrigger: extension.Recorded,
			HasState:     cachedState.Has,
			Now:          o.Now,
			Log:          o.Log.WithName("expiry"),
			ResumeLinks:  nt.ExpiryResumeLinks,
		}
		if o.Mode != ModeObserve {
			// A pause records spec.replicas, read live (only of targets whose lifetime ends in a
			// pause) so that its owner can resume it; observer mode pauses nothing.
			r.Scale = mgr.GetAPIReader()
		}
		if err := r.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
			return fmt.Errorf("setting up the expiry detector for %s: %w", k, err)
		}
	}
	if uninstaller != nil {
		h := &expiry.HelmReconciler{Cache: mgr.GetClient(), Releases: helmrelease.ExpiryReleases{Uninstaller: uninstaller}, Pipeline: pl, Reporter: sh.recorder, Scope: o.scope,
			Settings: settings, Links: nt.NoticeLinks, LeaseTrigger: extension.Recorded, HasState: cachedState.Has, Now: o.Now, Log: o.Log.WithName("expiry-helm")}
		if err := h.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
			return fmt.Errorf("setting up the expiry detector for helm releases: %w", err)
		}
	}
	return nil
}

// buildNotifiers builds the owners' channels, shared by the expiry and inactivity detectors,
// with the extension server when --extension-addr is set.
func buildNotifiers(ctx context.Context, mgr ctrl.Manager, o Options, live client.Client, reporter extension.EventReporter) (extension.Channels, error) {
	d := extension.Detectors{Expiry: o.Expiry.Enabled, WriteBack: o.Mode != ModeObserve, Reporter: reporter,
		Live: live, StateNamespace: o.StateNamespace, Instance: o.Instance, Now: o.Now, Log: o.Log.WithName("extension")}
	if o.Inactivity.Enabled {
		d.Inactivity = &o.Inactivity // its alerts carry keep links; a keep is an OwnerKept Event on the target
	}
	return o.Expiry.Extension.Channels(ctx, mgr, o.Expiry.ChainConfig, d)
}
