package inactivity

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Options configure the inactivity detector (activity from Prometheus, alerts, then a pause or
// a deletion); every field is a flag of `kustos run`. The owners' channels it notifies through,
// and the extension server behind its keep links, are notify's and extension's.
type Options struct {
	// Enabled is --enable-inactivity.
	Enabled bool
	// Kinds are --inactivity-kinds: the kinds of the targets (read as unstructured objects,
	// cached with only the fields the detector reads).
	Kinds []schema.GroupVersionKind
	// Settings: --inactivity-timeout, --max-alerts, --notification-interval,
	// --inactivity-check-interval, --inactivity-persistent-default, --inactivity-pause-field,
	// --probe-failures and the owners file. Mail is derived.
	Settings Settings
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

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{Settings: DefaultSettings(), Lookback: 14 * 24 * time.Hour, MinStep: time.Minute,
		QueryTimeout: 30 * time.Second, ProbeInterval: time.Minute, ProbeTimeout: 5 * time.Second,
		KeepPeriods: []string{"1d", "3d", "1w"}, KeepMax: 14 * 24 * time.Hour}
}

// Validate reports the first flag that cannot work, when the detector is on.
func (i Options) Validate() error {
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
	if len(i.KeepPeriods) > 0 { // none (options built without DefaultOptions): no keep links
		if _, err := ParseKeepPeriods(i.KeepPeriods, i.KeepMax); err != nil {
			return err
		}
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

// CacheWatches are what the detector adds to the manager's caches when it is on: metadata it
// reads, and its targets of kinds trimmed to the fields it reads (its Kinds but those another
// cache holds whole).
func (i Options) CacheWatches(kinds []schema.GroupVersionKind) []lifecycle.Watches {
	if !i.Enabled {
		return nil
	}
	return []lifecycle.Watches{Watches(kinds, i.Settings.Pause, i.TemplateRef)}
}

// KeepPeriod is one keep offered in an alert's links: its name as written (3d) and its length.
type KeepPeriod struct {
	Name string
	D    time.Duration
}

// ParseKeepPeriods parses --inactivity-keep-periods ("1d,3d,1w") and checks them against
// longest (--inactivity-keep-max). The extension server, which serves the keep links, parses
// them with it too.
func ParseKeepPeriods(list []string, longest time.Duration) ([]KeepPeriod, error) {
	var out []KeepPeriod
	for _, p := range list {
		d, err := lifecycle.ParseDuration(p)
		if err != nil {
			return nil, fmt.Errorf("--inactivity-keep-periods: %w", err)
		}
		if d <= 0 || d > longest {
			return nil, fmt.Errorf("keep period %s is not within (0, %s] (--inactivity-keep-max)", p, longest)
		}
		out = append(out, KeepPeriod{Name: p, D: d})
	}
	if len(out) == 0 {
		return nil, errors.New("no keep periods (--inactivity-keep-periods)")
	}
	return out, nil
}
