package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kustos-dev/kustos/internal/activity/promtest"
)

// benchTB is internal/activity/promtest's TB for this command: Fatalf records the failure and
// unwinds to guard, Cleanup collects what finish runs.
type benchTB struct {
	dir  string // temporary directories live here
	logf func(string, ...any)

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

type tbFatal string

func newBenchTB(dir string, logf func(string, ...any)) *benchTB {
	return &benchTB{dir: dir, logf: logf}
}

func (t *benchTB) Helper() {}

func (t *benchTB) Logf(format string, args ...any) { t.logf("promtest: "+format, args...) }

func (t *benchTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	t.logf(format, args...)
}

func (t *benchTB) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.Errorf("%s", msg)
	panic(tbFatal(msg))
}

// Failed is true once something failed: promtest then prints Prometheus's log at cleanup.
func (t *benchTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// fail marks the run as failed (for Failed) without unwinding.
func (t *benchTB) fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}

func (t *benchTB) TempDir() string {
	d, err := os.MkdirTemp(t.dir, "promtest-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func (t *benchTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// finish runs the cleanups, the last registered first.
func (t *benchTB) finish() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// guard runs f, turning a Fatalf (or a panic from a method benchTB lacks) into an error.
func (t *benchTB) guard(f func()) (err error) {
	defer func() {
		switch p := recover().(type) {
		case nil:
		case tbFatal:
			err = errors.New(string(p))
		default:
			t.fail()
			err = fmt.Errorf("promtest: %v", p)
		}
	}()
	f()
	return nil
}

// The metrics the default activity sources read (internal/activity.DefaultSources), spelled
// out: the bench measures the binary, and these are what it queries.
const (
	metricNginxRequests = "nginx_ingress_controller_requests"
	metricNginxReload   = "nginx_ingress_controller_config_last_reload_successful"
	metricBastion       = "bastion_ssh_connections"
)

// sourceMarkers tell which default source a query belongs to: the metric it reads.
var sourceMarkers = []struct{ source, metric string }{
	{"nginx", metricNginxRequests},
	{"bastion", metricBastion},
}

// activityExporter exposes, for every target, ingress-nginx's request counter (status 200) and
// the bastion's SSH connection gauge, as a real cluster's exporters do; the active targets'
// counters grow and their gauges are 1.
type activityExporter struct {
	exp      *promtest.Exporter
	requests *prometheus.CounterVec
	ssh      *prometheus.GaugeVec
	nginx    []target // active through the ingress: their counters grow
}

// target is a Deployment: its namespace and name.
type target struct{ namespace, name string }

func (t target) String() string { return t.namespace + "/" + t.name }

func newActivityExporter(t *benchTB, all []target, active []activeTarget) (*activityExporter, error) {
	e := &activityExporter{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricNginxRequests, Help: "ingress-nginx requests"}, []string{"namespace", "service", "status"}),
		ssh:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricBastion, Help: "open SSH connections through the bastion"}, []string{"namespace", "name"}),
	}
	reload := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricNginxReload, Help: "ingress-nginx's last reload succeeded"})
	reload.Set(1)
	err := t.guard(func() { e.exp = promtest.NewExporter(t) })
	if err != nil {
		return nil, err
	}
	e.exp.Registry.MustRegister(reload, e.requests, e.ssh)
	for _, tg := range all {
		e.requests.WithLabelValues(tg.namespace, tg.name, "200").Add(0)
		e.ssh.WithLabelValues(tg.namespace, tg.name).Set(0)
	}
	for _, a := range active {
		if a.source == "bastion" {
			e.ssh.WithLabelValues(a.namespace, a.name).Set(1) // a session stays open
		} else {
			e.nginx = append(e.nginx, a.target)
		}
	}
	return e, nil
}

// serve increments the counters of the targets active through the ingress every period until
// ctx ends.
func (e *activityExporter) serve(ctx context.Context, period time.Duration) {
	tk := time.NewTicker(period)
	defer tk.Stop()
	for {
		for _, tg := range e.nginx {
			e.requests.WithLabelValues(tg.namespace, tg.name, "200").Add(3)
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// startPrometheus starts bin/prometheus scraping the exporter and waits until it holds every
// series and the first increases of the active counters.
func startPrometheus(t *benchTB, e *activityExporter, scrape time.Duration, n, activeNginx int) (*promtest.Server, error) {
	var s *promtest.Server
	err := t.guard(func() {
		s = promtest.Start(t, promtest.Options{Scrape: []string{e.exp.Addr}, ScrapeInterval: scrape})
		wait := 30*time.Second + 5*scrape
		s.WaitFor(t, fmt.Sprintf("count(%s) >= %d", metricNginxRequests, n), wait)
		s.WaitFor(t, fmt.Sprintf("count(%s) >= %d", metricBastion, n), wait)
		if activeNginx > 0 {
			s.WaitFor(t, fmt.Sprintf("count(increase(%s[1m]) > 0) >= %d", metricNginxRequests, activeNginx), wait)
		}
	})
	return s, err
}
