package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kustos-dev/kustos/internal/activity"
	"github.com/kustos-dev/kustos/internal/activity/promtest"
	"github.com/kustos-dev/kustos/internal/detect/inactivity"
)

// TestActivityAnswersThatAreNoTimes asks a real Prometheus data queries whose answers are or
// are not what instant mode wants (each target's last activity as a Unix time, within what the
// query covers). A value naming a target that is no such time — a count from a query written
// without timestamp(), a time ahead, NaN — makes the source an error, so that nothing looks
// idle for want of a readable time; a series naming no target is only counted.
func TestActivityAnswersThatAreNoTimes(t *testing.T) {
	prom := promtest.Start(t, promtest.Options{})
	// series is a one-sample vector with the target labels (empty values: no label).
	series := func(ns, name, value string) string {
		return fmt.Sprintf(`label_replace(label_replace(vector(%s), "namespace", %q, "", ""), "service", %q, "", "")`, value, ns, name)
	}
	for _, tc := range []struct {
		name    string
		data    string
		status  activity.Status
		targets int
		invalid int
		detail  string
	}{
		{"times", series("lab", "vm-1", "time() - 7200") + " or " + series("lab", "vm-2", "time() - 60"), activity.StatusOK, 2, 0, ""},
		{"a series naming no target: counted, skipped", series("", "vm-1", "time()") + " or " + series("lab", "vm-2", "time()"), activity.StatusOK, 1, 1, ""},
		{"a count, not a time", series("lab", "vm-1", "time()") + " or " + series("lab", "vm-2", "3"), activity.StatusError, 0, 0, "(e.g. lab/vm-2: 3)"},
		{"a time ahead", series("lab", "vm-1", "time() + 3600"), activity.StatusError, 0, 0, "no Unix time between"},
		{"a time before the window", series("lab", "vm-1", "time() - 30 * 86400"), activity.StatusError, 0, 0, "lab/vm-1"},
		{"NaN", series("lab", "vm-1", "0/0"), activity.StatusError, 0, 0, "lab/vm-1: NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := activity.Compile([]activity.Source{{Name: "nginx", Available: "vector(1)", Data: tc.data,
				Labels: activity.ResultLabels{Namespace: "namespace", Name: "service"}}})
			if err != nil {
				t.Fatal(err)
			}
			c := &activity.Checker{API: prom.API(), Sources: src, Timeout: 10 * time.Second}
			r := c.Check(context.Background(), time.Now(), 14*24*time.Hour).Sources[0]
			if r.Status != tc.status || len(r.Last) != tc.targets || r.Invalid != tc.invalid {
				t.Errorf("status %s, %d targets, %d invalid (%s); want %s, %d, %d", r.Status, len(r.Last), r.Invalid, r.Detail, tc.status, tc.targets, tc.invalid)
			}
			if !strings.Contains(r.Detail, tc.detail) {
				t.Errorf("detail %q, want it to say %q", r.Detail, tc.detail)
			}
		})
	}
}

