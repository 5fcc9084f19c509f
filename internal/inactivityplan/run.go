package inactivityplan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/manifest"
)

// Exit codes of Run.
const (
	ExitOK    = manifest.ExitOK
	ExitError = manifest.ExitError
	ExitUsage = manifest.ExitUsage
)

// The values of --mode, as `kustos run` takes them.
const (
	modeObserve = "observe"
	modePR      = "pr"
	modeDirect  = "direct"
)

const usageText = `Usage: kustos inactivity plan -f FILE [-f FILE]... --prometheus-url URL [--now RFC3339] [flags]

Asks Prometheus once per activity source, as the controller's first check does, then decides
offline, with the controller's code, what the inactivity detector does next to every target in
the input, and prints one JSON object per target per line, sorted by key:

  {"key":"inactivity/Deployment.apps/lab/vm-1","target":"Deployment.apps/lab/vm-1",
   "lastActivity":T|null,"sources":{"nginx":"ok"|"unavailable",...},"alertsSent":N,
   "next":"alert"|"pause"|"delete"|"none"|"unknown","at":T|null,"problems":[...]}

T is an RFC 3339 time in UTC.
  target        Kind[.group]/namespace/name
  lastActivity  the latest activity known: the sources' within --activity-lookback, or the
                Lease's; null: none
  sources       each activity source: ok, or unavailable (it is not collecting, or Prometheus
                could not be asked; problems says which)
  alertsSent    alerts already sent about the current idle period, per the Lease (before this
                decision)
  next          alert: an alert goes out at "at" (at = --now: it is due now); pause, delete:
                the target is paused or deleted at "at" (at = --now: it is due now; in observe
                mode an InactivityDue Event is all that happens); none: nothing is scheduled
                (opted out, a timeout of never, already paused, already decided, or metadata
                that cannot be used); unknown: a source is not collecting or Prometheus could
                not be asked, so nothing is declared inactive
  at            when next happens; null for none and unknown
  problems      metadata that cannot be used, unreadable state, and why the activity is
                unknown; left out when there are none

Targets are the objects of --inactivity-kinds (matched by group and kind). A Namespace in the
input gives the namespace metadata of the objects in it; an object whose Namespace is not in
the input is decided on its own (and its template's) metadata. With --template-ref-field, the
objects of --template-kind in the input are the templates targets name. Objects without
metadata.namespace are in default; objects being deleted, or in a Namespace being deleted, are
left out, as the controller leaves them. Other kinds are ignored, except Leases: Kustos's state
Leases (labelled app.kubernetes.io/managed-by=kustos) give each target its state, as in

  kubectl get deploy,sts,ns -A -o yaml >objects.yaml
  kubectl get leases -n kustos-system -l app.kubernetes.io/managed-by=kustos -o yaml >leases.yaml

A Lease's kustos.io/key names the target's key and its bag.kustos.io/ annotations are the state
(last activity, alerts sent, paused). A target without a Lease is decided as never alerted.
Exam endpoints (kustos.io/probe-url) are not probed.

Flags:
  -f, --filename FILE               read FILE, or - for stdin; repeatable (default -)
  --prometheus-url URL              the Prometheus server the sources are asked (required;
                                    basic auth: https://user:password@host)
  --prometheus-bearer-token-file F  a file whose content goes as a bearer token with each query
  --prometheus-ca-file F            PEM file of the CA that signs an https Prometheus's certificate
  --now T                           decide, and ask Prometheus, as of this RFC 3339 time
                                    (default: now)
  --mode MODE                       observe, pr or direct, as kustos run (default pr); the
                                    schedule is the same, only how a pause or deletion is
                                    carried out differs
  --inactivity-kinds LIST           as kustos run: group/version/Kind, comma-separated
                                    (default apps/v1/Deployment,apps/v1/StatefulSet)
  --inactivity-config FILE          YAML list of activity sources, as kustos run (default: the
                                    built-in nginx and bastion sources)
  --inactivity-timeout D            timeout of targets whose object, template and namespace
                                    name none (90m, 7d, 2w; default: none, they never time out)
  --max-alerts N                    alerts before the pause or deletion (default 3)
  --notification-interval D         time between two alerts, and between the last alert and
                                    the pause or deletion (default 24h)
  --inactivity-persistent-default   targets without kustos.io/persistent are paused (true) or
                                    deleted (false) (default true)
  --inactivity-pause-field PATH=V   how targets are paused (default: spec.replicas to zero)
  --template-ref-field PATH         field of a target naming its template object
  --template-kind GVK               group/version/Kind of the template objects
  --probe-failures N                consecutive failed probes that end an exam target (default 3)
  --activity-lookback D             how far back Prometheus is asked (default 14d)
  --activity-min-step D             finest query step (default 1m)
  --activity-query-timeout D        timeout of one Prometheus query (default 30s)

Exit status: 0 on success, also when metadata cannot be used (a warning on stderr names
FILE:LINE, the key and the value, and the target is printed as the controller treats it) and
when a source is unavailable or Prometheus cannot be asked (a warning on stderr names the
source; its targets are unknown); 1 when the output cannot be written; 2 for bad flags, an
unusable sources file or unusable input: unreadable cmd.Files, an object given twice, a target
without metadata.creationTimestamp, a state Lease whose times do not parse (FILE:LINE says what
is wrong).
`

