package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/fallback"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
	"github.com/kustos-dev/kustos/internal/nsscope"
	"github.com/kustos-dev/kustos/internal/objcache"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

// ExpiryOptions configure the expiry detector (owners and lifetimes on workloads and Namespaces).
type ExpiryOptions struct {
	// Enabled is --enable-expiry.
	Enabled bool
	// Kinds are --lifecycle-kinds (Namespaces are always watched).
	Kinds []schema.GroupVersionKind
	// Settings: --default-ttl, --expiry-warning-before, --notification-interval, the owners
	// file (--expiry-owners). Acts and Mail are derived from the mode and the notifiers.
	Settings expiry.Settings
	// Extension serves the extension links (Addr "": no server, warnings carry no links).
	Extension ExtensionOptions
	// Webhook receives every Notice as JSON (URL "": none).
	Webhook WebhookNotifyOptions
	// Mail sends Notices to owners by email (Host "": none); BatchWindow > 0 gathers one
	// owner's notices within it into one message (at most BatchMax).
	Mail        notify.MailConfig
	BatchWindow time.Duration
	BatchMax    int
	// AdminEmail receives the orphan digest every DigestInterval (needs mail).
	AdminEmail     string
	DigestInterval time.Duration
	// HelmReleases is --expiry-helm-releases: helm releases with ec_owner/ec_ttl values expire
	// too (reads helm's release Secrets; uninstalling needs delete on what the releases hold).
	HelmReleases bool
}

// ExtensionOptions are the --extension-* flags.
type ExtensionOptions struct {
	// Addr is --extension-addr (":8443"); URL is --extension-url, the public root of the links.
	Addr, URL string
	// Periods are --extension-periods; Max is --extension-max.
	Periods []string
	Max     time.Duration
	// KeyFile is --extension-key-file: the HMAC key, from a Secret.
	KeyFile string
	// KeySecret is --extension-key-secret (namespace/name), instead of the file: the key is read
	// from that Secret, which Kustos creates once with a random key when it does not exist.
	KeySecret string
	// TrustedProxies is --trusted-proxies: CIDRs of the proxies whose X-Forwarded-For names
	// the client the server rate-limits (empty: none).
	TrustedProxies []string
	// OwnerPageTTL is --owner-page-link-ttl: the longest an owner's page link works after the
	// notice that carries it.
	OwnerPageTTL time.Duration
}

// WebhookNotifyOptions are --notify-webhook-url and --notify-webhook-token-file.
type WebhookNotifyOptions struct {
	URL, TokenFile string
}

// DefaultLifecycleKinds is --lifecycle-kinds' default.
const DefaultLifecycleKinds = expiry.DefaultLifecycleKinds

