package app

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/egress"
	"github.com/kustos-dev/kustos/internal/extension"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/objcache"
)

// InactivityOptions configure the inactivity detector (activity from Prometheus, alerts, then a
// pause or a deletion).
type InactivityOptions struct {
	// Enabled is --enable-inactivity.
	Enabled bool
	// Kinds are --inactivity-kinds: the kinds of the targets (read as unstructured objects,
	// cached with only the fields the detector reads).
	Kinds []schema.GroupVersionKind
	// Settings: --inactivity-timeout, --max-alerts, --notification-interval,
	// --inactivity-check-interval, --inactivity-persistent-default, --inactivity-pause-field,
	// --probe-failures and the owners file. Mail is derived.
	Settings inactivity.Settings
	// Sources are the activity sources (--inactivity-config, or the defaults).
	Sources []activity.Compiled
	// Prometheus is --prometheus-url, --prometheus-bearer-token-file and --prometheus-ca-file;
	// API, when set, is asked instead (tests count queries).
	Prometheus activity.Access
	API        activity.Querier
	// Lookback is --activity-lookback (how far the first check looks back: Prometheus's
	// retention); MinStep --activity-min-step; QueryTimeout --activity-query-timeout.
	Lookback, MinStep, QueryTimeout time.Duration
	// TemplateRef is --template-ref-field; TemplateKind --template-kind.
	TemplateRef  []string
	TemplateKind schema.GroupVersionKind
	// ProbeInterval and ProbeTimeout are --probe-interval and --probe-timeout.
	ProbeInterval, ProbeTimeout time.Duration
	// KeepPeriods are --inactivity-keep-periods, each at most KeepMax (--inactivity-keep-max):
	// the keep links of every alert, when the extension server runs.
	KeepPeriods []string
	KeepMax     time.Duration
}

// DefaultInactivityOptions are the flags' defaults.
func DefaultInactivityOptions() InactivityOptions {
	return InactivityOptions{Settings: inactivity.DefaultSettings(), Lookback: 14 * 24 * time.Hour, MinStep: time.Minute,
		QueryTimeout: 30 * time.Second, ProbeInterval: time.Minute, ProbeTimeout: 5 * time.Second,
		KeepPeriods: []string{"1d", "3d", "1w"}, KeepMax: 14 * 24 * time.Hour}
}

func (i InactivityOptions) validate() error {
	if !i.Enabled {
		return nil
	}
	if i.API == nil {
		if i.Prometheus.URL == "" {
			return fmt.Errorf("--enable-inactivity needs --prometheus-url: activity comes from Prometheus")
		}
		if err := i.Prometheus.Validate(); err != nil {
			return err
		}
	}
	if _, err := keeper(i, nil); err != nil {
		return err
	}
	s := i.Settings
	switch {
	case len(i.Sources) == 0:
		return fmt.Errorf("--inactivity-config: no activity sources")
	case len(i.Kinds) == 0:
		return fmt.Errorf("--inactivity-kinds: no kinds")
	case s.Timeout < 0:
		return fmt.Errorf("--inactivity-timeout=%s: must not be negative", lifecycle.FormatDuration(s.Timeout))
	case s.MaxAlerts < 0 || s.MaxAlerts > 100:
		return fmt.Errorf("--max-alerts=%d: want 0 to 100", s.MaxAlerts)
	case s.NotificationInterval <= 0:
		return fmt.Errorf("--notification-interval=%s: must be positive (the time between two alerts)", lifecycle.FormatDuration(s.NotificationInterval))
	case s.CheckInterval < time.Second:
		return fmt.Errorf("--inactivity-check-interval=%s: at least 1s (every check queries Prometheus once per source)", lifecycle.FormatDuration(s.CheckInterval))
	case i.Lookback < s.CheckInterval:
		return fmt.Errorf("--activity-lookback=%s: at least --inactivity-check-interval (%s)", lifecycle.FormatDuration(i.Lookback), lifecycle.FormatDuration(s.CheckInterval))
	case i.MinStep < time.Second:
		return fmt.Errorf("--activity-min-step=%s: at least 1s", lifecycle.FormatDuration(i.MinStep))
	case s.ProbeFailures < 1:
		return fmt.Errorf("--probe-failures=%d: at least 1", s.ProbeFailures)
	case i.ProbeInterval < time.Second || i.ProbeTimeout <= 0:
		return fmt.Errorf("--probe-interval=%s, --probe-timeout=%s: the interval at least 1s, the timeout positive", lifecycle.FormatDuration(i.ProbeInterval), lifecycle.FormatDuration(i.ProbeTimeout))
	case len(i.TemplateRef) > 0 && i.TemplateKind.Kind == "":
		return fmt.Errorf("--template-ref-field=%s needs --template-kind, the kind of the object it names", lifecycle.PathString(i.TemplateRef))
	}
	return nil
}

// inactivityWatches is what the inactivity detector adds to the manager's cache: metadata it
// reads, and its targets trimmed to the fields it reads, but for the kinds the Cleaners'
// target cache holds (plan.HeldWhole).
func inactivityWatches(o Options, plan objcache.TargetPlan) []lifecycle.Watches {
	if !o.Inactivity.Enabled {
		return nil
	}
	return []lifecycle.Watches{inactivity.Watches(plan.InManager(o.Inactivity.Kinds), o.Inactivity.Settings.Pause, o.Inactivity.TemplateRef)}
}

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
	pl.Notifier = nt.notifier
	settings := in.Settings
	settings.Mail = nt.mail != nil
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
	reading := func(c client.Reader) (client.Client, error) {
		cl, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			Cache: &client.CacheOptions{Reader: c, Unstructured: true}})
		if err != nil {
			return nil, fmt.Errorf("creating the inactivity detector's client: %w", err)
		}
		return cl, nil
	}
	objects, err := reading(mgr.GetCache())
	if err != nil {
		return err
	}
	var heldObjects client.Client
	held := sh.plan.HeldWhole
	if len(held) > 0 {
		if heldObjects, err = reading(targets); err != nil {
			return err
		}
	}
	// The probe URL is a tenant's: the egress client refuses destinations outside
	// --allowed-destinations and follows no redirect (an exam endpoint answers itself).
	guard := &egress.Guard{Policy: o.AllowedDestinations, Detector: inactivity.DetectorName, Log: o.Log.WithName("egress")}
	prober := inactivity.HTTPProber{Client: guard.Client(in.ProbeTimeout), Log: o.Log.WithName("probe")}
	for _, k := range in.Kinds {
		ch := make(chan inactivity.Checked, 1)
		loop.Notify = append(loop.Notify, ch)
		r := &inactivity.Reconciler{
			Objects: objects, Meta: mgr.GetClient(), Pipeline: pl, Reporter: sh.recorder, Scope: o.scope, Kind: k, Settings: settings,
			Sources: in.Sources, Tracker: tracker, TemplateRef: in.TemplateRef, TemplateKind: in.TemplateKind,
			Prober: prober, ProbeInterval: in.ProbeInterval, AutoMerge: o.Mode == ModePR && o.PR.AutoMerge,
			Grouping: o.PR.GroupingFor(inactivity.DetectorName), GroupWindow: o.PR.GroupWindow,
			Checked: ch, KeepLinks: nt.keepLinks, Now: o.Now, Log: o.Log.WithName("inactivity"),
		}
		if nt.resumeLinks != nil {
			// A resume its owner asks for is looked at at once.
			r.ResumeLinks, r.LeaseTrigger = nt.resumeLinks, extension.ResumeRecorded
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