// TestActivitySourceBreaks: a source's silence is evidence only from when it has been collecting
// without a break, and Prometheus's history says when that was, also at the first check after
// Kustos starts (which reaches back the whole lookback). Backfilled into a real Prometheus:
// the ingress controller's reload gauge stopped for two days a week ago (instant mode: the
// availability is asked over the window in the same request); the bastion's tracker was
// installed two days ago (range mode: its availability series' own points); a third source
// has always collected.
func TestActivitySourceBreaks(t *testing.T) {
	day := 24 * time.Hour
	end := time.Now().Add(-time.Hour).Truncate(5 * time.Minute) // history must end before Prometheus starts
	lookback := 14 * day
	h := &promtest.History{}
	for at := end.Add(-lookback); !at.After(end); at = at.Add(5 * time.Minute) {
		if at.Before(end.Add(-8*day)) || !at.Before(end.Add(-6*day)) {
			h.Add("nginx_ingress_controller_config_last_reload_successful", "gauge", nil, promtest.Sample{At: at, Value: 1})
		}
		if !at.Before(end.Add(-2 * day)) {
			h.Add("bastion_ssh_connections", "gauge", map[string]string{"namespace": "lab", "name": "vm-1"}, promtest.Sample{At: at, Value: 0})
		}
		h.Add("webssh_up", "gauge", nil, promtest.Sample{At: at, Value: 1})
	}
	prom := promtest.Start(t, promtest.Options{History: h})
	srcs, err := activity.Compile([]activity.Source{
		activity.DefaultSources()[0], // nginx, instant mode
		{Name: "bastion", Mode: activity.ModeRange, Available: "count(bastion_ssh_connections)",
			Data: "max by (namespace, name) (bastion_ssh_connections)"},
		{Name: "webssh", Available: "max(webssh_up)", Data: `max by (namespace, name) (timestamp(webssh_sessions > 0))`},
	})
	if err != nil {
		t.Fatal(err)
	}
	checker := &activity.Checker{API: prom.API(), Sources: srcs, MinStep: time.Minute, Timeout: 10 * time.Second}
	res := checker.Check(context.Background(), end, lookback)
	want := map[string]time.Time{"nginx": end.Add(-6 * day), "bastion": end.Add(-2 * day), "webssh": {}}
	for _, s := range res.Sources {
		if s.Status != activity.StatusOK {
			t.Fatalf("source %s: %s (%s)", s.Name, s.Status, s.Detail)
		}
		w, step := want[s.Name], res.Step
		if s.Name != "bastion" { // instant mode: the break is looked for at a coarser step
			step = activity.GapStep(lookback, res.Step)
		}
		t.Logf("%s: collecting since %s (want %s, +≤ %s)", s.Name, s.CollectingSince, w, step)
		// Collecting from the first step after the break's end: never earlier, at most a step
		// later.
		if got := s.CollectingSince; (w.IsZero() && !got.IsZero()) || (!w.IsZero() && (got.Before(w) || got.After(w.Add(step)))) {
			t.Errorf("%s: collecting since %s, want %s (+≤ one step, %s)", s.Name, got, w, step)
		}
	}
	tr := &activity.Tracker{Lookback: lookback}
	tr.Observe(res)
	a := tr.Lookup(map[string]activity.Ref{"nginx": {Namespace: "lab", Name: "vm-1"}, "bastion": {Namespace: "lab", Name: "vm-1"}, "webssh": {Namespace: "lab", Name: "vm-1"}})
	if !a.Known() || a.CoveredSince.Before(end.Add(-2*day)) {
		t.Errorf("covered since %s, want from the bastion's start, %s: silence before it is no evidence", a.CoveredSince, end.Add(-2*day))
	}
}

// TestActivityCoarserWhenPrometheusRefuses: a check over a long window (the first after a
// start, two weeks by default) can ask Prometheus for more samples than its
// --query.max-samples allows — measured: the default nginx query over 14 days and 10,000
// environments is refused at 50,000,000. Here a real Prometheus with a small limit refuses the
// 8-week question at 11,000 steps; the check asks again at a step 4× coarser, gets an answer,
// and finds the last activity up to that step later, never earlier.
func TestActivityCoarserWhenPrometheusRefuses(t *testing.T) {
	day := 24 * time.Hour
	end := time.Now().Add(-time.Hour).Truncate(5 * time.Minute)
	usedUntil := end.Add(-20 * day)
	h := &promtest.History{}
	n := 0.0
	for at := end.Add(-56 * day); !at.After(end); at = at.Add(5 * time.Minute) {
		h.Add("nginx_ingress_controller_config_last_reload_successful", "gauge", nil, promtest.Sample{At: at, Value: 1})
		if !at.After(usedUntil) {
			n++
		}
		for _, name := range []string{"vm-a", "vm-b", "vm-c"} {
			h.Add("nginx_ingress_controller_requests", "gauge", map[string]string{"namespace": "lab", "service": name, "status": "200"}, promtest.Sample{At: at, Value: n})
		}
	}
	prom := promtest.Start(t, promtest.Options{History: h, MaxSamples: 20000})
	srcs, err := activity.Compile(activity.DefaultSources()[:1])
	if err != nil {
		t.Fatal(err)
	}
	checker := &activity.Checker{API: prom.API(), Sources: srcs, MinStep: time.Minute, Timeout: 30 * time.Second}
	res := checker.Check(context.Background(), end, 56*day)
	s := res.Sources[0]
	if s.Status != activity.StatusOK || s.Requests != 2 || s.Step != 4*res.Step || res.Queries != 2 {
		t.Fatalf("status %s (%s), %d requests at step %s (check step %s), %d queries; want ok after one refusal at 4× the step",
			s.Status, s.Detail, s.Requests, s.Step, res.Step, res.Queries)
	}
	slack := s.Step + 5*time.Minute + 5*time.Minute // a step, the minimum range, the scrape spacing
	for _, name := range []string{"vm-a", "vm-b", "vm-c"} {
		got := s.Last[activity.Ref{Namespace: "lab", Name: name}]
		if got.Before(usedUntil) || got.Sub(usedUntil) > slack {
			t.Errorf("%s last active %s, want %s (+≤%s)", name, got, usedUntil, slack)
		}
	}
}

