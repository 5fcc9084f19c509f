package app

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/api/v1alpha1"
	"github.com/kustos-dev/kustos/internal/actuate/allow"
	"github.com/kustos-dev/kustos/internal/actuate/cloudevent"
	"github.com/kustos-dev/kustos/internal/actuate/helmrelease"
	"github.com/kustos-dev/kustos/internal/authorship"
	"github.com/kustos-dev/kustos/internal/detect/ephemeral"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/objcache"
	"github.com/kustos-dev/kustos/internal/state"
)

// setupCleaners adds the Cleaner detector: its own pipeline (Keys ephemeral/…). In PR mode, a
// target that no manifest in the repository defines is deleted directly (with the evaluated
// version as precondition, and never when a GitOps tool's labels or annotations say it manages
// it).
func setupCleaners(ctx context.Context, sh *shared) error {
	o, mgr, live, signer, targets := sh.o, sh.mgr, sh.live, sh.signer, sh.targets
	if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "Cleaner"}, v1alpha1.GroupVersion.Version); err != nil {
		return fmt.Errorf("--enable-cleaners: the Cleaner CRD (kustos.io/v1alpha1) is not served: install it (the chart does, crds.install) or pass --enable-cleaners=false: %w", err)
	}
	// People's name for the detector (metrics, logs); its Keys keep ephemeral.DetectorName.
	pl := sh.pipelineFor(ephemeral.Name, ephemeral.Vocabulary(), true)
	// The manager's client speaks protobuf, which custom resources do not: Cleaners are read
	// from the same cache and written as JSON.
	jsonCfg := rest.CopyConfig(mgr.GetConfig())
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	// Unstructured too: the targets (any kind, read as unstructured) come from the informers the
	// controller starts for their watches; without it every look would GET them from the API
	// server (bench/cleaners: 3 GETs per evaluation).
	c, err := objcache.UnstructuredClient(jsonCfg, mgr, mgr.GetCache())
	if err != nil {
		return err
	}
	// A sink is a tenant's URL: the egress client refuses destinations outside
	// --allowed-destinations and follows no redirect.
	guard := &egress.Guard{Policy: o.AllowedDestinations, Detector: ephemeral.Name, Log: o.Log.WithName("egress")}
	sink := &cloudevent.Sender{Source: cloudevent.DefaultSource, HTTP: guard.Client(cloudevent.DefaultHTTPTimeout)}
	uninstaller := &helmrelease.Uninstaller{Config: jsonCfg, Log: o.Log.WithName("helm")}
	r := &ephemeral.Reconciler{
		Client:      c,
		Live:        mgr.GetAPIReader(),
		Proposing:   o.Mode == ModePR,
		Access:      &authorship.SelfReviewer{Client: live, TTL: time.Minute, Now: o.Now},
		Pipeline:    pl,
		Reporter:    sh.recorder,
		Scope:       o.scope,
		Observe:     o.Mode == ModeObserve,
		AutoMerge:   o.Mode == ModePR && o.PR.AutoMerge,
		GroupWindow: o.PR.GroupWindow,
		Releases:    uninstaller,
		Policy:      o.Cleaners.Policy(),
		Now:         o.Now,
		Log:         o.Log.WithName("cleaner"),

		ReleaseTouches: uninstaller,
		TargetCache:    targets.Cache,
		SharedMetadata: sh.plan.SharedMetadata,
		Fields:         targets.fields,
	}
	// Every effect of a Cleaner is a Change: observer mode reports them all (the pipeline's
	// observe actuator); otherwise its CloudEvent is sent, its plain helm releases uninstalled,
	// and the rest goes on to the mode's actuator (proposed, or deleted directly).
	// A release is uninstalled on its Cleaner's author's behalf: the actuator asks the author's
	// reviews again on the revision it acts on.
	var authorAccess *authorship.Reviewer
	if signer != nil {
		authorAccess = &authorship.Reviewer{Client: live, Now: o.Now}
	}
	if o.Mode != ModeObserve {
		// An uninstall is a deletion: --allow=cleaner:delete:helm.sh/releases opts in.
		releases := helmrelease.Actuator{Releases: uninstaller, RequireOnBehalf: true, Next: pl.Actuator}
		if authorAccess != nil {
			releases.Access = authorAccess
		}
		pl.Actuator = cloudevent.Actuator{Sender: sink, Current: r, Next: allow.ReleaseRemovals{Allow: o.Allow, Next: releases}}
		// A backup before a release or namespace is removed (--backup).
		var err error
		if pl.Actuator, err = gated(o, mgr, live, pl.Reporter, pl.Actuator); err != nil {
			return err
		}
	}
	if signer != nil {
		r.Authors = authorship.Cleaners{Signer: signer}
		r.AuthorAccess = authorAccess
	} else if o.Mode != ModeObserve {
		o.Log.Info("no --cleaner-author-key-file: no Cleaner's author can be verified, so Cleaners delete nothing")
	}
	return r.SetupWithManager(ctx, mgr, o.MaxConcurrentReconciles)
}

