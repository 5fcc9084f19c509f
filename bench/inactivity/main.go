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

	logLevel                  string
	n, namespaces, active     int
	cycles                    int
	interval, timeout         time.Duration
	minStep, lookback, scrape time.Duration
	poll, passTimeout         time.Duration
	verbose                   bool
}

func main() {
	harness.Main(harness.Bench[options]{Name: "inactivity", Parse: parseFlags, Run: func(s *harness.Session, o options) harness.Result {
		r := run(s.Ctx, o, s.LogDir, s.LogPath, s.Logf)
		table := r.table(o)
		var broken []string
		for _, row := range table.Rows {
			if row.Broken {
				broken = append(broken, row.Name+": "+row.Why)
			}
		}
		return harness.Result{Err: r.err, Report: render(r, o), Failed: table.Broken(), Missed: table.Missed(), Failures: broken}
	}})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := harness.NewFlagSet("inactivity", stderr)
	var o options
	o.Register(fs, "directory holding etcd, kube-apiserver and prometheus (default: $KUSTOS_TESTBIN, else <repo>/bin)", harness.KeepLogsHelp)
	fs.IntVar(&o.n, "n", 10000, "target Deployments (replicas 1; no controller-manager runs them)")
	fs.IntVar(&o.namespaces, "namespaces", 100, "namespaces the targets are spread over")
	fs.IntVar(&o.active, "active", 100, "targets in use: every n/active-th, alternately through the ingress (a growing request counter) and the bastion (an open SSH session)")
	fs.IntVar(&o.cycles, "cycles", 4, "check cycles measured after Kustos's initial pass")
	fs.DurationVar(&o.interval, "interval", 15*time.Second, "Kustos's --inactivity-check-interval")
	fs.DurationVar(&o.timeout, "timeout", time.Hour, "Kustos's --inactivity-timeout: long enough that no target becomes idle during the run")
	fs.DurationVar(&o.minStep, "min-step", 15*time.Second, "Kustos's --activity-min-step")
	fs.DurationVar(&o.lookback, "lookback", time.Hour, "Kustos's --activity-lookback: the first check's window (this Prometheus holds minutes of data)")
	fs.DurationVar(&o.scrape, "scrape", 5*time.Second, "Prometheus's scrape interval")
	fs.DurationVar(&o.poll, "poll", 200*time.Millisecond, "how often Kustos's /metrics and /proc are read")
	fs.DurationVar(&o.passTimeout, "pass-timeout", 10*time.Minute, "how long Kustos may take to look at every target once after its start")
	harness.LogLevelFlag(fs, &o.logLevel)
	fs.BoolVar(&o.verbose, "v", false, "print every cycle's figures as they are analysed")
	if err := o.Parse(fs, args); err != nil {
		return o, err
	}
	switch {
	case o.n < 1 || o.namespaces < 1 || o.Workers < 1 || o.cycles < 1:
		return o, errors.New("-n, -namespaces, -workers and -cycles must be at least 1")
	case o.active < 0 || o.active > o.n:
		return o, errors.New("-active must be from 0 to -n")
	case o.interval < time.Second || o.minStep < time.Second:
		return o, errors.New("-interval and -min-step must be at least 1s (Kustos's own limits)")
	case o.lookback < o.interval:
		return o, errors.New("-lookback must be at least -interval (Kustos's own limit)")
	case o.timeout < 30*time.Minute:
		return o, errors.New("-timeout must be at least 30m: no target may become idle during the run")
	case o.scrape < time.Second || o.scrape > o.interval:
		return o, errors.New("-scrape must be from 1s to -interval")
	case o.poll <= 0 || o.poll > o.interval/4:
		return o, errors.New("-poll must be positive and at most a quarter of -interval")
	case o.passTimeout <= 0:
		return o, errors.New("-pass-timeout must be positive")
	}
	return o, nil
}
