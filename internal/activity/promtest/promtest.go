package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// Job is the job label of every scraped target.
const Job = "kustos-test"

const (
	// DefaultScrapeInterval is the default Options.ScrapeInterval.
	DefaultScrapeInterval = time.Second

	// retention keeps backfilled history: Prometheus deletes blocks older than this (measured
	// back from the newest block) at start, and its default, 15d, is shorter than the weeks
	// of history the inactivity tests need.
	retention = "10y"
	// maxBlockDuration is promtool's --max-block-duration for the backfill. Its default, 2h,
	// writes one block per 2 hours that hold a sample (252 for a 3-week history), which
	// Prometheus then opens and compacts at start. 31 days is the largest block Prometheus
	// itself ever makes (10% of the retention, at most 31d); promtool rounds it down to its
	// compaction range of 486h, so a few weeks of history take two or three blocks.
	maxBlockDuration = 31 * 24 * time.Hour

	startTimeout    = 60 * time.Second // loading blocks on a busy 2-CPU machine
	stopTimeout     = 10 * time.Second
	backfillTimeout = 2 * time.Minute
	queryTimeout    = 10 * time.Second
)

// TB is what the helpers need of a test: *testing.T and *testing.B are one, and so are the
// benchmark's and the demo's stand-ins, which run Prometheus outside `go test`.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
	Cleanup(func())
	Failed() bool
}

var _ TB = testing.TB(nil)

// Options configures Start. The zero value is usable: a Prometheus with no data and no targets.
type Options struct {
	// History is written into the data directory before Prometheus starts (nil: none). Every
	// sample must be older than Start: see [Start].
	History *History
	// Scrape are host:port targets (an [Exporter]'s Addr), scraped at /metrics with job
	// "kustos-test" ([Job]) every ScrapeInterval.
	Scrape []string
	// ScrapeInterval is the global scrape interval (and timeout). Default: DefaultScrapeInterval.
	ScrapeInterval time.Duration
	// Web, when set, serves TLS or wants a password (--web.config.file).
	Web *Web
	// MaxSamples, when set, is --query.max-samples (default 50,000,000): the most samples one
	// query may hold in memory.
	MaxSamples int
}

// Server is a running Prometheus.
type Server struct {
	// URL is its HTTP API's base, http://127.0.0.1:<port> (https with Options.Web.TLS).
	URL string
	// CAFile is the PEM file of the certificate a client must trust (Options.Web.TLS only).
	CAFile string

	api      v1.API
	http     *http.Client // the helpers' own requests: readiness, api
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
	stopOnce sync.Once
}

// Binary returns the path of the test binary name (prometheus or promtool): in $KUSTOS_TESTBIN,
// else <repo root>/bin, as internal/testenv finds the control plane. A missing binary fails the
// test, never skips it: it is a broken install step.
func Binary(t TB, name string) string {
	t.Helper()
	dir := os.Getenv(testenv.EnvTestBin)
	if dir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			t.Fatalf("promtest: finding bin/%s (or set $%s): %v", name, testenv.EnvTestBin, err)
		}
		dir = filepath.Join(root, "bin")
	}
	path := filepath.Join(dir, name)
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("promtest: missing %s: run make testbin (hack/setup-testbin.sh builds prometheus and promtool)", path)
	}
	return path
}

// Start starts bin/prometheus on a free loopback port, with a fresh data directory holding
// o.History (backfilled with bin/promtool first), scraping o.Scrape, and returns once it is
// ready (/-/ready). It is stopped when the test ends; its log (and promtool's) is printed if the
// test failed.
//
// History must end before Start. Prometheus accepts scraped samples only after the newest
// block's end (the newest history sample + 1ms), for every series: a history sample an hour in
// the future would make it drop every scrape for that hour. Older history, even from a minute
// ago, is fine; promtool itself does not look at the clock.
func Start(t TB, o Options) *Server {
	t.Helper()
	prometheus := Binary(t, "prometheus")
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = DefaultScrapeInterval
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("promtest: %v", err)
	}
	defer logFile.Close() // the process has its own descriptor
	// Registered before Stop, so it runs after it (cleanups run last-in, first-out) and prints
	// the whole log; and after t.TempDir's removal was registered, so it runs before that.
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("promtest: %s:\n%s", logPath, b)
		}
	})

	if err := os.MkdirAll(data, 0o750); err != nil {
		t.Fatalf("promtest: %v", err)
	}
	if o.History != nil {
		backfill(t, o.History, dir, data, logFile)
	}
	config := filepath.Join(dir, "prometheus.yml")
	writeConfig(t, config, o)

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	// Stopped by Stop (SIGTERM, so that it shuts down cleanly), not by a context.
	args := []string{
		"--config.file=" + config,
		"--storage.tsdb.path=" + data,
		"--storage.tsdb.retention.time=" + retention,
		"--web.listen-address=" + addr,
		// How often the scrape manager takes new targets from discovery, the first time
		// included: at its default, 5s, the first scrape came 5-6s after ready. A hidden flag,
		// but the binary is pinned (hack/tools/prometheus).
		"--scrape.discovery-reload-interval=100ms",
	}
	if o.MaxSamples > 0 {
		args = append(args, "--query.max-samples="+strconv.Itoa(o.MaxSamples))
	}
	s := &Server{URL: "http://" + addr, http: http.DefaultClient, done: make(chan struct{})}
	if o.Web != nil {
		var web string
		web, s.CAFile = writeWebConfig(t, dir, o.Web)
		args = append(args, "--web.config.file="+web)
		if o.Web.TLS {
			s.URL = "https://" + addr
		}
		s.http = webClient(t, o.Web, s.CAFile)
	}
	cmd := exec.CommandContext(context.Background(), prometheus, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("promtest: starting %s: %v", prometheus, err)
	}
	s.cmd = cmd
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	client, err := api.NewClient(api.Config{Address: s.URL, Client: s.http})
	if err != nil {
		t.Fatalf("promtest: %v", err)
	}
	s.api = v1.NewAPI(client)

	for deadline := time.Now().Add(startTimeout); !s.ready(); {
		select {
		case <-s.done:
			t.Fatalf("promtest: prometheus exited at its start (%v); log: %s", cmd.ProcessState, logPath)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("promtest: prometheus not ready after %s; log: %s", startTimeout, logPath)
		}
	}
	return s
}