// TestActivityNewSourceNotCoveredAhead: the first check after a start looks back the whole
// default lookback (two weeks), and a source that began collecting moments ago (an exporter
// just installed, a Prometheus just started: `make demo`) was not collecting at the window's
// last steps. Prometheus aligns a subquery's steps to multiples of its step (20 minutes for
// instant mode's break search over two weeks), so the last of them may come before the first
// scrape: "the step after the last break" was then up to that step ahead of now, and the Tracker
// counted a target's silence only from that future time: an idle environment with a 10 s
// timeout was alerted 20 minutes late. Collecting since is never after the check.
func TestActivityNewSourceNotCoveredAhead(t *testing.T) {
	started := time.Now()
	exp := promtest.NewExporter(t)
	reload := prometheus.NewGauge(prometheus.GaugeOpts{Name: "nginx_ingress_controller_config_last_reload_successful"})
	reload.Set(1)
	ssh := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "bastion_ssh_connections"}, []string{"namespace", "name"})
	ssh.WithLabelValues("lab", "vm-1").Set(0)
	exp.Registry.MustRegister(reload, ssh)
	prom := promtest.Start(t, promtest.Options{Scrape: []string{exp.Addr}, ScrapeInterval: time.Second})
	prom.WaitFor(t, "nginx_ingress_controller_config_last_reload_successful", 30*time.Second)
	prom.WaitFor(t, "bastion_ssh_connections", 30*time.Second)

	// The default sources (ingress-nginx, the bastion), as the demo and a default install use.
	srcs, err := activity.Compile(activity.DefaultSources())
	if err != nil {
		t.Fatal(err)
	}
	lookback := inactivity.DefaultOptions().Lookback
	checker := &activity.Checker{API: prom.API(), Sources: srcs, MinStep: time.Second, Timeout: 10 * time.Second}
	now := time.Now()
	res := checker.Check(context.Background(), now, lookback)
	for _, s := range res.Sources {
		if s.Status != activity.StatusOK {
			t.Fatalf("source %s: %s (%s)", s.Name, s.Status, s.Detail)
		}
		t.Logf("%s: collecting since %s, checked at %s (step %s, break search step %s)", s.Name, s.CollectingSince, now, res.Step, activity.GapStep(lookback, res.Step))
		if got := s.CollectingSince; got.Before(started.Truncate(time.Second)) || got.After(now) {
			t.Errorf("%s: collecting since %s, want between the exporter's start %s and the check %s", s.Name, got, started, now)
		}
	}
	tr := &activity.Tracker{Lookback: lookback}
	tr.Observe(res)
	ref := activity.Ref{Namespace: "lab", Name: "vm-1"}
	refs := map[string]activity.Ref{}
	for _, n := range activity.Names(srcs) {
		refs[n] = ref
	}
	a := tr.Lookup(refs)
	if !a.Known() || a.CoveredSince.After(now) {
		t.Errorf("covered since %s (known %v), want no later than the check at %s: a target idle since then is idle", a.CoveredSince, a.Known(), now)
	}
}
