package promrun

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

// TB is internal/activity/promtest's TB for a command: Fatalf records the failure and unwinds
// to Guard, Cleanup collects what Finish runs.
type TB struct {
	dir  string // temporary directories live here
	logf func(string, ...any)

	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

var _ promtest.TB = (*TB)(nil)

type tbFatal string

// NewTB makes its temporary directories in dir and logs through logf.
func NewTB(dir string, logf func(string, ...any)) *TB {
	return &TB{dir: dir, logf: logf}
}

// Helper does nothing: there is no test to mark helpers of.
func (t *TB) Helper() {}

// Logf logs a line of promtest's.
func (t *TB) Logf(format string, args ...any) { t.logf("promtest: "+format, args...) }

// Errorf logs and marks the run as failed.
func (t *TB) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	t.logf(format, args...)
}

// Fatalf logs, marks the run as failed and unwinds to Guard.
func (t *TB) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.Errorf("%s", msg)
	panic(tbFatal(msg))
}

// Failed is true once something failed: promtest then prints Prometheus's log at cleanup.
func (t *TB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// Fail marks the run as failed (for Failed) without unwinding.
func (t *TB) Fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}

// TempDir makes a directory under the TB's that Finish removes.
func (t *TB) TempDir() string {
	d, err := os.MkdirTemp(t.dir, "promtest-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// Cleanup registers f for Finish.
func (t *TB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// Finish runs the cleanups, the last registered first.
func (t *TB) Finish() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// Guard runs f, turning a Fatalf (or a panic from a method TB lacks) into an error.
func (t *TB) Guard(f func()) (err error) {
	defer func() {
		switch p := recover().(type) {
		case nil:
		case tbFatal:
			err = errors.New(string(p))
		default:
			t.Fail()
			err = fmt.Errorf("promtest: %v", p)
		}
	}()
	f()
	return nil
}

// The metrics the default activity sources read (internal/activity.DefaultSources), spelled
// out: the benches measure the binary, and these are what it queries.
const (
	MetricNginxRequests = "nginx_ingress_controller_requests"
	MetricNginxReload   = "nginx_ingress_controller_config_last_reload_successful"
	MetricBastion       = "bastion_ssh_connections"
)

// Sources of activity: the ingress (its request counter grows) and the bastion (an SSH
// session stays open).
const (
	SourceNginx   = "nginx"
	SourceBastion = "bastion"
)

// Target is a Deployment: its namespace and name.
type Target struct{ Namespace, Name string }

func (t Target) String() string { return t.Namespace + "/" + t.Name }

// Active is a target in use, and the source that says so.
type Active struct {
	Target
	Source string // SourceNginx or SourceBastion
}

// Exporter exposes, for every target, ingress-nginx's request counter (status 200) and the
// bastion's SSH connection gauge, as a real cluster's exporters do; the active targets'
// counters grow and their gauges are 1.
type Exporter struct {
	exp      *promtest.Exporter
	requests *prometheus.CounterVec
	ssh      *prometheus.GaugeVec

	mu    sync.Mutex
	nginx map[Target]bool // active through the ingress: their counters grow
}

// NewExporter starts the exporter with the series of all and the activity of active.
func NewExporter(t *TB, all []Target, active []Active) (*Exporter, error) {
	e := &Exporter{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricNginxRequests, Help: "ingress-nginx requests"}, []string{"namespace", "service", "status"}),
		ssh:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricBastion, Help: "open SSH connections through the bastion"}, []string{"namespace", "name"}),
		nginx:    map[Target]bool{},
	}
	reload := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricNginxReload, Help: "ingress-nginx's last reload succeeded"})
	reload.Set(1)
	err := t.Guard(func() { e.exp = promtest.NewExporter(t) })
	if err != nil {
		return nil, err
	}
	e.exp.Registry.MustRegister(reload, e.requests, e.ssh)
	for _, tg := range all {
		e.Add(tg)
	}
	for _, a := range active {
		e.SetActive(a, true)
	}
	return e, nil
}

// Addr is where Prometheus scrapes the exporter.
func (e *Exporter) Addr() string { return e.exp.Addr }

// Nginx is the number of targets active through the ingress.
func (e *Exporter) Nginx() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.nginx)
}

// Add exposes tg's series, idle: a flat counter and a gauge of 0.
func (e *Exporter) Add(tg Target) {
	e.requests.WithLabelValues(tg.Namespace, tg.Name, "200").Add(0)
	e.ssh.WithLabelValues(tg.Namespace, tg.Name).Set(0)
}

// Remove drops tg's series, as its exporters do once a target is gone.
func (e *Exporter) Remove(tg Target) {
	e.mu.Lock()
	delete(e.nginx, tg)
	e.mu.Unlock()
	e.requests.DeleteLabelValues(tg.Namespace, tg.Name, "200")
	e.ssh.DeleteLabelValues(tg.Namespace, tg.Name)
}

// SetActive starts (on) or ends a's use through its source.
func (e *Exporter) SetActive(a Active, on bool) {
	if a.Source == SourceBastion {
		v := 0.0
		if on {
			v = 1 // a session stays open
		}
		e.ssh.WithLabelValues(a.Namespace, a.Name).Set(v)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if on {
		e.nginx[a.Target] = true
	} else {
		delete(e.nginx, a.Target)
	}
}

// Serve increments the counters of the targets active through the ingress every period until
// ctx ends.
func (e *Exporter) Serve(ctx context.Context, period time.Duration) {
	tk := time.NewTicker(period)
	defer tk.Stop()
	for {
		e.mu.Lock()
		for tg := range e.nginx {
			e.requests.WithLabelValues(tg.Namespace, tg.Name, "200").Add(3)
		}
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// Start starts bin/prometheus scraping the exporter every scrape and waits until it holds the
// series of n targets and the first increases of the counters of those active through the
// ingress.
func Start(t *TB, e *Exporter, scrape time.Duration, n int) (*promtest.Server, error) {
	activeNginx := e.Nginx()
	var s *promtest.Server
	err := t.Guard(func() {
		s = promtest.Start(t, promtest.Options{Scrape: []string{e.exp.Addr}, ScrapeInterval: scrape})
		wait := 30*time.Second + 5*scrape
		s.WaitFor(t, fmt.Sprintf("count(%s) >= %d", MetricNginxRequests, n), wait)
		s.WaitFor(t, fmt.Sprintf("count(%s) >= %d", MetricBastion, n), wait)
		if activeNginx > 0 {
			s.WaitFor(t, fmt.Sprintf("count(increase(%s[1m]) > 0) >= %d", MetricNginxRequests, activeNginx), wait)
		}
	})
	return s, err
}
