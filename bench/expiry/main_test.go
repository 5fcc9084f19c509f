package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kevents"
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

func TestDeadlinesOnWholeSecondsInRange(t *testing.T) {
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	dl := deadlines(base, 50, 15*time.Second, 40*time.Second)
	if len(dl) != 50 || !dl[0].Equal(base.Add(15*time.Second)) || !dl[49].Equal(base.Add(40*time.Second)) {
		t.Fatalf("first %s, last %s", dl[0], dl[len(dl)-1])
	}
	for i, d := range dl {
		if d.Nanosecond() != 0 {
			t.Errorf("deadline %d: %s is not a whole second", i, d)
		}
		if i > 0 && d.Before(dl[i-1]) {
			t.Errorf("deadline %d before %d", i, i-1)
		}
	}
	if one := deadlines(base, 1, 15*time.Second, 40*time.Second); !one[0].Equal(base.Add(15 * time.Second)) {
		t.Errorf("one: %s", one[0])
	}
	d := deployment("ns", "x", "ana@example.com", base.Add(500*time.Millisecond))
	if d.Annotations[annotationExpiresAt] != "2026-11-24T10:00:00Z" || *d.Spec.Replicas != 0 {
		t.Errorf("deployment: %v, replicas %d", d.Annotations, *d.Spec.Replicas)
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

func TestAnalyze(t *testing.T) {
	dl := time.Date(2026, 11, 24, 10, 0, 30, 0, time.UTC)
	wb, iv := 10*time.Second, 5*time.Second
	seen := func(at time.Time, stamp time.Time) kevents.Seen {
		return kevents.Seen{Seen: at, Stamp: stamp, Count: 1}
	}
	ok := scheduled{key: "ok", deadline: dl,
		warn: seen(dl.Add(-wb+20*time.Millisecond), dl.Add(-wb)), due: seen(dl.Add(30*time.Millisecond), dl)}
	st := analyze([]scheduled{ok}, wb, iv)
	if len(st.dueLate) != 1 || st.dueLate[0] != 30*time.Millisecond || len(st.warnLate) != 1 || st.warnLate[0] != 20*time.Millisecond || !reflect.DeepEqual(counts(st), schedStats{}) {
		t.Fatalf("one on time: %+v", st)
	}

	earlySeen := ok
	earlySeen.due = seen(dl.Add(-time.Millisecond), dl.Add(-time.Second))
	decidedEarly := ok // seen after the deadline, but decided in the second before it
	decidedEarly.due = seen(dl.Add(5*time.Millisecond), dl.Add(-time.Second))
	warnedEarly := ok
	warnedEarly.warn = seen(dl.Add(-wb-time.Second), dl.Add(-wb-time.Second))
	lateWarning := ok // warned 6 s late: due at warned + 5 s, after the deadline
	lateWarning.warn = seen(dl.Add(-4*time.Second), dl.Add(-4*time.Second))
	lateWarning.due = seen(dl.Add(time.Second), dl.Add(time.Second))
	unwarned := ok
	unwarned.warn = kevents.Seen{}
	neverDue := ok
	neverDue.due = kevents.Seen{}
	twice := ok
	twice.due.Count, twice.warn.Count = 2, 3
	st = analyze([]scheduled{ok, earlySeen, decidedEarly, warnedEarly, lateWarning, unwarned, neverDue, twice}, wb, iv)
	want := schedStats{earlyDue: 2, earlyWarn: 1, unknown: 1, unwarned: 1, missingWarn: 1, missingDue: 1, dupDue: 1, dupWarn: 2}
	if got := counts(st); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// Left out of the lateness: the one warned too late (due time unknown), the unwarned one
	// and the one never due.
	if len(st.dueLate) != 5 || len(st.warnLate) != 7 {
		t.Errorf("%d due and %d warning samples, want 5 and 7", len(st.dueLate), len(st.warnLate))
	}
}

// counts is st without its samples, to compare.
func counts(st schedStats) schedStats {
	st.warnLate, st.dueLate = nil, nil
	return st
}

func TestRowsAndVerdicts(t *testing.T) {
	o := options{n: 100, idle: 30 * time.Second, scheduled: 2, farFuture: 30 * 24 * time.Hour}
	measured := kustosproc.Sample{HWMKiB: 1 << 20, RSSKiB: 1 << 19}
	good := result{atPass: measured, afterIdle: measured, end: measured, sched: make([]scheduled, 2),
		stats: schedStats{warnLate: []time.Duration{time.Millisecond, 2 * time.Millisecond}, dueLate: []time.Duration{10 * time.Millisecond, 900 * time.Millisecond}}}
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
	slow.stats.dueLate = []time.Duration{10 * time.Millisecond, 1100 * time.Millisecond}
	check("slow", slow, []report.Verdict{report.None, report.None, report.None, report.Fail}, 0)

	bad := good
	bad.idleEvents = 1
	bad.stats.earlyDue, bad.stats.missingWarn = 1, 1
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
