package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/expirysched"
	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

func TestParseFlags(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "kustos")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-kustos", exe}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.n != 10000 || o.namespaces != 100 || o.scheduled != 50 || o.from != 15*time.Second || o.to != 40*time.Second ||
		o.warningBefore != 10*time.Second || o.interval != 5*time.Second || o.idle != 30*time.Second || o.Workers != 32 || !o.Strict {
		t.Errorf("defaults: %+v", o)
	}
	for _, bad := range [][]string{
		{},
		{"-kustos", exe, "extra"},
		{"-kustos", filepath.Dir(exe)},
		{"-kustos", exe, "-n", "0"},
		{"-kustos", exe, "-interval", "10s"},           // not below -warning-before: due later than the deadline
		{"-kustos", exe, "-interval", "0s"},            // due at the warning
		{"-kustos", exe, "-warning-before", "10500ms"}, // not whole seconds
		{"-kustos", exe, "-from", "12s"},               // warned 2 s after creation: too soon
		{"-kustos", exe, "-from", "30s", "-to", "20s"}, // empty range
		{"-kustos", exe, "-far-future", "1h"},          // idle ones would be warned during a long run
		{"-kustos", exe, "-poll", "0s"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

const sampleMetrics = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="expiry-deployment.apps",result="success"} 9990
controller_runtime_reconcile_total{controller="expiry-deployment.apps",result="error"} 10
controller_runtime_reconcile_total{controller="expiry-namespace",result="success"} 102
controller_runtime_reconcile_total{controller="resourcequota",result="success"} 0
controller_runtime_active_workers{controller="expiry-deployment.apps"} 0
controller_runtime_active_workers{controller="expiry-namespace"} 1
workqueue_depth{controller="expiry-deployment.apps",name="expiry-deployment.apps",priority=""} 0
workqueue_depth{controller="expiry-namespace",name="expiry-namespace",priority="-100"} 2
workqueue_depth{controller="resourcequota",name="resourcequota",priority=""} 7
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 12
`

// The parser itself is tested in bench/internal/kmetrics; here, what the expiry bench reads.
func TestExpiryQueue(t *testing.T) {
	m, err := kmetrics.Parse(strings.NewReader(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	q, err := expiryQueue(m)
	if err != nil {
		t.Fatal(err)
	}
	if q != (kmetrics.Queue{Reconciles: 10000, Ready: 2, Active: 1}) {
		t.Errorf("queue: %+v", q)
	}
	if _, err := expiryQueue(nil); err == nil {
		t.Error("no metrics: no error")
	}
}

func TestPassDone(t *testing.T) {
	done := kmetrics.Queue{Reconciles: 120}
	for _, c := range []struct {
		name      string
		prev, cur kmetrics.Queue
		want      bool
	}{
		{"idle twice", done, done, true},
		{"more reconciles than objects", kmetrics.Queue{Reconciles: 150}, kmetrics.Queue{Reconciles: 150}, true},
		{"too few reconciles", kmetrics.Queue{Reconciles: 99}, kmetrics.Queue{Reconciles: 99}, false},
		{"reconciled in between", kmetrics.Queue{Reconciles: 119}, done, false},
		{"still queued", kmetrics.Queue{Reconciles: 120, Ready: 1}, done, false},
		{"one in progress", done, kmetrics.Queue{Reconciles: 120, Active: 1}, false},
	} {
		if got := passDone(c.prev, c.cur, 100); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRowsAndVerdicts(t *testing.T) {
	o := options{n: 100, idle: 30 * time.Second, scheduled: 2, farFuture: 30 * 24 * time.Hour}
	measured := kustosproc.Sample{HWMKiB: 1 << 20, RSSKiB: 1 << 19}
	good := result{atPass: measured, afterIdle: measured, end: measured, sched: make([]expirysched.Scheduled, 2),
		stats: expirysched.Stats{WarnLate: []time.Duration{time.Millisecond, 2 * time.Millisecond}, DueLate: []time.Duration{10 * time.Millisecond, 900 * time.Millisecond}}}
	check := func(name string, r result, want []report.Verdict, broken int) {
		t.Helper()
		rows := r.rows(o)
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d: %+v", name, len(rows), len(want), rows)
		}
		n := 0
		for i, row := range rows {
			if row.Verdict != want[i] {
				t.Errorf("%s: row %q: %s, want %s", name, row.Name, row.Verdict, want[i])
			}
			if row.Broken {
				n++
			}
		}
		if n != broken {
			t.Errorf("%s: %d broken rows, want %d", name, n, broken)
		}
	}
	all := []report.Verdict{report.None, report.None, report.None, report.Pass}
	check("good", good, all, 0)
	if table := render(good, o); !strings.Contains(table, "| ExpiryDue seen − due time (the deadline) | 2/2: p50 10.0 ms, p99 900.0 ms, max 900.0 ms; 0 early | p99 ≤ 1 s, none early | PASS |") ||
		!strings.Contains(table, "expires-at 30d ahead") {
		t.Errorf("table:\n%s", table)
	}

	slow := good
	slow.stats.DueLate = []time.Duration{10 * time.Millisecond, 1100 * time.Millisecond}
	check("slow", slow, []report.Verdict{report.None, report.None, report.None, report.Fail}, 0)

	bad := good
	bad.idleEvents = 1
	bad.stats.EarlyDue, bad.stats.MissingWarn = 1, 1
	bad.unexpected, bad.examples = 1, []string{"ExpiryWarning about Deployment expiry-001/env-00001"}
	check("broken", bad, []report.Verdict{report.None, report.None, report.None, report.Pass, report.None}, 4)
	if table := render(bad, o); !strings.Contains(table, "FAIL: 1 due early") || !strings.Contains(table, "FAIL: 1 never warned") {
		t.Errorf("table does not say what broke:\n%s", table)
	}

	check("not measured", result{}, []report.Verdict{report.None}, 1)
}

func TestPeakIsTheLargestReading(t *testing.T) {
	atPass := kustosproc.Sample{RSSKiB: 100 << 10, HWMKiB: 130 << 10}
	afterIdle := kustosproc.Sample{RSSKiB: 120 << 10, HWMKiB: 129 << 10} // Linux's mark lagged
	if p := peakMiB(atPass, afterIdle); p != 130 {
		t.Errorf("peak %v MiB, want 130", p)
	}
	r := result{atPass: atPass, afterIdle: afterIdle}
	rows := r.rows(options{n: 1, idle: time.Second})
	if len(rows) != 2 || !strings.Contains(rows[1].Measured, "RSS 120.0 MiB, peak RSS 130.0 MiB") {
		t.Errorf("idle row: %+v", rows)
	}
}