func (e ExpiryOptions) validate() error {
	s := e.Settings
	switch {
	case s.DefaultTTL < 0:
		return fmt.Errorf("--default-ttl=%s: must not be negative", lifecycle.FormatDuration(s.DefaultTTL))
	case s.WarningBefore < 0:
		return fmt.Errorf("--expiry-warning-before=%s: must not be negative", lifecycle.FormatDuration(s.WarningBefore))
	case s.NotificationInterval < 0:
		return fmt.Errorf("--notification-interval=%s: must not be negative", lifecycle.FormatDuration(s.NotificationInterval))
	case e.AdminEmail != "" && e.Mail.Host == "":
		return fmt.Errorf("--admin-email=%s needs --notify-mail-host: the orphan digest goes by mail", e.AdminEmail)
	case e.AdminEmail != "" && e.DigestInterval <= 0:
		return fmt.Errorf("--orphan-digest-interval=%s: must be positive", lifecycle.FormatDuration(e.DigestInterval))
	case e.Extension.Addr != "" && e.Extension.URL == "":
		return fmt.Errorf("--extension-addr=%s needs --extension-url, the public address the links start with", e.Extension.Addr)
	case e.Extension.OwnerPageTTL < 0:
		return fmt.Errorf("--owner-page-link-ttl=%s: must not be negative (0: the default, 14d)", lifecycle.FormatDuration(e.Extension.OwnerPageTTL))
	case e.Extension.Addr != "" && e.Extension.KeyFile == "" && e.Extension.KeySecret == "":
		return fmt.Errorf("--extension-addr=%s needs --extension-key-file or --extension-key-secret, the key that signs the links", e.Extension.Addr)
	}
	if e.Extension.Addr != "" {
		if _, err := extension.ParsePeriods(e.Extension.Periods, e.Extension.Max); err != nil {
			return fmt.Errorf("--extension-periods: %w", err)
		}
	}
	if _, err := extension.ParseTrustedProxies(e.Extension.TrustedProxies); err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	return nil
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
// Namespaces, on their own pipeline (Keys expiry/…) sharing the store, the reporter and the
// actuators of the quota detector's. In PR mode a target no manifest defines is removed
// directly (never what a GitOps tool's labels say it manages).
func setupExpiry(ctx context.Context, mgr ctrl.Manager, o Options, base *pipeline.Pipeline, live client.Client, nt *notifiers, targets *targetCache) error {
	pl := *base
	pl.Detector = expiry.DetectorName
	pl.Vocab = expiry.Vocabulary()
	pl.Log = o.Log.WithName("pipeline").WithValues("detector", expiry.DetectorName)
	if o.Mode == ModePR {
		pl.Actuator = fallback.Actuator{Primary: base.Actuator, Fallback: directActuator(live, o.Allow)}
	}
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
	rep, ok := base.Reporter.(expiry.Reporter)
	if !ok {
		return fmt.Errorf("the pipeline's reporter cannot write Events about expiring objects")
	}
	settings := o.Expiry.Settings
	settings.CarriesOut = o.Mode != ModeObserve
	if nt.mail != nil {
		settings.Mail = true // owners need an address now
		if o.Expiry.AdminEmail != "" {
			namespaces, err := nsscope.Parse(o.NamespaceSelector)
			if err != nil {
				return err
			}
			if err := mgr.Add(&orphanDigest{reader: mgr.GetAPIReader(), kinds: o.Expiry.Kinds, namespaces: namespaces, settings: settings, notifier: nt.mail, stateNamespace: o.StateNamespace,
				to: o.Expiry.AdminEmail, interval: o.Expiry.DigestInterval, now: o.Now, log: o.Log.WithName("orphan-digest")}); err != nil {
				return err
			}
		}
	}
	srv, err := setupExtension(ctx, mgr, o, live)
	if err != nil {
		return err
	}
	var links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error)
	if srv != nil {
		links = extensionLinks(srv)
		if srv.Keep != nil {
			srv.Keep.Reporter, nt.keepLinks = rep, srv.KeepLinks
		}
		if nt.notifier != nil {
			// Every notice about an owner's environment (expiry's, and inactivity's, set up
			// after this) carries a new link to the owner's page.
			nt.notifier = extension.OwnerPages{Server: srv, Next: nt.notifier}
		}
	}
	pl.Notifier = nt.notifier
	if o.VSphere.Enabled {
		if err := setupVSphere(mgr, o, &pl, rep, settings, links); err != nil {
			return err
		}
	}
	// Whether a target that is no longer scheduled still has a Lease to clear: from the cache.
	cachedState := &state.Store{Reader: mgr.GetClient(), Namespace: o.StateNamespace}
	kinds := append([]schema.GroupVersionKind{{Version: "v1", Kind: "Namespace"}}, o.Expiry.Kinds...)
	held := heldWhole(o)
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
			Pipeline:     &pl,
			Reporter:     rep,
			Scope:        o.scope,
			Kind:         k,
			Scalable:     expiry.Scalable(k),
			Settings:     settings,
			AutoMerge:    o.Mode == ModePR && o.PR.AutoMerge,
			Grouping:     o.PR.grouping(expiry.DetectorName),
			GroupWindow:  o.PR.GroupWindow,
			Links:        links,
			LeaseTrigger: extensionRecorded,
			HasState:     cachedState.Has,
			Now:          o.Now,
			Log:          o.Log.WithName("expiry"),
		}
		if err := r.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil { //nolint:contextcheck // its watch predicates run for the manager's lifetime, not under start-up's context
			return fmt.Errorf("setting up the expiry detector for %s: %w", k, err)
		}
	}
	if uninstaller != nil {
		h := &expiry.HelmReconciler{Cache: mgr.GetClient(), Releases: helmReleases{uninstaller}, Pipeline: &pl, Reporter: rep, Scope: o.scope,
			Settings: settings, Links: links, LeaseTrigger: extensionRecorded, HasState: cachedState.Has, Now: o.Now, Log: o.Log.WithName("expiry-helm")}
		if err := h.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil { //nolint:contextcheck // its watch predicates run for the manager's lifetime, not under start-up's context
			return fmt.Errorf("setting up the expiry detector for helm releases: %w", err)
		}
	}
	return nil
}

