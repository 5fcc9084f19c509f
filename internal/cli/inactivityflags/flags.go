package inactivityflags

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Flags holds the inactivity detector's flags that run and inactivity plan share.
type Flags struct {
	Options      inactivity.Options
	Kinds        []schema.GroupVersionKind
	ConfigFile   string
	pauseField   string
	templateRef  string
	templateKind string
	keepPeriods  string
}

// AddFlags defines the inactivity flags the decision and the activity check read. --max-alerts
// and the rest write into i.Options, which starts as inactivity.DefaultOptions. The
// notification interval is NotificationInterval's: the caller defines it once.
func (i *Flags) AddFlags(fs *pflag.FlagSet) {
	i.Options = inactivity.DefaultOptions()
	o := &i.Options
	cli.InGroup(fs, cli.GroupPrometheus, func() {
		fs.StringVar(&o.Prometheus.URL, "prometheus-url", "", "URL of the Prometheus server the activity sources, and the quotas' usage history (kube-state-metrics' kube_resourcequota), are queried from (basic auth: https://user:password@host); without it, each quota's state Lease keeps its daily peaks")
		fs.StringVar(&o.Prometheus.BearerTokenFile, "prometheus-bearer-token-file", "", "file whose content is sent as a bearer token with every Prometheus query (read per request: a rotating service account token works)")
		fs.StringVar(&o.Prometheus.CAFile, "prometheus-ca-file", "", "PEM file of the CA that signs the https Prometheus server's certificate (reloaded when it changes)")
	})
	cli.InGroup(fs, cli.GroupInactivity, func() {
		cli.Kinds(fs, &i.Kinds, "inactivity-kinds", expiry.DefaultLifecycleKinds,
			"comma-separated group/version/Kind of the targets (cached with only what the detector reads: metadata, replicas, pause field, template reference)")
		fs.StringVar(&i.ConfigFile, "inactivity-config", "", "YAML file listing the activity sources (name, available, data, ...); empty: ingress-nginx requests and the bastion's bastion_ssh_connections")
		cli.Duration(fs, &o.Settings.Timeout, "inactivity-timeout", true, "timeout of targets whose object, template and namespace name none (90m, 7d, 2w); never or empty: they never time out")
		fs.IntVar(&o.Settings.MaxAlerts, "max-alerts", o.Settings.MaxAlerts, "alerts before an idle target is paused or deleted (kustos.io/max-alerts overrides); 0 acts at once")
		fs.BoolVar(&o.Settings.PersistentDefault, "inactivity-persistent-default", o.Settings.PersistentDefault, "targets without kustos.io/persistent are paused (true) or deleted (false)")
		fs.StringVar(&i.pauseField, "inactivity-pause-field", "", "how targets are paused: empty scales spec.replicas to zero; path=value sets a field (spec.running=false)")
		fs.StringVar(&i.templateRef, "template-ref-field", "", "field of a target naming its template object, whose kustos.io/ annotations apply (spec.template)")
		fs.StringVar(&i.templateKind, "template-kind", "", "group/version/Kind of the objects --template-ref-field names")
		fs.StringVar(&i.keepPeriods, "inactivity-keep-periods", strings.Join(o.KeepPeriods, ","), "the keep links every alert carries when the extension server runs (--extension-addr), comma-separated durations: the owner keeps the target for one of them, and it is not alerted, paused or deleted before the end; empty: none")
		cli.Duration(fs, &o.KeepMax, "inactivity-keep-max", false, "the longest keep honoured, whatever a link says")
		fs.IntVar(&o.Settings.ProbeFailures, "probe-failures", o.Settings.ProbeFailures, "consecutive failed probes of kustos.io/probe-url that end an exam target")
		cli.Duration(fs, &o.Lookback, "activity-lookback", false, "how far back the first check looks (set it to Prometheus's retention); idle time before that is never counted")
		cli.Duration(fs, &o.MinStep, "activity-min-step", false, "finest query step; coarser when the window needs it (step >= window/11000)")
		cli.Duration(fs, &o.QueryTimeout, "activity-query-timeout", false, "timeout of one Prometheus query")
	})
}

// Finish reads the flags that need more than their own value into i.Options: the kinds, the
// pause field, the template reference and kind, and the activity sources (--inactivity-config).
func (i *Flags) Finish() error {
	o := &i.Options
	o.Kinds = i.Kinds
	o.KeepPeriods = nil
	for _, p := range strings.Split(i.keepPeriods, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.KeepPeriods = append(o.KeepPeriods, p)
		}
	}
	if len(o.Kinds) == 0 {
		return fmt.Errorf("--inactivity-kinds: no kinds")
	}
	var err error
	if o.Settings.Pause, err = inactivity.ParsePause(i.pauseField); err != nil {
		return fmt.Errorf("--inactivity-pause-field: %w", err)
	}
	if o.TemplateRef, err = inactivity.ParseRef(i.templateRef); err != nil {
		return fmt.Errorf("--template-ref-field: %w", err)
	}
	if i.templateKind != "" {
		kinds, err := expiry.ParseKinds(i.templateKind)
		if err != nil || len(kinds) != 1 {
			return fmt.Errorf("--template-kind=%q: want one group/version/Kind", i.templateKind)
		}
		o.TemplateKind = kinds[0]
	}
	if len(o.TemplateRef) > 0 && o.TemplateKind.Kind == "" {
		return fmt.Errorf("--template-ref-field=%s needs --template-kind, the kind of the object it names", lifecycle.PathString(o.TemplateRef))
	}
	if o.Sources, err = loadSources(i.ConfigFile); err != nil {
		return err
	}
	return nil
}

// loadSources reads --inactivity-config ("" : the defaults).
func loadSources(file string) ([]activity.Compiled, error) {
	if file == "" {
		return activity.Compile(activity.DefaultSources())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--inactivity-config: %w", err)
	}
	srcs, err := activity.LoadConfig(data)
	if err != nil {
		return nil, fmt.Errorf("--inactivity-config=%s: %w", file, err)
	}
	return srcs, nil
}