// Run executes `kustos inactivity plan` with args (after "plan"). It returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := manifest.NewCommand("kustos inactivity plan", usageText, stderr)
	fs := cmd.Flags
	var access activity.Access
	fs.StringVar(&access.URL, "prometheus-url", "", "URL of the Prometheus server")
	fs.StringVar(&access.BearerTokenFile, "prometheus-bearer-token-file", "", "file holding a bearer token for Prometheus")
	fs.StringVar(&access.CAFile, "prometheus-ca-file", "", "PEM file of the CA of an https Prometheus")
	mode := fs.String("mode", modePR, "observe, pr or direct")
	kindsFlag := fs.String("inactivity-kinds", expiry.DefaultLifecycleKinds, "group/version/Kind of the targets")
	configFile := fs.String("inactivity-config", "", "YAML list of activity sources")
	defaults := app.DefaultInactivityOptions()
	settings := defaults.Settings
	fs.Var(lifecycle.DurationFlag{D: &settings.Timeout, AllowNever: true}, "inactivity-timeout", "timeout of targets that name none")
	fs.IntVar(&settings.MaxAlerts, "max-alerts", settings.MaxAlerts, "alerts before the pause or deletion")
	fs.Var(lifecycle.DurationFlag{D: &settings.NotificationInterval}, "notification-interval", "time between two alerts")
	fs.BoolVar(&settings.PersistentDefault, "inactivity-persistent-default", settings.PersistentDefault, "pause (true) or delete (false) targets that say nothing")
	pauseField := fs.String("inactivity-pause-field", "", "how targets are paused: path=value")
	templateRef := fs.String("template-ref-field", "", "field of a target naming its template object")
	templateKind := fs.String("template-kind", "", "group/version/Kind of the template objects")
	fs.IntVar(&settings.ProbeFailures, "probe-failures", settings.ProbeFailures, "consecutive failed probes that end an exam target")
	lookback := defaults.Lookback
	fs.Var(lifecycle.DurationFlag{D: &lookback}, "activity-lookback", "how far back Prometheus is asked")
	fs.DurationVar(&defaults.MinStep, "activity-min-step", defaults.MinStep, "finest query step")
	fs.DurationVar(&defaults.QueryTimeout, "activity-query-timeout", defaults.QueryTimeout, "timeout of one Prometheus query")
	now, code, ok := cmd.Parse(args)
	if !ok {
		return code
	}
	fail := cmd.Fail
	switch *mode {
	case modeObserve, modePR, modeDirect:
	default:
		return fail("--mode=%q: want %q, %q or %q", *mode, modeObserve, modePR, modeDirect)
	}
	settings.Acts = *mode != modeObserve
	if err := access.Validate(); err != nil {
		return fail("%v", err)
	}
	// The bounds kustos run puts on the same flags.
	switch {
	case settings.MaxAlerts < 0 || settings.MaxAlerts > 100:
		return fail("--max-alerts=%d: want 0 to 100", settings.MaxAlerts)
	case settings.NotificationInterval <= 0:
		return fail("--notification-interval=%s: must be positive (the time between two alerts)", settings.NotificationInterval)
	case settings.ProbeFailures < 1:
		return fail("--probe-failures=%d: at least 1", settings.ProbeFailures)
	case lookback <= 0:
		return fail("--activity-lookback: must be positive (how far back Prometheus is asked)")
	case defaults.MinStep < time.Second:
		return fail("--activity-min-step=%s: at least 1s", defaults.MinStep)
	case defaults.QueryTimeout <= 0:
		return fail("--activity-query-timeout=%s: must be positive", defaults.QueryTimeout)
	}
	kinds, err := expiry.ParseKinds(*kindsFlag)
	if err != nil {
		return fail("--inactivity-kinds: %v", err)
	}
	if len(kinds) == 0 {
		return fail("--inactivity-kinds: no kinds")
	}
	if settings.Pause, err = inactivity.ParsePause(*pauseField); err != nil {
		return fail("--inactivity-pause-field: %v", err)
	}
	ref, err := inactivity.ParseRef(*templateRef)
	if err != nil {
		return fail("--template-ref-field: %v", err)
	}
	o := Options{Now: now, Kinds: kinds, TemplateRef: ref, Settings: settings}
	if *templateKind != "" {
		k, err := expiry.ParseKinds(*templateKind)
		if err != nil || len(k) != 1 {
			return fail("--template-kind=%q: want one group/version/Kind", *templateKind)
		}
		o.TemplateKind = k[0]
	}
	if len(ref) > 0 && o.TemplateKind.Kind == "" {
		return fail("--template-ref-field=%s needs --template-kind, the kind of the object it names", lifecycle.PathString(ref))
	}
	if o.Sources, err = app.LoadInactivitySources(*configFile); err != nil {
		return fail("%v", err)
	}
	if len(cmd.Files) == 0 {
		cmd.Files = manifest.Files{"-"}
	}
	var objs []manifest.Object
	decode := Decoder(kinds, o.TemplateKind)
	for _, arg := range cmd.Files {
		name, data, err := manifest.ReadInput(arg, stdin)
		if err == nil {
			var more []manifest.Object
			more, err = manifest.Load(name, data, decode)
			objs = append(objs, more...)
		}
		if err != nil {
			return fail("%v", err)
		}
	}

	input, err := Read(objs, kinds, o.TemplateKind)
	if err != nil {
		return fail("%v", err)
	}

	// One check, as the controller's first: one query per source for every target, over the
	// lookback.
	api, err := activity.NewAPI(access)
	if err != nil {
		return fail("%v", err)
	}
	checker := &activity.Checker{API: api, Sources: o.Sources, MinStep: defaults.MinStep, Timeout: defaults.QueryTimeout}
	o.Tracker = &activity.Tracker{Lookback: lookback}
	o.Check = checker.Check(context.Background(), now, lookback)
	o.Tracker.Observe(o.Check)

	lines, warnings := input.Plan(o)
	for _, s := range o.Check.Sources {
		if s.Status != activity.StatusOK {
			fmt.Fprintf(stderr, "kustos inactivity plan: warning: activity source %s: %s: %s; no target is declared inactive (next: unknown)\n",
				s.Name, s.Status, s.Detail)
			for _, w := range s.Warnings {
				fmt.Fprintf(stderr, "kustos inactivity plan: warning: activity source %s: Prometheus warned: %s\n", s.Name, w)
			}
		}
		if s.Invalid > 0 {
			fmt.Fprintf(stderr, "kustos inactivity plan: warning: activity source %s: %d result series skipped: no target labels (%s, %s) or no time as value\n",
				s.Name, s.Invalid, sourceLabels(o.Sources, s.Name).Namespace, sourceLabels(o.Sources, s.Name).Name)
		}
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "kustos inactivity plan: warning: %s\n", w)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false) // problems quote values such as "Ana <ana@example.com>" readably
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			fmt.Fprintf(stderr, "kustos inactivity plan: writing the output: %v\n", err)
			return ExitError
		}
	}
	return ExitOK
}

// sourceLabels are the result labels of the source named name.
func sourceLabels(sources []activity.Compiled, name string) activity.ResultLabels {
	for _, s := range sources {
		if s.Name == name {
			return s.Labels
		}
	}
	return activity.ResultLabels{}
}
