package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
	"github.com/kustos-dev/kustos/internal/activity"
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
	if o.n != 10000 || o.namespaces != 100 || o.active != 100 || o.cycles != 4 || o.interval != 15*time.Second ||
		o.timeout != time.Hour || o.minStep != 15*time.Second || o.lookback != time.Hour || o.poll != 200*time.Millisecond || !o.Strict {
		t.Errorf("defaults: %+v", o)
	}
	for _, bad := range [][]string{
		{},
		{"-kustos", exe, "extra"},
		{"-kustos", filepath.Dir(exe)},
		{"-kustos", exe, "-n", "0"},
		{"-kustos", exe, "-active", "10001"},
		{"-kustos", exe, "-interval", "500ms"},
		{"-kustos", exe, "-lookback", "10s"},    // shorter than the interval: Kustos refuses it
		{"-kustos", exe, "-timeout", "5m"},      // targets would become idle during the run
		{"-kustos", exe, "-scrape", "20s"},      // scraped less often than checked
		{"-kustos", exe, "-poll", "5s"},         // too coarse for a 15 s cycle
		{"-kustos", exe, "-cycles", "0"},        // nothing measured
		{"-kustos", exe, "-pass-timeout", "0s"}, // no time for the pass
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The proxy tells the sources apart by the metric their query reads: the defaults' queries, as
// Kustos sends them, each name exactly one.
func TestSourceOfDefaultQueries(t *testing.T) {
	srcs := activity.DefaultSources()
	if len(srcs) != len(sourceMarkers) {
		t.Fatalf("%d default sources, %d markers", len(srcs), len(sourceMarkers))
	}
	for i, s := range srcs {
		q := "(" + s.Data + ") or label_replace(" + s.Available + `, "kustos_source_available", "1", "", "")`
		if got := sourceOf(q); got != s.Name || got != sourceMarkers[i].source {
			t.Errorf("source %s: sourceOf = %q", s.Name, got)
		}
	}
	if sourceOf("up") != "" || sourceOf(metricNginxRequests+" + "+metricBastion) != "?" {
		t.Error("no source, or two")
	}
}

func TestProxyRecordsQueries(t *testing.T) {
	var bodies []string
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		bodies = append(bodies, r.URL.Path+" "+r.Form.Get("query"))
		if r.URL.Path == "/nope" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"status":"success"}`)
	}))
	defer prom.Close()
	ctx := context.Background()
	p, err := startProxy(ctx, prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.close(ctx) }()
	do := func(method, path string, form url.Values) {
		t.Helper()
		var body io.Reader = http.NoBody
		u := p.URL + path
		if method == http.MethodPost {
			body = strings.NewReader(form.Encode())
		} else if form != nil {
			u += "?" + form.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, method, u, body)
		if err != nil {
			t.Fatal(err)
		}
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	do(http.MethodPost, pathQuery, url.Values{"query": {"count(" + metricBastion + ")"}})
	do(http.MethodGet, pathQueryRange, url.Values{"query": {"sum(" + metricNginxRequests + ")"}})
	do(http.MethodGet, "/nope", nil)
	rs := p.requests()
	if len(rs) != 3 {
		t.Fatalf("%d requests recorded: %+v", len(rs), rs)
	}
	if rs[0].path != pathQuery || rs[0].source != "bastion" || rs[0].status != 200 || !rs[0].isQuery() || rs[0].end.Before(rs[0].start) {
		t.Errorf("POST query: %+v", rs[0])
	}
	if rs[1].path != pathQueryRange || rs[1].source != "nginx" || !rs[1].isQuery() {
		t.Errorf("GET range query: %+v", rs[1])
	}
	if rs[2].isQuery() || rs[2].status != http.StatusNotFound {
		t.Errorf("other path: %+v", rs[2])
	}
	// The body the proxy read still reached Prometheus.
	if len(bodies) != 3 || bodies[0] != pathQuery+" count("+metricBastion+")" {
		t.Errorf("Prometheus saw %q", bodies)
	}
}

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func req(path, source string, startMs, endMs int) request {
	return request{path: path, source: source, start: at(startMs), end: at(endMs), status: 200}
}

func TestGroupCycles(t *testing.T) {
	rs := []request{
		req(pathQuery, "bastion", 60, 90), // out of order: answers are recorded as they finish
		req(pathQuery, "nginx", 0, 50),
		req(pathQuery, "nginx", 15000, 15040),
		req(pathQuery, "bastion", 15041, 15070),
		req(pathQuery, "nginx", 30500, 30600), // a late check still starts a cycle of its own
	}
	g := groupCycles(rs, 15*time.Second)
	if len(g) != 3 || len(g[0]) != 2 || len(g[1]) != 2 || len(g[2]) != 1 || g[0][0].source != "nginx" {
		t.Fatalf("groups: %+v", g)
	}
}

// obsAt is an observation: reconciles, ready, active, checks, check seconds, CPU ms.
func obsAt(ms int, rec, ready, active, checks, checkSum float64, cpuMs int) observation {
	return observation{at: at(ms), q: kmetrics.Queue{Reconciles: rec, Ready: ready, Active: active},
		sum: rec * 0.0002, checks: checks, checkSum: checkSum, queries: checks * 2, ok: checks * 2, apiRequests: checks * 10,
		proc: kustosproc.Sample{CPU: time.Duration(cpuMs) * time.Millisecond, RSSKiB: 1 << 18, HWMKiB: 1 << 18}}
}

func TestAnalyze(t *testing.T) {
	const n = 100
	groups := [][]request{
		{req(pathQuery, "nginx", 1000, 1030), req(pathQuery, "bastion", 1031, 1050)},
		{req(pathQuery, "nginx", 16000, 16020), req(pathQuery, "bastion", 16021, 16040)},
		{req(pathQuery, "nginx", 31000, 31020), req(pathQuery, "bastion", 31021, 31045)},
	}
	obs := []observation{
		{at: at(0)},
		// Cycle 1: the check (0.05 s) lands between 800 and 1200; 100 reconciles follow, idle
		// twice from 1600.
		obsAt(800, 0, 0, 0, 0, 0, 100),
		obsAt(1200, 30, 60, 4, 1, 0.05, 300),
		obsAt(1400, 90, 6, 4, 1, 0.05, 500),
		obsAt(1600, 100, 0, 0, 1, 0.05, 600),
		obsAt(1800, 100, 0, 0, 1, 0.05, 610),
		// Cycle 2: a few stale reconciles before its answer, then 100 more; still busy when
		// cycle 3 starts.
		obsAt(15900, 110, 0, 0, 1, 0.05, 700),
		obsAt(16030, 112, 0, 0, 1, 0.05, 710),
		obsAt(16200, 150, 50, 4, 2, 0.09, 900),
		obsAt(30900, 205, 7, 4, 2, 0.09, 1500),
		// Cycle 3: decided, but no cycle after it: not complete.
		obsAt(31200, 260, 0, 4, 3, 0.12, 1600),
		obsAt(31400, 305, 0, 0, 3, 0.12, 1700),
		obsAt(31600, 305, 0, 0, 3, 0.12, 1700),
	}
	cs := analyze(groups, obs, n)
	if len(cs) != 3 {
		t.Fatalf("%d cycles", len(cs))
	}
	c := cs[0]
	if c.queries != 2 || c.bySource["nginx"] != 1 || c.bySource["bastion"] != 1 || c.promTime != 49*time.Millisecond || !c.end.Equal(at(1050)) {
		t.Errorf("cycle 1 queries: %+v", c)
	}
	if !c.checkKnown || c.check != 50*time.Millisecond {
		t.Errorf("cycle 1 check: %v %s", c.checkKnown, c.check)
	}
	if !c.settled || !c.decided.Equal(at(1600)) || c.decideWall() != 600*time.Millisecond || c.afterAnswer() != 550*time.Millisecond ||
		c.reconciles != 100 || c.cpuDecide != 500*time.Millisecond || c.meanRec != 200*time.Microsecond {
		t.Errorf("cycle 1 decided: settled %v at %s, %v reconciles, CPU %s, mean %s", c.settled, c.decided, c.reconciles, c.cpuDecide, c.meanRec)
	}
	if !c.complete || c.period != 15100*time.Millisecond || c.cpu != 600*time.Millisecond || c.kustosQueries != 2 || c.okQueries != 2 || c.apiRequests != 10 {
		t.Errorf("cycle 1 totals: %+v", c)
	}
	c = cs[1]
	if c.settled || !c.checkKnown || c.check != 40*time.Millisecond || !c.complete {
		t.Errorf("cycle 2 (busy until the next): settled %v, check %v %s, complete %v", c.settled, c.checkKnown, c.check, c.complete)
	}
	c = cs[2]
	// Reconciles counted from the last read before the answer (30900: 205).
	if !c.settled || !c.decided.Equal(at(31400)) || c.reconciles != 100 || c.complete {
		t.Errorf("cycle 3: settled %v at %s, %v reconciles, complete %v", c.settled, c.decided, c.reconciles, c.complete)
	}
}

// fine is a result whose every measure is within its target.
func fine(o options) result {
	proc := kustosproc.Sample{RSSKiB: 300 << 10, HWMKiB: 320 << 10, CPU: 4 * time.Second}
	r := result{sources: 2, atPass: proc, end: proc, peak: proc, endHeap: 150 << 20}
	for i := 1; i <= 5; i++ {
		c := cycle{index: i, start: at(i * 15000), end: at(i*15000 + 40), queries: 2, bySource: map[string]int{"nginx": 1, "bastion": 1},
			promTime: 40 * time.Millisecond, check: 45 * time.Millisecond, checkKnown: true, settled: true, decided: at(i*15000 + 2500),
			reconciles: float64(o.n), meanRec: 300 * time.Microsecond, cpuDecide: 2 * time.Second,
			complete: i < 5, period: 15 * time.Second, cpu: 3 * time.Second, apiRequests: 102, kustosQueries: 2, okQueries: 2, allocated: 64 << 20}
		r.cycles = append(r.cycles, c)
		if i > 1 && c.complete {
			r.measured = append(r.measured, c)
		}
	}
	r.activity = activityCheck{leases: 100, seen: 100}
	return r
}

func TestRowsAndVerdicts(t *testing.T) {
	o := options{n: 10000, namespaces: 100, active: 100, cycles: 3, interval: 15 * time.Second, lookback: time.Hour, timeout: time.Hour,
		minStep: 15 * time.Second, scrape: 5 * time.Second, poll: 200 * time.Millisecond}
	r := fine(o)
	if bad := r.broken(o); bad != "" {
		t.Fatalf("fine result broken: %s", bad)
	}
	table := render(r, o)
	for _, want := range []string{
		"| Prometheus queries per check cycle (counted by the proxy) | 2 in each over 5 cycles (10 instant, 0 range queries; 0 requests to other paths); in the 3 measured cycles Kustos's kustos_activity_queries_total rose by 6 | = sources (2) | PASS |",
		"10,000 targets × 2 sources = 20,000 queries per cycle, 1,333 a second at a 15s interval",
		"| one cycle's wall time: first query → all 10,000 targets decided | p50 2.50 s, max 2.50 s (after the last answer: p50 2.46 s, max 2.46 s); 10000 reconciles per cycle, mean 300 µs each | < interval (15s) | PASS |",
		"3.00 s per 15.0 s cycle (20% of one core)",
		"RSS 300.0 MiB at the end, peak RSS 320.0 MiB (largest VmHWM read; largest RSS read 300.0 MiB); Go heap 150.0 MiB at the end; 64.0 MiB allocated per cycle",
		"| activity seen: state Leases holding a last activity | 100/100 targets in use, 0 idle ones (100 inactivity Leases) | the targets in use, only them | PASS |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}

	// One query too many in one cycle: the property the bench exists for; broken, loudly.
	extra := fine(o)
	extra.cycles[2].queries, extra.cycles[2].bySource = 3, map[string]int{"nginx": 2, "bastion": 1}
	if bad := extra.broken(o); !strings.Contains(bad, "cycle 3 asked nginx 2 times") || !strings.Contains(bad, "cycle 3: 3 queries") {
		t.Errorf("three queries: %q", bad)
	}
	if table := render(extra, o); !strings.Contains(table, "2 in 4, 3 in 1") || !strings.Contains(table, "FAIL: cycle 3") {
		t.Errorf("table does not say what broke:\n%s", table)
	}
	// A source that was not ok: the queries measured nothing real.
	down := fine(o)
	down.measured[0].okQueries = 1
	if bad := down.broken(o); !strings.Contains(bad, "1 sources answered ok") {
		t.Errorf("a source down: %q", bad)
	}
	// Activity not seen, or seen on an idle target.
	blind := fine(o)
	blind.activity = activityCheck{leases: 99, seen: 98, missing: []string{"inact-000/env-00000 (nginx)"}, idleSeen: 1, idleExamples: []string{"inact-001/env-00001"}}
	if bad := blind.broken(o); !strings.Contains(bad, "2 in use without one") || !strings.Contains(bad, "1 idle with one") {
		t.Errorf("activity: %q", bad)
	}
	// A Lease for every target (each a write at start), though only those in use have state.
	crowded := fine(o)
	crowded.activity = activityCheck{leases: 10000, seen: 100}
	if bad := crowded.broken(o); !strings.Contains(bad, "10000 state Leases for 100 targets in use") {
		t.Errorf("crowded: %q", bad)
	}
	// Too slow: a missed target, not a broken measurement.
	slow := fine(o)
	slow.measured[1].settled = false
	var wall report.Row
	for _, row := range slow.rows(o) {
		if strings.HasPrefix(row.Name, "one cycle's wall time") {
			wall = row
		}
	}
	if wall.Verdict != report.Fail || wall.Broken || !strings.Contains(wall.Why, "1 cycles not decided") {
		t.Errorf("slow: %+v", wall)
	}
	// Too few cycles.
	short := fine(o)
	short.measured = short.measured[:1]
	if bad := short.broken(o); !strings.Contains(bad, "too few cycles") {
		t.Errorf("short: %q", bad)
	}
	if bad := (result{}).broken(o); !strings.Contains(bad, "not measured") {
		t.Errorf("nothing measured: %q", bad)
	}
}

func TestActiveTargets(t *testing.T) {
	a := activeTargets(10000, 100, 100)
	if len(a) != 100 || a[0].String() != "inact-000/env-00000" || a[0].Source != "nginx" ||
		a[1].String() != "inact-000/env-00100" || a[1].Source != "bastion" || a[99].String() != "inact-000/env-09900" {
		t.Errorf("active: %v %v %v", a[0], a[1], a[99])
	}
	if a := activeTargets(500, 10, 10); a[3].String() != "inact-000/env-00150" {
		t.Errorf("active[3] = %v", a[3])
	}
	if activeTargets(10, 1, 0) != nil {
		t.Error("none active")
	}
	c := compareActivity(a[:3], 4, map[string]bool{"inact-000/env-00000": true, "inact-000/env-00100": true, "inact-001/env-00001": true})
	if c.leases != 4 || c.seen != 2 || len(c.missing) != 1 || !strings.Contains(c.missing[0], "env-00200 (nginx)") || c.idleSeen != 1 {
		t.Errorf("compare: %+v", c)
	}
}

func TestThousandsAndCounts(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q", n, got)
		}
	}
	if countsString(map[int]int{2: 6}) != "2 in each" || countsString(map[int]int{3: 1, 2: 5}) != "2 in 5, 3 in 1" {
		t.Error("countsString")
	}
}
