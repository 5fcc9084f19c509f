package main

import (
	"errors"
	"io"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/harness"
)

const (
	stateNamespace = "kustos-bench"
	stopGrace      = 30 * time.Second
)

type options struct {
	harness.Flags

	logLevel                 string
	n, namespaces, scheduled int
	idle, passTimeout, poll  time.Duration
	from, to, timeout        time.Duration
	warningBefore, interval  time.Duration
	farFuture                time.Duration
	verbose                  bool
}

func main() {
	harness.Main(harness.Bench[options]{Name: "expiry", Parse: parseFlags, Run: func(s *harness.Session, o options) harness.Result {
		r := run(s.Ctx, o, s.LogPath, s.Logf)
		table := r.table(o)
		return harness.Result{Err: r.err, Report: render(r, o), Failed: table.Broken(), Missed: table.Missed()}
	}})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := harness.NewFlagSet("expiry", stderr)
	var o options
	o.Register(fs, harness.BinHelp, harness.KeepLogsHelp)
	fs.IntVar(&o.n, "n", 10000, "idle Deployments (replicas 0), each with kustos.io/owner and a kustos.io/expires-at far in the future")
	fs.IntVar(&o.namespaces, "namespaces", 100, "namespaces the idle Deployments are spread over")
	fs.DurationVar(&o.farFuture, "far-future", 30*24*time.Hour, "how far after the start the idle Deployments expire")
	fs.DurationVar(&o.passTimeout, "pass-timeout", 10*time.Minute, "how long Kustos may take to look at every idle Deployment once")
	fs.DurationVar(&o.poll, "poll", 100*time.Millisecond, "how often Kustos's /metrics is read during its initial pass")
	fs.DurationVar(&o.idle, "idle", 30*time.Second, "idle period after the initial pass")
	fs.IntVar(&o.scheduled, "scheduled", 50, "Deployments whose deadline falls during the run, one scheduling sample each")
	fs.DurationVar(&o.from, "from", 15*time.Second, "earliest deadline of a scheduled Deployment, after its creation")
	fs.DurationVar(&o.to, "to", 40*time.Second, "latest such deadline; the group's deadlines are spread evenly in between, on whole seconds")
	fs.DurationVar(&o.warningBefore, "warning-before", 10*time.Second, "Kustos's --expiry-warning-before")
	fs.DurationVar(&o.interval, "interval", 5*time.Second, "Kustos's --notification-interval; below -warning-before, so that ExpiryDue is due at the deadline itself")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the ExpiryDue Events after the last deadline")
	harness.LogLevelFlag(fs, &o.logLevel)
	fs.BoolVar(&o.verbose, "v", false, "print every scheduled Deployment's warning and due lateness")
	if err := o.Parse(fs, args); err != nil {
		return o, err
	}
	whole := func(d time.Duration) bool { return d%time.Second == 0 }
	switch {
	case o.n < 1 || o.namespaces < 1 || o.Workers < 1 || o.scheduled < 1:
		return o, errors.New("-n, -namespaces, -workers and -scheduled must be at least 1")
	case o.idle < 0 || o.timeout <= 0 || o.passTimeout <= 0 || o.poll <= 0:
		return o, errors.New("-idle must not be negative, -timeout, -pass-timeout and -poll must be positive")
	case !whole(o.warningBefore) || !whole(o.interval) || o.interval <= 0 || o.warningBefore <= o.interval:
		// Warned at deadline − warning-before, due at max(deadline, warned + interval): the
		// deadline itself as long as the warning is less than warning-before − interval late.
		return o, errors.New("want whole seconds with 0 < -interval < -warning-before, so that ExpiryDue is due at the deadline")
	case !whole(o.from) || !whole(o.to) || o.from > o.to || o.from < o.warningBefore+3*time.Second:
		// The first warning must come after the whole group exists.
		return o, errors.New("want whole seconds with -warning-before + 3s ≤ -from ≤ -to")
	case o.farFuture < 24*time.Hour:
		return o, errors.New("-far-future must be at least 24h: the idle Deployments must not be warned about during the run")
	}
	return o, nil
}
