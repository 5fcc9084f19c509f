package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
)

const (
	stateNamespace = "kustos-bench"
	stopGrace      = 30 * time.Second
)

type options struct {
	kustos, binDir, out, logLevel string
	n, namespaces, active         int
	workers, cycles               int
	interval, timeout             time.Duration
	minStep, lookback, scrape     time.Duration
	poll, passTimeout             time.Duration
	strict, keepLogs, verbose     bool
}

func main() {
	// The harness's own clients log through controller-runtime; they have nothing to add.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "inactivity:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	logDir, err := os.MkdirTemp("", "kustos-bench-inactivity-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	logPath := filepath.Join(logDir, "kustos.log")
	logf("kustos %s (%s); %d CPUs; Kustos output in %s", o.kustos, kustosproc.Version(o.kustos), runtime.NumCPU(), logPath)

	r := run(ctx, o, logDir, logPath, logf)
	if r.err != nil {
		logf("FAILED: %v", r.err)
		kustosproc.Tail(stderr, logPath, 20)
	}
	table := render(r, o)
	fmt.Fprint(stdout, table)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(table), 0o644); err != nil {
			logf("writing %s: %v", o.out, err)
			r.err = errors.Join(r.err, err)
		}
	}
	failed, missed := r.err != nil, false
	for _, row := range r.rows(o) {
		if row.broken {
			failed = true
			logf("FAILED: %s: %s", row.measure, row.why)
		}
		missed = missed || row.verdict == verdictFail
	}
	if o.keepLogs || failed || missed {
		logf("Kustos output kept in %s", logDir)
	} else {
		_ = os.RemoveAll(logDir)
	}
	switch {
	case failed:
		return 1
	case missed && o.strict:
		logf("a target was missed (-strict)")
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("inactivity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.kustos, "kustos", "", "path of the kustos binary to measure (required)")
	fs.StringVar(&o.binDir, "bin", "", "directory holding etcd, kube-apiserver and prometheus (default: $KUSTOS_TESTBIN, else <repo>/bin)")
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
	fs.IntVar(&o.workers, "workers", 32, "parallel requests during setup")
	fs.BoolVar(&o.strict, "strict", true, "exit non-zero when a target is missed")
	fs.StringVar(&o.logLevel, "kustos-log-level", "error", "Kustos's --log-level (debug, info or error); its output is kept in a temporary directory")
	fs.StringVar(&o.out, "out", "", "also write the result table to this file")
	fs.BoolVar(&o.verbose, "v", false, "print every cycle's figures as they are analysed")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep Kustos's output even when everything passed")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.kustos == "" {
		return o, errors.New("-kustos is required (make build puts it in bin/kustos)")
	}
	var err error
	if o.kustos, err = filepath.Abs(o.kustos); err != nil {
		return o, err
	}
	if fi, err := os.Stat(o.kustos); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return o, fmt.Errorf("-kustos=%s: not an executable file", o.kustos)
	}
	switch {
	case o.n < 1 || o.namespaces < 1 || o.workers < 1 || o.cycles < 1:
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