// backfill writes h into the data directory with promtool, as blocks Prometheus loads at start.
func backfill(t TB, h *History, dir, data string, log io.Writer) {
	t.Helper()
	newest, ok := h.newest()
	if !ok {
		return
	}
	if !newest.Before(time.Now()) {
		t.Fatalf("promtest: history sample at %s is not in the past: Prometheus would drop every scraped sample until then (see Start)", newest.UTC())
	}
	promtool := Binary(t, "promtool")
	file := filepath.Join(dir, "history.om")
	if err := os.WriteFile(file, []byte(h.OpenMetrics()), 0o600); err != nil {
		t.Fatalf("promtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), backfillTimeout)
	defer cancel()
	// --max-block-duration is a flag of create-blocks-from, so it comes before "openmetrics".
	args := []string{"tsdb", "create-blocks-from", "--max-block-duration=" + maxBlockDuration.String(), "openmetrics", file, data}
	out, err := exec.CommandContext(ctx, promtool, args...).CombinedOutput()
	fmt.Fprintf(log, "$ promtool %v\n%s\n", args, out)
	if err != nil {
		t.Fatalf("promtest: backfilling the history (%s): %v\n%s", file, err, out)
	}
}

// writeConfig writes prometheus.yml. It is JSON, which is YAML too, so that encoding/json
// quotes the targets.
func writeConfig(t TB, path string, o Options) {
	t.Helper()
	// Prometheus's durations take no fractions ("1.5s"); milliseconds take any interval.
	interval := strconv.FormatInt(o.ScrapeInterval.Milliseconds(), 10) + "ms"
	type staticConfig struct {
		Targets []string `json:"targets"`
	}
	type scrapeConfig struct {
		JobName       string         `json:"job_name"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	cfg := struct {
		Global        map[string]string `json:"global"`
		ScrapeConfigs []scrapeConfig    `json:"scrape_configs,omitempty"`
	}{
		// The default scrape timeout, 10s, must not exceed the interval.
		Global: map[string]string{"scrape_interval": interval, "scrape_timeout": interval},
	}
	if len(o.Scrape) > 0 {
		cfg.ScrapeConfigs = []scrapeConfig{{JobName: Job, StaticConfigs: []staticConfig{{Targets: o.Scrape}}}}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatalf("promtest: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("promtest: %v", err)
	}
}

func (s *Server) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", http.NoBody)
	if err != nil {
		return false
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop stops Prometheus (SIGTERM, then SIGKILL after 10s) and waits for it to exit. Tests call
// it to make Prometheus unreachable; calling it again does nothing.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(stopTimeout):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// API is a client of the server's HTTP API, for queries a test makes itself.
func (s *Server) API() v1.API { return s.api }

// Query runs the instant query at time at. An error, or a result that is not an instant
// vector, fails the test.
func (s *Server) Query(t TB, query string, at time.Time) model.Vector {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	v, warnings, err := s.api.Query(ctx, query, at)
	if err != nil {
		t.Fatalf("promtest: query %q at %s: %v", query, at.UTC(), err)
	}
	if len(warnings) > 0 {
		t.Logf("promtest: query %q: warnings %v", query, warnings)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("promtest: query %q: a %s, want a vector", query, v.Type())
	}
	return vec
}

// WaitFor waits until the instant query (evaluated now) returns a non-empty result, e.g. until
// the first scrape of a target arrived; it fails the test after timeout.
func (s *Server) WaitFor(t TB, query string, timeout time.Duration) {
	t.Helper()
	var last error
	for deadline := time.Now().Add(timeout); ; {
		ctx, cancel := context.WithTimeout(context.Background(), min(queryTimeout, time.Until(deadline)))
		v, _, err := s.api.Query(ctx, query, time.Now())
		cancel()
		switch {
		case err != nil:
			last = err
		case !empty(v):
			return
		default:
			last = fmt.Errorf("empty result (%s)", v.Type())
		}
		select {
		case <-s.done:
			t.Fatalf("promtest: waiting for %q: prometheus has exited (%v)", query, last)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("promtest: %q: no result after %s: %v", query, timeout, last)
		}
	}
}

// empty reports whether a query result has no samples. Scalars and strings always have one.
func empty(v model.Value) bool {
	switch v := v.(type) {
	case model.Vector:
		return len(v) == 0
	case model.Matrix:
		return len(v) == 0
	case nil:
		return true
	default:
		return false
	}
}

// freePort returns a loopback port nobody listens on at the moment. Another process could take
// it before Prometheus binds it; Prometheus then exits at its start, which Start reports.
func freePort(t TB) int {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("promtest: %v", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		t.Fatalf("promtest: listener address %v", l.Addr())
	}
	return addr.Port
}
