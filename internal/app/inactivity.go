package app

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/objcache"
	"github.com/kustos-dev/kustos/internal/state"
)

// setupInactivity adds the inactivity detector: the check loop (one Prometheus query per source
// per check, on the leader) and one controller per target kind, on their own pipeline (Keys
// inactivity/…). In PR mode a target no manifest defines is paused or deleted directly.
func setupInactivity(sh *shared) error {
	o, mgr, live, nt, targets := sh.o, sh.mgr, sh.live, sh.notifiers, sh.targets
	in := o.Inactivity
	pl := sh.pipelineFor(inactivity.DetectorName, inactivity.Vocabulary(), true)
	if o.Mode != ModeObserve {
		// An exam's submission before its termination (--enable-submission).
		var err error
		if pl.Actuator, err = gated(o, mgr, live, pl.Reporter, pl.Actuator); err != nil {
			return err
		}
	}
	pl.Notifier = nt.Notifier
	settings := in.Settings
	settings.Mail = nt.Mail != nil
	if settings.Owners == nil {
		settings.Owners = o.Expiry.Settings.Owners // one owners file for both detectors
	}

	api := in.API
	if api == nil {
		var err error
		if api, err = activity.NewAPI(in.Prometheus); err != nil {
			return err
		}
	}
	tracker := &activity.Tracker{Lookback: in.Lookback}
	loop := &inactivity.CheckLoop{
		Checker:  &activity.Checker{API: api, Sources: in.Sources, MinStep: in.MinStep, Timeout: in.QueryTimeout},
		Tracker:  tracker,
		Interval: settings.CheckInterval,
		Now:      o.Now,
		Log:      o.Log.WithName("activity"),
	}
	// Targets as unstructured objects, cached with only what the detector reads (their
	// metadata, replicas, pause field and template reference: inactivity.TargetFields). With
	// Cleaners on, the kinds objcache's TargetPlan holds whole live in the Cleaners' target cache, their fields
	// kept in every copy (newTargetCache): a Deployment a Cleaner, the expiry and this
	// detector read is held once. The others (Namespaces, a kind the manager's cache filters)
	// stay in the manager's cache.
	objects, err := objcache.UnstructuredClient(mgr.GetConfig(), mgr, mgr.GetCache())
	var heldObjects client.Client
	held := sh.plan.HeldWhole
	if err == nil && len(held) > 0 {
		heldObjects, err = objcache.UnstructuredClient(mgr.GetConfig(), mgr, targets)
	}
	if err != nil {
		return fmt.Errorf("creating the inactivity detector's client: %w", err)
	}
	// The probe URL is a tenant's: the egress client refuses destinations outside
	// --allowed-destinations and follows no redirect (an exam endpoint answers itself).
	guard := &egress.Guard{Policy: o.AllowedDestinations, Detector: inactivity.DetectorName, Log: o.Log.WithName("egress")}
	prober := inactivity.HTTPProber{Client: guard.Client(in.ProbeTimeout), Log: o.Log.WithName("probe")}
	// Whether a target no longer watched still has a Lease (a pause proposed for it): from the cache.
	cachedState := &state.Store{Reader: mgr.GetClient(), Namespace: o.StateNamespace}
	if sh.base.Confirm != nil {
		sh.base.Confirm.Register(inactivity.DetectorName, inactivity.TargetReader(mgr.GetAPIReader(), in.Kinds))
	}
	for _, k := range in.Kinds {
		ch := make(chan inactivity.Checked, 1)
		loop.Notify = append(loop.Notify, ch)
		r := &inactivity.Reconciler{
			Objects: objects, Meta: mgr.GetClient(), Pipeline: pl, Reporter: sh.recorder, Scope: o.scope, Kind: k, Settings: settings,
			Sources: in.Sources, Tracker: tracker, TemplateRef: in.TemplateRef, TemplateKind: in.TemplateKind,
			Prober: prober, ProbeInterval: in.ProbeInterval, AutoMerge: o.Mode == ModePR && o.PR.AutoMerge,
			Grouping: o.PR.GroupingFor(inactivity.DetectorName), GroupWindow: o.PR.GroupWindow,
			Checked: ch, KeepLinks: nt.KeepLinks, Now: o.Now, Log: o.Log.WithName("inactivity"),
			HasState: cachedState.Has,
		}
		if nt.ResumeLinks != nil {
			// A resume its owner asks for is looked at at once.
			r.ResumeLinks, r.LeaseTrigger = nt.ResumeLinks, extension.ResumeRecorded
		}
		if held[k] {
			r.Objects, r.Targets = heldObjects, targets
		}
		if err := r.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
			return fmt.Errorf("setting up the inactivity detector for %s: %w", k, err)
		}
	}
	return mgr.Add(loop)
}
