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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
)

// defaultNoiseEvents is the number of ordinary Events of a "+noise" scenario.
const defaultNoiseEvents = 50000

type options struct {
	kustos      string
	binDir      string
	scenarios   []scenario
	idle        time.Duration
	samples     int
	interval    time.Duration
	timeout     time.Duration
	seed        uint64
	workers     int
	noiseEvents int
	strict      bool
	out         string
	keepLogs    bool
	verbose     bool
}

func main() {
	// The harness's own clients (envtest) log through controller-runtime; it has nothing to
	// say that the report does not, and an unset logger prints a warning with a stack trace.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "controlplane:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	logDir, err := os.MkdirTemp("", "kustos-bench-")
	if err != nil {
		fmt.Fprintln(stderr, "controlplane:", err)
		return 1
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	}
	logf("kustos %s (%s); %d CPUs; Kustos output in %s", o.kustos, kustosproc.Version(o.kustos), runtime.NumCPU(), logDir)

	var results []result
	failed := false
	for _, sc := range o.scenarios {
		if ctx.Err() != nil {
			break
		}
		logf("== scenario %s: %d namespaces, %d noise events", sc.name, sc.namespaces, sc.noise)
		r := runScenario(ctx, o, sc, logDir, logf)
		if r.err != nil {
			failed = true
			logf("scenario %s FAILED: %v", sc.name, r.err)
			if r.kustosLog != "" {
				kustosproc.Tail(stderr, r.kustosLog, 20)
			}
		}
		results = append(results, r)
	}
	if ctx.Err() != nil {
		logf("interrupted")
		failed = true
	}

	table := renderTable(results, o)
	fmt.Fprint(stdout, table)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(table), 0o644); err != nil {
			logf("writing %s: %v", o.out, err)
			failed = true
		}
	}

	missedTarget := false
	for _, r := range results {
		if r.missing() > 0 || r.unexpected > 0 || r.updateErrors > 0 {
			failed = true
		}
		if r.verdict() == verdictFail {
			missedTarget = true
		}
	}
	if o.keepLogs || failed || missedTarget {
		logf("Kustos output kept in %s", logDir)
	} else {
		_ = os.RemoveAll(logDir)
	}
	switch {
	case failed:
		return 1
	case missedTarget && o.strict:
		logf("a target was missed (-strict)")
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("controlplane", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	scenarios := fs.String("scenarios", "2000,10000,2000+noise", "comma-separated scenarios: N (namespaces) or N+noise (plus -noise-events ordinary Events)")
	seed := fs.String("seed", "1", "seed of the RNG that picks the sampled quotas")
	fs.StringVar(&o.kustos, "kustos", "", "path of the kustos binary to measure (required)")
	fs.StringVar(&o.binDir, "bin", "", "directory holding etcd and kube-apiserver (default: $KUSTOS_TESTBIN, else <repo>/bin)")
	fs.DurationVar(&o.idle, "idle", 30*time.Second, "time between starting Kustos and the first update (includes its start-up and initial sync)")
	fs.IntVar(&o.samples, "samples", 100, "quotas raised to 95% use, one latency sample each")
	fs.DurationVar(&o.interval, "interval", 50*time.Millisecond, "time between two sampled updates")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the Events after the last update")
	fs.IntVar(&o.workers, "workers", 32, "parallel requests during setup")
	fs.IntVar(&o.noiseEvents, "noise-events", defaultNoiseEvents, "ordinary Events of a +noise scenario")
	fs.BoolVar(&o.strict, "strict", true, "exit non-zero when a target is missed")
	fs.StringVar(&o.out, "out", "", "also write the result table to this file")
	fs.BoolVar(&o.verbose, "v", false, "print every sample's latency")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep Kustos's output files even when everything passed")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.kustos == "" {
		return o, errors.New("-kustos is required (make build puts it in bin/kustos)")
	}
	abs, err := filepath.Abs(o.kustos)
	if err != nil {
		return o, err
	}
	o.kustos = abs
	if fi, err := os.Stat(o.kustos); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return o, fmt.Errorf("-kustos=%s: not an executable file", o.kustos)
	}
	if o.seed, err = strconv.ParseUint(*seed, 10, 64); err != nil {
		return o, fmt.Errorf("-seed=%q: %w", *seed, err)
	}
	if o.scenarios, err = parseScenarios(*scenarios, o.noiseEvents); err != nil {
		return o, fmt.Errorf("-scenarios=%q: %w", *scenarios, err)
	}
	switch {
	case o.samples < 1:
		return o, fmt.Errorf("-samples=%d: must be at least 1", o.samples)
	case o.interval < 0, o.idle < 0, o.timeout <= 0:
		return o, errors.New("-interval and -idle must not be negative, -timeout must be positive")
	case o.workers < 1:
		return o, fmt.Errorf("-workers=%d: must be at least 1", o.workers)
	case o.noiseEvents < 0:
		return o, fmt.Errorf("-noise-events=%d: must not be negative", o.noiseEvents)
	}
	for _, sc := range o.scenarios {
		if o.samples > sc.namespaces {
			return o, fmt.Errorf("-samples=%d: scenario %s has only %d quotas", o.samples, sc.name, sc.namespaces)
		}
	}
	return o, nil
}

// scenario is one measured set-up.
type scenario struct {
	name       string // as given: "2000", "2000+noise"
	namespaces int
	noise      int // ordinary Events created before Kustos starts
}

func parseScenarios(s string, noiseEvents int) ([]scenario, error) {
	var out []scenario
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		num, noisy := strings.CutSuffix(f, "+noise")
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want N or N+noise with N ≥ 1", f)
		}
		sc := scenario{name: f, namespaces: n}
		if noisy {
			sc.noise = noiseEvents
		}
		out = append(out, sc)
	}
	if len(out) == 0 {
		return nil, errors.New("no scenario")
	}
	return out, nil
}
