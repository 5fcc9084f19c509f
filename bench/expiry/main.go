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
	n, namespaces, scheduled      int
	workers                       int
	idle, passTimeout, poll       time.Duration
	from, to, timeout             time.Duration
	warningBefore, interval       time.Duration
	farFuture                     time.Duration
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
		fmt.Fprintln(stderr, "expiry:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	logDir, err := os.MkdirTemp("", "kustos-bench-expiry-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	logPath := filepath.Join(logDir, "kustos.log")
	logf("kustos %s (%s); %d CPUs; Kustos output in %s", o.kustos, kustosproc.Version(o.kustos), runtime.NumCPU(), logPath)

	r := run(ctx, o, logPath, logf)
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
		failed = failed || row.broken
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
	fs := flag.NewFlagSet("expiry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.kustos, "kustos", "", "path of the kustos binary to measure (required)")
	fs.StringVar(&o.binDir, "bin", "", "directory holding etcd and kube-apiserver (default: $KUSTOS_TESTBIN, else <repo>/bin)")
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
	fs.IntVar(&o.workers, "workers", 32, "parallel requests during setup")
	fs.BoolVar(&o.strict, "strict", true, "exit non-zero when a target is missed")
	fs.StringVar(&o.logLevel, "kustos-log-level", "error", "Kustos's --log-level (debug, info or error); its output is kept in a temporary directory")
	fs.StringVar(&o.out, "out", "", "also write the result table to this file")
	fs.BoolVar(&o.verbose, "v", false, "print every scheduled Deployment's warning and due lateness")
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
	whole := func(d time.Duration) bool { return d%time.Second == 0 }
	switch {
	case o.n < 1 || o.namespaces < 1 || o.workers < 1 || o.scheduled < 1:
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