// notifiers are the owners' channels, shared by the expiry and inactivity detectors: the
// webhook and mail (batched) flags, built once so that one owner's notices of both detectors
// share a batch.
type notifiers struct {
	// notifier sends to all of them (nil: none configured).
	notifier pipeline.Notifier
	// mail is the unbatched mail notifier (nil: no mail): the orphan digest uses it, and owners
	// then need an address.
	mail *notify.Mail
	// keepLinks mints an inactivity alert's keep links (nil: the extension server is off).
	keepLinks func(key lifecycle.Key, owner string, idleSince, alertAt, expires time.Time) ([]lifecycle.NoticeLink, error)
}

func buildNotifiers(mgr ctrl.Manager, o Options) (notifiers, error) {
	var out notifiers
	var all notify.Multi
	if o.Expiry.Webhook.URL != "" {
		token := ""
		if f := o.Expiry.Webhook.TokenFile; f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return out, fmt.Errorf("--notify-webhook-token-file: %w", err)
			}
			token = strings.TrimSpace(string(b))
		}
		w, err := notify.NewWebhook(o.Expiry.Webhook.URL, token)
		if err != nil {
			return out, fmt.Errorf("--notify-webhook-url: %w", err)
		}
		all = append(all, w)
	}
	if o.Expiry.Mail.Host != "" {
		m, err := notify.NewMail(o.Expiry.Mail)
		if err != nil {
			return out, fmt.Errorf("--notify-mail-*: %w", err)
		}
		out.mail = m
		var n pipeline.Notifier = m
		if o.Expiry.BatchWindow > 0 {
			b := notify.NewBatcher(m, notify.BatchOptions{Window: o.Expiry.BatchWindow, Max: o.Expiry.BatchMax})
			if err := mgr.Add(batcherCloser{b}); err != nil {
				return out, err
			}
			n = b
		}
		// Last: a batched mail blocks for its window; the webhook need not wait for it.
		all = append(all, n)
	}
	switch len(all) {
	case 0:
	case 1:
		out.notifier = all[0]
	default:
		out.notifier = all
	}
	return out, nil
}

// batcherCloser sends the mails still gathering when the manager stops (within its graceful
// shutdown), instead of dropping them; their senders are told, so nothing is recorded as sent
// that was not.
type batcherCloser struct{ b *notify.Batcher }

func (c batcherCloser) NeedLeaderElection() bool { return false }

func (c batcherCloser) Start(ctx context.Context) error {
	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return c.b.Close(closeCtx)
}

// extensionRecorded: an expiry Key's Lease now records a different extension (the extension
// server wrote it, on this replica or another): the detector looks again at once to write the
// new deadline back, instead of at its next scheduled look.
func extensionRecorded(before, after client.Object) (lifecycle.Key, bool) {
	annotation := state.BagPrefix + expiry.BagExtendedUntil
	key := after.GetAnnotations()[state.AnnotationKey]
	if !strings.HasPrefix(key, expiry.DetectorName+"/") || before.GetAnnotations()[annotation] == after.GetAnnotations()[annotation] {
		return "", false
	}
	return lifecycle.Key(key), true
}

