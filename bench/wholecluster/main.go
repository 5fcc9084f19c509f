package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/harness"
)

const (
	stateNamespace = "kustos-bench"
	stopGrace      = 30 * time.Second
)

// The full-size shape (issue 19): the targets are judged only for it.
const (
	fullNamespaces  = 10000
	fullDeployments = 20000
	fullCleaners    = 1000
	fullEvents      = 50000
)

type options struct {
	harness.Flags

	logLevel                                  string
	heapProfile, cpuProfile                   string
	namespaces, deployments, cleaners, events int
	idle, passTimeout, poll, idlePoll         time.Duration
	checkInterval, scrape                     time.Duration

	quotaSamples, cleanerSamples int
	interval, timeout            time.Duration
	scheduled                    int
	from, to                     time.Duration
	warningBefore, notifyEvery   time.Duration

	churn, heapEvery, churnTick time.Duration
	seed                        uint64
	verbose                     bool
}

// fullSize: the scenario issue 19 sets targets for.
func (o options) fullSize() bool {
	return o.namespaces == fullNamespaces && o.deployments == fullDeployments && o.cleaners == fullCleaners && o.events == fullEvents
}

func main() {
	harness.Main(harness.Bench[options]{Name: "wholecluster", Parse: parseFlags, Run: func(s *harness.Session, o options) harness.Result {
		r := run(s.Ctx, o, s.LogDir, s.LogPath, s.Logf)
		table := r.table(o)
		return harness.Result{Err: r.err, Report: render(r, o, table), Failed: table.Broken(), Missed: table.Missed()}
	}})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := harness.NewFlagSet("wholecluster", stderr)
	var o options
	o.Register(fs, harness.BinHelp+"; also prometheus", harness.KeepLogsHelp)
	fs.IntVar(&o.namespaces, "namespaces", fullNamespaces, "namespaces, each with a ResourceQuota at 20% use")
	fs.IntVar(&o.deployments, "deployments", fullDeployments, "Deployments spread over the namespaces: 10% expiry targets, 10% inactivity targets, the rest ordinary")
	fs.IntVar(&o.cleaners, "cleaners", fullCleaners, "Cleaners, one per ordinary Deployment; 90% share one condition text")
	fs.IntVar(&o.events, "events", fullEvents, "ordinary Events (kubelet's Pulled) spread over the namespaces")
	fs.DurationVar(&o.passTimeout, "pass-timeout", 30*time.Minute, "how long Kustos may take to look at every target once")
	fs.DurationVar(&o.poll, "poll", 200*time.Millisecond, "how often Kustos's /metrics is read")
	fs.DurationVar(&o.idle, "idle", 60*time.Second, "idle period after the initial pass: CPU and memory")
	fs.DurationVar(&o.idlePoll, "idle-poll", 15*time.Second, "how often Kustos's /metrics is read during the idle period (each read costs it CPU)")
	fs.DurationVar(&o.checkInterval, "check-interval", 30*time.Second, "Kustos's --inactivity-check-interval (and --activity-min-step)")
	fs.DurationVar(&o.scrape, "scrape", 5*time.Second, "Prometheus's scrape interval")
	fs.IntVar(&o.quotaSamples, "quota-samples", 100, "quotas raised to 95% use, one quota latency sample each")
	fs.IntVar(&o.cleanerSamples, "cleaner-samples", 20, "Cleaners made due (their Deployment scaled to 0), one Cleaner latency sample each")
	fs.DurationVar(&o.interval, "interval", 50*time.Millisecond, "time between two quota or Cleaner samples")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for a sample's answer after the last one")
	fs.IntVar(&o.scheduled, "scheduled", 20, "Deployments whose deadline falls during the run, one expiry sample each")
	fs.DurationVar(&o.from, "from", 15*time.Second, "earliest deadline of a scheduled Deployment, after its creation")
	fs.DurationVar(&o.to, "to", 40*time.Second, "latest such deadline")
	fs.DurationVar(&o.warningBefore, "warning-before", 10*time.Second, "Kustos's --expiry-warning-before")
	fs.DurationVar(&o.notifyEvery, "notification-interval", 5*time.Second, "Kustos's --notification-interval; below -warning-before")
	fs.DurationVar(&o.churn, "churn", 0, "after the measurements, this long of namespaces, Deployments and Cleaners created and deleted and activity changing; 0: none")
	fs.DurationVar(&o.churnTick, "churn-tick", 5*time.Second, "during churn, how often a tenant namespace is created and an old one deleted")
	fs.DurationVar(&o.heapEvery, "heap-every", time.Minute, "during churn, how often Kustos's heap after GC is read (at most a sixth of -churn)")
	seed := fs.Uint64("seed", 1, "seed of the RNG that picks the samples")
	harness.LogLevelFlag(fs, &o.logLevel)
	fs.StringVar(&o.cpuProfile, "cpu-profile", "", "write Kustos's CPU profile over the idle period (--pprof-bind-address) to this file; read it with go tool pprof -top bin/kustos FILE")
	fs.StringVar(&o.heapProfile, "heap-profile", "", "after the idle period, write Kustos's heap profile (--pprof-bind-address) to this file; read it with go tool pprof -top -sample_index=inuse_space bin/kustos FILE")
	fs.BoolVar(&o.verbose, "v", false, "print every scheduled Deployment's warning and ExpiryDue lateness")
	if err := o.Parse(fs, args); err != nil {
		return o, err
	}
	o.seed = *seed
	return o, o.validate()
}

