package app

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/keyring"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/nsscope"
	"github.com/kustos-dev/kustos/internal/objcache"
	"github.com/kustos-dev/kustos/internal/orphans"
	"github.com/kustos-dev/kustos/internal/pipeline"
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

// expiryWatches is what the expiry detector adds to the caches, when it runs.
func expiryWatches(o Options) []lifecycle.Watches {
	if !o.Expiry.Enabled {
		return nil
	}
	w := expiry.Watches()
	if o.Expiry.HelmReleases {
		w.SecretLabels = map[string]string{expiry.HelmOwnerLabel: expiry.HelmOwnerValue}
		w.MetadataLabels = append(w.MetadataLabels, expiry.HelmOwnerLabel, expiry.HelmNameLabel)
	}
	return []lifecycle.Watches{w}
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
	settings := o.Expiry.SettingsFor(o.Mode != ModeObserve, nt.mail != nil)
	if nt.mail != nil {
		if o.Expiry.AdminEmail != "" {
			namespaces, err := nsscope.Parse(o.NamespaceSelector)
			if err != nil {
				return err
			}
			if err := mgr.Add(&orphans.Digest{Reader: mgr.GetAPIReader(), Kinds: o.Expiry.Kinds, Namespaces: namespaces, Settings: settings, Notifier: nt.mail, StateNamespace: o.StateNamespace,
				To: o.Expiry.AdminEmail, Interval: o.Expiry.DigestInterval, Now: o.Now, Log: o.Log.WithName("orphan-digest")}); err != nil {
				return err
			}
		}
	}
	var links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error)
	if nt.extension != nil {
		links = nt.extension.NoticeLinks
	}
	pl.Notifier = nt.notifier
	if o.VSphere.Enabled {
		if err := setupVSphere(sh, pl, settings, links); err != nil {
			return err
		}
	}
	// Whether a target that is no longer scheduled still has a Lease to clear: from the cache.
	cachedState := &state.Store{Reader: mgr.GetClient(), Namespace: o.StateNamespace}
	kinds := append([]schema.GroupVersionKind{{Version: "v1", Kind: "Namespace"}}, o.Expiry.Kinds...)
	held := sh.plan.HeldWhole
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
			Links:        links,
			LeaseTrigger: extension.Recorded,
			HasState:     cachedState.Has,
			Now:          o.Now,
			Log:          o.Log.WithName("expiry"),
		}
		if err := r.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
			return fmt.Errorf("setting up the expiry detector for %s: %w", k, err)
		}
	}
	if uninstaller != nil {
		h := &expiry.HelmReconciler{Cache: mgr.GetClient(), Releases: helmrelease.ExpiryReleases{Uninstaller: uninstaller}, Pipeline: pl, Reporter: sh.recorder, Scope: o.scope,
			Settings: settings, Links: links, LeaseTrigger: extension.Recorded, HasState: cachedState.Has, Now: o.Now, Log: o.Log.WithName("expiry-helm")}
		if err := h.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
			return fmt.Errorf("setting up the expiry detector for helm releases: %w", err)
		}
	}
	return nil
}

// notifiers are the owners' channels, shared read-only by the expiry and inactivity detectors:
// the webhook and mail (batched) flags, and the owner's page links of the extension server,
// built once before either detector is set up, so that one owner's notices of both detectors
// share a batch and carry the same links whichever is set up first.
type notifiers struct {
	// notifier sends to all of them (nil: none configured).
	notifier pipeline.Notifier
	// mail is the unbatched mail notifier (nil: no mail): the orphan digest uses it, and owners
	// then need an address.
	mail *notify.Mail
	// extension serves the extension links and the owners' pages (nil: no --extension-addr, or
	// no expiry detector).
	extension *extension.Server
	// keepLinks mints an inactivity alert's keep links (nil: the extension server is off).
	keepLinks func(key lifecycle.Key, owner string, idleSince, alertAt, expires time.Time) ([]lifecycle.NoticeLink, error)
	// resumeLinks mints a pause notice's resume links (nil: the extension server is off).
	resumeLinks func(key lifecycle.Key, owner string, pausedAt, expires time.Time) ([]lifecycle.NoticeLink, error)
}

func buildNotifiers(ctx context.Context, mgr ctrl.Manager, o Options, live client.Client, reporter extension.EventReporter) (notifiers, error) {
	var out notifiers
	e := o.Expiry
	chain, err := notify.NewChain(e.ChainConfig)
	if err != nil {
		return out, err
	}
	if chain.Batcher != nil {
		if err := mgr.Add(chain.Batcher); err != nil { // it sends the batches still gathering at the stop
			return out, err
		}
	}
	out.notifier, out.mail = chain.Notifier, chain.Mail
	if !o.Expiry.Enabled {
		return out, nil
	}
	if out.extension, err = setupExtension(ctx, mgr, o, live); err != nil {
		return out, err
	}
	if out.extension != nil && out.extension.Keep != nil {
		// Inactivity's alerts carry keep links; a keep is an OwnerKept Event on the target.
		out.extension.Keep.Reporter, out.keepLinks = reporter, out.extension.KeepLinks
	}
	if out.extension != nil && out.extension.Resume != nil {
		// Inactivity's pauses carry resume links; a resume is an OwnerResumed Event on the target.
		out.extension.Resume.Reporter, out.resumeLinks = reporter, out.extension.ResumeLinks
	}
	if out.extension != nil && out.notifier != nil {
		// Every notice about an owner's environment (expiry's and inactivity's) carries a new
		// link to the owner's page.
		out.notifier = extension.OwnerPages{Server: out.extension, Next: out.notifier}
	}
	return out, nil
}

// setupExtension starts the extension server on every replica (a link may reach any of them):
// the extension links and the owner's page; nil without --extension-addr.
func setupExtension(ctx context.Context, mgr ctrl.Manager, o Options, live client.Client) (*extension.Server, error) {
	e := o.Expiry.Extension
	if e.Addr == "" {
		return nil, nil
	}
	key, flag, err := keyring.ReadFlags(ctx, live, "extension-key", e.KeyFile, e.KeySecret)
	if err != nil {
		return nil, err
	}
	// The API server, not the cache: a link used on another replica a moment ago must be seen,
	// and an owner's page lists their Leases by label selector without a cache of every Lease.
	store := &state.Store{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: o.StateNamespace, Identity: state.NewIdentity(o.Instance)}
	srv, err := e.NewServer(key, flag, store, o.Mode != ModeObserve, o.Now, o.Log.WithName("extension"))
	if err != nil {
		return nil, err
	}
	if o.Inactivity.Enabled {
		if srv.Keep, err = keeper(o.Inactivity, mgr.GetRESTMapper()); err != nil {
			return nil, err
		}
		if o.Mode != ModeObserve {
			// Observer mode pauses nothing: no resume links.
			srv.Resume = &extension.Resumer{Mapper: mgr.GetRESTMapper()}
		}
	}
	if err := mgr.Add(&extension.Listener{Addr: e.Addr, Handler: srv, Log: o.Log.WithName("extension")}); err != nil {
		return nil, err
	}
	return srv, nil
}
