package inactivityplan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/cli"
	"github.com/kustos-dev/kustos/internal/cli/inactivityflags"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/manifest"
)

// Exit codes of Run.
const (
	ExitOK    = manifest.ExitOK
	ExitError = manifest.ExitError
	ExitUsage = manifest.ExitUsage
)

const longText = `Asks Prometheus once per activity source, as the controller's first check does, then decides
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

Exit status: 0 on success, also when metadata cannot be used (a warning on stderr names
FILE:LINE, the key and the value, and the target is printed as the controller treats it) and
when a source is unavailable or Prometheus cannot be asked (a warning on stderr names the
source; its targets are unknown); 1 when the output cannot be written; 2 for bad flags, an
unusable sources file or unusable input: unreadable files, an object given twice, a target
without metadata.creationTimestamp, a state Lease whose times do not parse (FILE:LINE says what
is wrong).
`

// name is the command's path.
const name = "kustos inactivity plan"

// Run executes `kustos inactivity plan` with args (after "plan"). It returns the exit code.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.ExecuteAlone(NewCommand(stdin, stdout, stderr), name, args, stdout, stderr)
}

// NewCommand is `kustos inactivity plan`: its flags are run's (--mode, --notification-interval
// and the inactivity flags of package inactivityflags), so both read them alike and with the
// same defaults.
func NewCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := manifest.NewCommand(name, "-f FILE [-f FILE]... --prometheus-url URL [--now RFC3339] [flags]",
		"what the inactivity detector does next to each target (activity from Prometheus), offline", longText, stderr)
	fs := cmd.Flags()
	var mode string
	var f inactivityflags.Flags
	cli.Mode(fs, &mode)
	f.AddFlags(fs)
	cli.NotificationInterval(fs, &f.Options.Settings.NotificationInterval)
	cmd.Run = func(now time.Time) int { return plan(cmd, &f, mode, now, stdin, stdout, stderr) }
	return cmd.Cobra
}

func plan(cmd *manifest.Command, f *inactivityflags.Flags, mode string, now time.Time, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := cmd.Fail
	defaults := f.Options
	settings := defaults.Settings
	lookback := defaults.Lookback
	if err := defaults.Prometheus.Validate(); err != nil {
		return fail("%v", err)
	}
	// The bounds kustos run puts on the same flags.
	switch {
	case settings.MaxAlerts < 0 || settings.MaxAlerts > 100:
		return fail("--max-alerts=%d: want 0 to 100", settings.MaxAlerts)
	case settings.NotificationInterval <= 0:
		return fail("--notification-interval=%s: must be positive (the time between two alerts)", lifecycle.FormatDuration(settings.NotificationInterval))
	case settings.ProbeFailures < 1:
		return fail("--probe-failures=%d: at least 1", settings.ProbeFailures)
	case lookback <= 0:
		return fail("--activity-lookback: must be positive (how far back Prometheus is asked)")
	case defaults.MinStep < time.Second:
		return fail("--activity-min-step=%s: at least 1s", lifecycle.FormatDuration(defaults.MinStep))
	case defaults.QueryTimeout <= 0:
		return fail("--activity-query-timeout=%s: must be positive", lifecycle.FormatDuration(defaults.QueryTimeout))
	}
	if err := f.Finish(); err != nil {
		return fail("%v", err)
	}
	kinds := f.Options.Kinds
	settings.Pause = f.Options.Settings.Pause
	o := Options{Now: now, Kinds: kinds, TemplateRef: f.Options.TemplateRef, TemplateKind: f.Options.TemplateKind, Settings: settings, Sources: f.Options.Sources}
	objs, err := cmd.Load(stdin, Decoder(kinds, o.TemplateKind))
	if err != nil {
		return fail("%v", err)
	}

	input, err := Read(objs, kinds, o.TemplateKind)
	if err != nil {
		return fail("%v", err)
	}

	// One check, as the controller's first: one query per source for every target, over the
	// lookback.
	api, err := activity.NewAPI(defaults.Prometheus)
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
