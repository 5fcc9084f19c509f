package promtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/testenv"
)

const day = 24 * time.Hour

func TestHistoryOpenMetrics(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_700_000_000, 0)
	var h promtest.History
	h.Add("kustos_test_requests", "counter", map[string]string{"app": "b"}, promtest.Sample{At: at, Value: 1})
	h.Add("kustos_test_requests_total", "counter", map[string]string{"app": "a"}, promtest.Sample{At: at, Value: 2})
	// Out of order, sub-second (truncated), and a second sample in the same second (wins).
	h.Add("kustos_test_activity", "gauge", map[string]string{"z": "1", "app": `say "hi"\` + "\n"},
		promtest.Sample{At: at.Add(time.Minute), Value: 0.5},
		promtest.Sample{At: at.Add(1500 * time.Millisecond), Value: 7},
		promtest.Sample{At: at.Add(1200 * time.Millisecond), Value: 8},
	)
	h.Add("kustos_test_up", "gauge", nil, promtest.Sample{At: at, Value: 1})

	want := `# TYPE kustos_test_activity gauge
kustos_test_activity{app="say \"hi\"\\\n",z="1"} 8 1700000001
kustos_test_activity{app="say \"hi\"\\\n",z="1"} 0.5 1700000060
# TYPE kustos_test_requests counter
kustos_test_requests_total{app="a"} 2 1700000000
kustos_test_requests_total{app="b"} 1 1700000000
# TYPE kustos_test_up gauge
kustos_test_up 1 1700000000
# EOF
`
	if got := h.OpenMetrics(); got != want {
		t.Errorf("OpenMetrics:\n%s\nwant:\n%s", got, want)
	}
}

func TestHistoryAddPanics(t *testing.T) {
	t.Parallel()
	for name, add := range map[string]func(*promtest.History){
		"unknown type":    func(h *promtest.History) { h.Add("m", "histogram", nil) },
		"bad metric name": func(h *promtest.History) { h.Add("kustos-test", "gauge", nil) },
		"bad label name":  func(h *promtest.History) { h.Add("m", "gauge", map[string]string{"a-b": "1"}) },
		"reserved label":  func(h *promtest.History) { h.Add("m", "gauge", map[string]string{"__name__": "x"}) },
		"type conflict": func(h *promtest.History) {
			h.Add("m", "gauge", nil)
			h.Add("m_total", "counter", nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			add(&promtest.History{})
		})
	}
}

// TestBackfilledHistory: samples three weeks old, backfilled with promtool before Prometheus
// starts, are queried where they are (and not now, which is past the 5-minute lookback), and
// found by a range over four weeks.
func TestBackfilledHistory(t *testing.T) {
	t.Parallel()
	now := time.Now()
	then := now.Add(-21 * day).Truncate(time.Second)
	var h promtest.History
	h.Add("kustos_test_activity", "gauge", map[string]string{"app": "old"},
		promtest.Sample{At: then, Value: 7},
		promtest.Sample{At: then.Add(time.Minute), Value: 3},
	)
	h.Add("kustos_test_requests", "counter", map[string]string{"app": "old"},
		promtest.Sample{At: then, Value: 10},
		promtest.Sample{At: then.Add(time.Minute), Value: 70},
	)
	s := promtest.Start(t, promtest.Options{History: &h})

	wantOne(t, s.Query(t, `kustos_test_activity{app="old"}`, then.Add(30*time.Second)), 7)
	wantOne(t, s.Query(t, `kustos_test_activity{app="old"}`, then.Add(90*time.Second)), 3)
	if v := s.Query(t, `kustos_test_activity`, now); len(v) != 0 {
		t.Errorf("kustos_test_activity now = %v, want nothing (the samples are 3 weeks old)", v)
	}
	wantOne(t, s.Query(t, `max_over_time(kustos_test_activity{app="old"}[4w])`, now), 7)
	// The counter is stored under its sample name, with _total.
	wantOne(t, s.Query(t, `kustos_test_requests_total{app="old"}`, then.Add(90*time.Second)), 70)
}

// TestScrapeExporter: a gauge the test sets is scraped, with job and instance labels, and a
// change is seen at a later scrape.
func TestScrapeExporter(t *testing.T) {
	t.Parallel()
	exp := promtest.NewExporter(t)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kustos_test_gauge"})
	exp.Registry.MustRegister(g)
	g.Set(5)
	s := promtest.Start(t, promtest.Options{Scrape: []string{exp.Addr}})

	s.WaitFor(t, `kustos_test_gauge == 5`, 30*time.Second)
	v := wantOne(t, s.Query(t, `kustos_test_gauge`, time.Now()), 5)
	if job, inst := v.Metric["job"], v.Metric["instance"]; job != promtest.Job || string(inst) != exp.Addr {
		t.Errorf("labels %v, want job=%q instance=%q", v.Metric, promtest.Job, exp.Addr)
	}
	g.Set(6)
	s.WaitFor(t, `kustos_test_gauge == 6`, 30*time.Second)
}

// TestHistoryThenScrape: history of the scraped series itself, ending a minute before Start,
// does not stop the scrapes (the head accepts samples after the newest block), and both are in
// one range.
func TestHistoryThenScrape(t *testing.T) {
	t.Parallel()
	exp := promtest.NewExporter(t)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kustos_test_gauge"})
	exp.Registry.MustRegister(g)
	g.Set(5)
	var h promtest.History
	h.Add("kustos_test_gauge", "gauge", map[string]string{"job": promtest.Job, "instance": exp.Addr},
		promtest.Sample{At: time.Now().Add(-7 * day), Value: 9},
		promtest.Sample{At: time.Now().Add(-time.Minute), Value: 8},
	)
	s := promtest.Start(t, promtest.Options{History: &h, Scrape: []string{exp.Addr}})

	s.WaitFor(t, `kustos_test_gauge == 5`, 30*time.Second)
	wantOne(t, s.Query(t, `max_over_time(kustos_test_gauge[1w1m])`, time.Now()), 9)
	wantOne(t, s.Query(t, `max_over_time(kustos_test_gauge[5m])`, time.Now()), 8)
}

// TestStop: once stopped, Prometheus answers no query; Stop again does nothing.
func TestStop(t *testing.T) {
	t.Parallel()
	s := promtest.Start(t, promtest.Options{})
	wantOne(t, s.Query(t, `vector(1)`, time.Now()), 1)
	s.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if v, _, err := s.API().Query(ctx, `vector(1)`, time.Now()); err == nil {
		t.Fatalf("query after Stop = %v, want an error", v)
	}
	s.Stop()
}

// fatalRecorder records Fatalf instead of ending the test, to see what a test without the
// binaries would be told.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// TestMissingBinary: no binary fails (never skips) with what to do.
func TestMissingBinary(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(testenv.EnvTestBin, dir)
	r := &fatalRecorder{TB: t}
	promtest.Binary(r, "prometheus")
	if want := dir + "/prometheus: run make testbin"; !strings.Contains(r.msg, want) {
		t.Errorf("Fatalf(%q), want it to say %q", r.msg, want)
	}
}

// wantOne fails the test unless v is one sample of value want, and returns it.
func wantOne(t *testing.T, v model.Vector, want float64) *model.Sample {
	t.Helper()
	if len(v) != 1 || float64(v[0].Value) != want {
		t.Fatalf("got %v, want one sample of value %g", v, want)
	}
	return v[0]
}