// helmReleases reads releases for the expiry detector through helm's library.
type helmReleases struct{ u *helmrelease.Uninstaller }

var _ expiry.Releases = helmReleases{}

func (h helmReleases) Release(ctx context.Context, namespace, name string) (expiry.Release, bool, error) {
	i, found, err := h.u.Release(ctx, namespace, name)
	return expiry.Release{Values: i.Values, FirstDeployed: i.FirstDeployed, Labels: i.Labels}, found, err
}

func (h helmReleases) Check(ctx context.Context, namespace, name string) error {
	return h.u.Check(ctx, namespace, name)
}

// setupExtension starts the extension server on every replica (a link may reach any of them):
// the extension links and the owner's page; nil without --extension-addr.
func setupExtension(ctx context.Context, mgr ctrl.Manager, o Options, live client.Client) (*extension.Server, error) {
	e := o.Expiry.Extension
	if e.Addr == "" {
		return nil, nil
	}
	key, flag, err := readKey(ctx, live, "extension-key", e.KeyFile, e.KeySecret)
	if err != nil {
		return nil, err
	}
	signer, err := extension.NewSigner(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	periods, err := extension.ParsePeriods(e.Periods, e.Max)
	if err != nil {
		return nil, fmt.Errorf("--extension-periods: %w", err)
	}
	proxies, err := extension.ParseTrustedProxies(e.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("--trusted-proxies: %w", err)
	}
	// The API server, not the cache: a link used on another replica a moment ago must be seen,
	// and an owner's page lists their Leases by label selector without a cache of every Lease.
	store := &state.Store{Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: o.StateNamespace, Identity: replicaIdentity(o.Instance)}
	srv := &extension.Server{
		Signer: signer, Periods: periods, Max: e.Max, BaseURL: strings.TrimRight(e.URL, "/"),
		Store:          store,
		Owners:         store,
		WriteBack:      o.Mode != ModeObserve,
		TrustedProxies: proxies,
		OwnerPageTTL:   e.OwnerPageTTL,
		Now:            o.Now,
		Log:            o.Log.WithName("extension"),
	}
	if o.Inactivity.Enabled {
		if srv.Keep, err = keeper(o.Inactivity, mgr.GetRESTMapper()); err != nil {
			return nil, err
		}
	}
	if err := mgr.Add(&httpRunnable{addr: e.Addr, handler: srv, log: o.Log.WithName("extension")}); err != nil {
		return nil, err
	}
	return srv, nil
}

// extensionLinks mints a warning's extension links on srv.
func extensionLinks(srv *extension.Server) func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error) {
	return func(k lifecycle.Key, deadline, expires time.Time) ([]lifecycle.NoticeLink, error) {
		ls, err := srv.Links(k, deadline, expires)
		out := make([]lifecycle.NoticeLink, 0, len(ls))
		for _, l := range ls {
			out = append(out, lifecycle.NoticeLink{Label: "Extend by " + l.Period, URL: l.URL})
		}
		return out, err
	}
}

// httpRunnable serves handler on addr on every replica until the manager stops.
type httpRunnable struct {
	addr    string
	handler http.Handler
	log     logr.Logger
}

func (h *httpRunnable) NeedLeaderElection() bool { return false }

func (h *httpRunnable) Start(ctx context.Context) error {
	srv := &http.Server{Addr: h.addr, Handler: h.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	h.log.Info("serving extension links", "addr", h.addr)
	select {
	case <-ctx.Done():
		// ctx is done; the shutdown gets its own few seconds for requests in flight.
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	case err := <-errc:
		return fmt.Errorf("extension server on %s: %w", h.addr, err)
	}
}
