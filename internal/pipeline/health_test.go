package pipeline

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kustos-dev/kustos/internal/metrics"
)

// TestHealthMetrics: what the health metrics say as a Key's proposal opens, waits and is
// merged, and as its Change fails, keeps failing and succeeds again; and that a Key nobody
// looks at any more stops counting (no alert that nobody can clear).
func TestHealthMetrics(t *testing.T) {
	type check struct {
		open, oldestH, failing, failingH float64
	}
	cases := []struct {
		name  string
		steps func(t *testing.T, w *world, run func(), at func(d time.Duration), want func(check))
	}{
		{"an open pull request counts with its age until it is merged", func(t *testing.T, w *world, run func(), at func(time.Duration), want func(check)) {
			w.wants = cpu(testKey, 12)
			run()
			opened := w.now
			at(0)
			want(check{open: 1})
			w.now = opened.Add(3 * time.Hour)
			run() // a poll: still open, opened 3 h ago
			at(0)
			want(check{open: 1, oldestH: 3})
			w.forge.human(testKey, "merge", w.now)
			run()
			want(check{})
			for _, action := range []string{"opened", "merged"} {
				var m dto.Metric
				if err := metrics.PRs.WithLabelValues("health-"+t.Name(), action).Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
					t.Errorf("kustos_prs_total{action=%q} for the detector = %v (%v), want 1", action, m.GetCounter().GetValue(), err)
				}
			}
		}},
		{"a failing change counts from its first failure until it succeeds", func(t *testing.T, w *world, run func(), at func(time.Duration), want func(check)) {
			w.wants = cpu(testKey, 12)
			w.forge.failApply = errors.New("GitHub answered 502")
			run()
			first := w.now
			w.now = first.Add(time.Hour)
			run()
			at(0)
			want(check{failing: 1, failingH: 1})
			w.forge.failApply = nil
			run()
			want(check{open: 1})
		}},
		{"a target nobody looks at any more stops counting", func(t *testing.T, w *world, run func(), at func(time.Duration), want func(check)) {
			w.wants = cpu(testKey, 12)
			w.forge.failApply = errors.New("GitHub answered 502")
			run()
			at(30 * time.Minute)
			want(check{failing: 1, failingH: 0.5})
			at(61 * time.Minute)
			want(check{})
		}},
	}
	defer func() { clock = time.Now }()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "pr")
			detector := "health-" + t.Name()
			failuresBefore := counter(t, detector)
			failures := 0
			run := func() {
				p := w.replica("a")
				p.Detector = detector
				w.now = w.now.Add(-time.Minute) // w.run adds it back
				if _, err := w.run(p); err != nil {
					failures++
				}
			}
			clock = func() time.Time { return w.now }
			at := func(d time.Duration) { last := w.now; clock = func() time.Time { return last.Add(d) } }
			want := func(c check) {
				t.Helper()
				got := check{
					open:     gauge(t, "kustos_pull_requests_open", detector),
					oldestH:  gauge(t, "kustos_pull_request_oldest_open_seconds", detector) / 3600,
					failing:  gauge(t, "kustos_changes_failing", detector),
					failingH: gauge(t, "kustos_change_failing_seconds", detector) / 3600,
				}
				if got != c {
					t.Errorf("health metrics = %+v, want %+v", got, c)
				}
				if n := counter(t, detector) - failuresBefore; n != float64(failures) {
					t.Errorf("kustos_change_failures_total rose by %v, want %d (the failed looks)", n, failures)
				}
			}
			tc.steps(t, w, run, at, want)
		})
	}
}

// gauge gathers the tracker and returns the value of name for detector (-1 when it is absent).
func gauge(t *testing.T, name, detector string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tracked)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "detector" && l.GetValue() == detector {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// counter is kustos_change_failures_total for detector.
func counter(t *testing.T, detector string) float64 {
	t.Helper()
	var m dto.Metric
	if err := changeFailures.WithLabelValues(detector).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
