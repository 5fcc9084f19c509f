package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/harness"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

// defaultNoiseEvents is the number of ordinary Events of a "+noise" scenario.
const defaultNoiseEvents = 50000

type options struct {
	harness.Flags

	scenarios   []scenario
	idle        time.Duration
	samples     int
	interval    time.Duration
	timeout     time.Duration
	seed        uint64
	noiseEvents int
	verbose     bool
}

func main() {
	harness.Main(harness.Bench[options]{Name: "controlplane", Parse: parseFlags, Run: runScenarios, ManyLogs: true})
}

// runScenarios runs each scenario on a control plane of its own, until one is interrupted.
func runScenarios(s *harness.Session, o options) harness.Result {
	var results []result
	failed := false
	for _, sc := range o.scenarios {
		if s.Ctx.Err() != nil {
			break
		}
		s.Logf("== scenario %s: %d namespaces, %d noise events", sc.name, sc.namespaces, sc.noise)
		r := runScenario(s.Ctx, o, sc, s.LogDir, s.Logf)
		if r.err != nil {
			failed = true
			s.Logf("scenario %s FAILED: %v", sc.name, r.err)
			if r.kustosLog != "" {
				kustosproc.Tail(s.Stderr, r.kustosLog, 20)
			}
		}
		results = append(results, r)
	}
	if s.Ctx.Err() != nil {
		s.Logf("interrupted")
		failed = true
	}

	missedTarget := false
	for _, r := range results {
		if r.missing() > 0 || r.unexpected > 0 || r.updateErrors > 0 {
			failed = true
		}
		if r.verdict() == report.Fail {
			missedTarget = true
		}
	}
	return harness.Result{Report: renderTable(results, o), Failed: failed, Missed: missedTarget}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := harness.NewFlagSet("controlplane", stderr)
	var o options
	scenarios := fs.String("scenarios", "2000,10000,2000+noise", "comma-separated scenarios: N (namespaces) or N+noise (plus -noise-events ordinary Events)")
	seed := fs.String("seed", "1", "seed of the RNG that picks the sampled quotas")
	o.Register(fs, harness.BinHelp, "keep Kustos's output files even when everything passed")
	fs.DurationVar(&o.idle, "idle", 30*time.Second, "time between starting Kustos and the first update (includes its start-up and initial sync)")
	fs.IntVar(&o.samples, "samples", 100, "quotas raised to 95% use, one latency sample each")
	fs.DurationVar(&o.interval, "interval", 50*time.Millisecond, "time between two sampled updates")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to wait for the Events after the last update")
	fs.IntVar(&o.noiseEvents, "noise-events", defaultNoiseEvents, "ordinary Events of a +noise scenario")
	fs.BoolVar(&o.verbose, "v", false, "print every sample's latency")
	if err := o.Parse(fs, args); err != nil {
		return o, err
	}
	var err error
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
	case o.Workers < 1:
		return o, fmt.Errorf("-workers=%d: must be at least 1", o.Workers)
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