func (o options) validate() error {
	whole := func(d time.Duration) bool { return d%time.Second == 0 }
	s := newShape(o.namespaces, o.deployments, o.cleaners)
	switch {
	case o.namespaces < 1 || o.deployments < 10 || o.Workers < 1:
		return errors.New("-namespaces and -workers must be at least 1, -deployments at least 10")
	case o.cleaners < 0 || o.events < 0:
		return errors.New("-cleaners and -events must not be negative")
	case o.cleaners > len(s.ordinary):
		return fmt.Errorf("-cleaners=%d: only %d ordinary Deployments to target", o.cleaners, len(s.ordinary))
	case o.quotaSamples < 1 || o.quotaSamples > o.namespaces:
		return fmt.Errorf("-quota-samples=%d: want 1..-namespaces", o.quotaSamples)
	case o.cleanerSamples < 0 || o.cleanerSamples > o.cleaners:
		return fmt.Errorf("-cleaner-samples=%d: want 0..-cleaners", o.cleanerSamples)
	case o.scheduled < 1:
		return errors.New("-scheduled must be at least 1")
	case o.idle < 0 || o.interval < 0 || o.timeout <= 0 || o.passTimeout <= 0 || o.poll <= 0 || o.idlePoll <= 0 || o.scrape <= 0:
		return errors.New("-idle and -interval must not be negative; -timeout, -pass-timeout, -poll, -idle-poll and -scrape must be positive")
	case !whole(o.checkInterval) || o.checkInterval < 5*time.Second:
		return errors.New("-check-interval must be whole seconds, at least 5s")
	case !whole(o.warningBefore) || !whole(o.notifyEvery) || o.notifyEvery <= 0 || o.warningBefore <= o.notifyEvery:
		return errors.New("want whole seconds with 0 < -notification-interval < -warning-before, so that ExpiryDue is due at the deadline")
	case !whole(o.from) || !whole(o.to) || o.from > o.to || o.from < o.warningBefore+3*time.Second:
		return errors.New("want whole seconds with -warning-before + 3s ≤ -from ≤ -to")
	case o.churn < 0 || o.churnTick <= 0 || o.heapEvery <= 0:
		return errors.New("-churn must not be negative; -churn-tick and -heap-every must be positive")
	case o.churn > 0 && o.churn/6 < churnKeep*o.churnTick:
		// The reference reading, at a sixth of the churn, must come once the churn tenants
		// have reached their steady number (one created and one deleted each tick).
		return fmt.Errorf("-churn=%s: a sixth of it must be at least %d × -churn-tick (%s), when the churn tenants reach their steady number",
			o.churn, churnKeep, o.churnTick)
	}
	return nil
}