// targetCache holds the objects the Cleaner detector (and, with it, the inactivity detector)
// reads whole: one informer per kind for both, each object trimmed to the union of the fields
// its kind's readers read (ephemeral.FieldRegistry), or as metadata only (kinds no condition
// reads beyond metadata, and every Secret). The manager's cache trims what it holds to what
// the other detectors read and holds only helm's Secrets. The client-side-apply copy of the
// whole object goes (it holds a Secret's data when kubectl applied it), as do managed fields.
// Which kinds it holds from the start is objcache's TargetPlan.
type targetCache struct {
	objcache.Cache
	fields *ephemeral.FieldRegistry
}

// newTargetCache makes the target cache and adds it to mgr, which starts it. The inactivity
// detector's targets are held in it from the start (plan.HeldWhole), with the fields that
// detector reads kept in every copy.
func newTargetCache(mgr ctrl.Manager, o Options, plan objcache.TargetPlan) (*targetCache, error) {
	fields := &ephemeral.FieldRegistry{Strip: objcache.DropUnread}
	for k := range plan.HeldWhole {
		fields.Keep(k, inactivity.TargetFields(o.Inactivity.Settings.Pause, o.Inactivity.TemplateRef))
	}
	// Objects trimmed to the fields read, then packed: held by the ten thousand, a Deployment
	// is about 500 bytes packed and 2,000 as an unstructured object's maps (objcache.Packed).
	c, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform: objcache.PackTransform(fields.Transform)})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return &targetCache{Cache: objcache.Cache{Cache: c, Kinds: plan.HeldWhole}, fields: fields}, nil
}

// addGoneSweeper sweeps the Leases of the per-object detectors (Cleaner targets, expiring
// objects) once their object is gone.
func addGoneSweeper(mgr ctrl.Manager, o Options, store *state.Store, live client.Reader) error {
	detectors := map[string]bool{}
	if o.Cleaners.Enabled {
		detectors[ephemeral.DetectorName] = true
	}
	if o.Expiry.Enabled {
		detectors[expiry.DetectorName] = true
	}
	if len(detectors) == 0 {
		return nil
	}
	return mgr.Add(&state.GoneSweeper{Store: store, Live: live, Mapper: mgr.GetRESTMapper(), Detectors: detectors, Rules: []state.GoneRule{
		{Detector: ephemeral.DetectorName, Kind: schema.GroupKind{Group: ephemeral.CloudEventGroup, Kind: ephemeral.CloudEventKind},
			As: schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "Cleaner"}},
		// The VM crawler sweeps these, once vSphere no longer finds the VM (internal/detect/vsphere).
		{Kind: schema.GroupKind{Group: detectvsphere.Group, Kind: detectvsphere.Kind}, Never: true},
		{Kind: schema.GroupKind{Group: lifecycle.ReleaseGroup, Kind: lifecycle.ReleaseKind}, SecretLabels: func(name string) map[string]string {
			return map[string]string{expiry.HelmOwnerLabel: expiry.HelmOwnerValue, expiry.HelmNameLabel: name}
		}},
	}, Interval: o.LeaseSweepInterval, Grace: o.Cleaners.LeaseGrace, Swept: metrics.LeasesSwept, Now: o.Now, Log: o.Log.WithName("sweep")})
}
