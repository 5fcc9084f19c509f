package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/expirysched"
	"github.com/kustos-dev/kustos/bench/internal/kevents"
	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

func fakeKustos(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kustos")
	if err := os.WriteFile(p, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFlags(t *testing.T) {
	k := fakeKustos(t)
	o, err := parseFlags([]string{"-kustos", k}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.fullSize() || o.idle != time.Minute || o.churn != 0 || !o.Strict || o.checkInterval != 30*time.Second {
		t.Errorf("defaults: %+v", o)
	}
	if _, err := parseFlags([]string{"-kustos", k, "-churn", "30m"}, io.Discard); err != nil {
		t.Errorf("-churn 30m: %v", err)
	}
	if o, err := parseFlags([]string{"-kustos", k, "-namespaces", "200"}, io.Discard); err != nil || o.fullSize() {
		t.Errorf("a smoke run: %v, full size %v", err, o.fullSize())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-kustos is required"},
		{[]string{"-kustos", k, "-namespaces", "0"}, "-namespaces"},
		{[]string{"-kustos", k, "-deployments", "100", "-cleaners", "81"}, "only 80 ordinary Deployments"},
		{[]string{"-kustos", k, "-namespaces", "50"}, "-quota-samples=100"},
		{[]string{"-kustos", k, "-cleaners", "10"}, "-cleaner-samples=20"},
		{[]string{"-kustos", k, "-warning-before", "5s"}, "-notification-interval < -warning-before"},
		{[]string{"-kustos", k, "-from", "5s"}, "-warning-before + 3s"},
		{[]string{"-kustos", k, "-check-interval", "1500ms"}, "-check-interval"},
		{[]string{"-kustos", k, "-churn", "2m"}, "a sixth of it must be at least 6 × -churn-tick (5s)"},
		{[]string{"-kustos", k, "-churn", "60s", "-churn-tick", "2s"}, "steady number"},
		{[]string{"-kustos", k, "-idle", "-1s"}, "must not be negative"},
		{[]string{"-kustos", k, "extra"}, "unexpected arguments"},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

func TestShape(t *testing.T) {
	s := newShape(10, 100, 20)
	if len(s.expiry) != 10 || len(s.inactivity) != 10 || len(s.ordinary) != 80 {
		t.Fatalf("roles: %d expiry, %d inactivity, %d ordinary", len(s.expiry), len(s.inactivity), len(s.ordinary))
	}
	exp := time.Date(2026, 12, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		i           int
		annotations []string
	}{
		{0, nil},
		{1, []string{expirysched.AnnotationOwner, expirysched.AnnotationExpiresAt}},
		{2, []string{expirysched.AnnotationOwner, annotationInactivityTimeout}},
		{13, nil},
	} {
		d := s.deployment(tc.i, exp)
		if d.Namespace != namespaceName(tc.i%10) || d.Name != deploymentName(tc.i) || *d.Spec.Replicas != 1 || len(d.Annotations) != len(tc.annotations) {
			t.Errorf("deployment %d: %s/%s %v", tc.i, d.Namespace, d.Name, d.Annotations)
		}
		for _, a := range tc.annotations {
			if d.Annotations[a] == "" {
				t.Errorf("deployment %d: no %s", tc.i, a)
			}
		}
	}
	all, active := s.activity()
	if len(all) != 10 || len(active) != 9 || active[0].Source == active[1].Source {
		t.Errorf("activity: %d series, %d active %v", len(all), len(active), active)
	}
	shared := 0
	for j := 0; j < 20; j++ {
		cl := s.cleaner(j)
		tgt := s.cleanerTarget(j)
		if roleOf(tgt) != ordinary || cl.Namespace != s.namespaceOf(tgt) || cl.Spec.Targets[0].Reference.Name != deploymentName(tgt) {
			t.Errorf("cleaner %d: %+v over Deployment %d", j, cl, tgt)
		}
		if cl.Spec.Conditions[0] == sharedCondition {
			shared++
		}
	}
	if shared != 18 {
		t.Errorf("%d of 20 Cleaners share the condition, want 18", shared)
	}
}

func queue(reconciles, ready float64) kmetrics.Queue {
	return kmetrics.Queue{Reconciles: reconciles, Ready: ready}
}

func TestSettled(t *testing.T) {
	targets := map[string]float64{ctrlQuota: 10, ctrlCleaner: 5}
	ob := func(q, c kmetrics.Queue) observation {
		return observation{queues: map[string]kmetrics.Queue{ctrlQuota: q, ctrlCleaner: c}}
	}
	for _, tc := range []struct {
		name      string
		prev, cur observation
		want      bool
	}{
		{"both done", ob(queue(10, 0), queue(5, 0)), ob(queue(10, 0), queue(5, 0)), true},
		{"one short", ob(queue(10, 0), queue(4, 0)), ob(queue(10, 0), queue(4, 0)), false},
		{"one busy", ob(queue(10, 0), queue(5, 1)), ob(queue(10, 0), queue(5, 0)), false},
		{"reconciled in between", ob(queue(10, 0), queue(5, 0)), ob(queue(11, 0), queue(5, 0)), false},
		{"a controller missing", observation{queues: map[string]kmetrics.Queue{ctrlQuota: queue(10, 0)}}, ob(queue(10, 0), queue(5, 0)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := settled(tc.prev, tc.cur, targets); got != tc.want {
				t.Errorf("settled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	m, err := kmetrics.Parse(strings.NewReader(`controller_runtime_reconcile_total{controller="quota",result="success"} 7
controller_runtime_active_workers{controller="quota"} 0
workqueue_depth{controller="quota",name="quota",priority=""} 2
kustos_activity_queries_total{source="nginx",status="ok"} 3
kustos_activity_queries_total{source="bastion",status="ok"} 4
go_gc_heap_live_bytes 1.048576e+07
go_memstats_heap_inuse_bytes 2.097152e+07
`))
	if err != nil {
		t.Fatal(err)
	}
	ob := observe(time.Now(), m)
	if q := ob.queues[ctrlQuota]; q.Reconciles != 7 || q.Ready != 2 || len(ob.queues) != 1 || ob.queries != 7 {
		t.Errorf("observation: %+v", ob)
	}
	if !ob.heap.ok || ob.heap.String() != "10.0 MiB (in use 20.0 MiB)" {
		t.Errorf("heap: %+v %s", ob.heap, ob.heap)
	}
	if h := observe(time.Now(), nil).heap; h.ok || h.String() != "–" {
		t.Errorf("no heap metrics: %+v", h)
	}
}

func TestFindCycles(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	// ob: a read at ms after t0, with the queries counted so far and the inactivity queue.
	ob := func(ms int, queries, reconciles, ready float64) observation {
		return observation{at: t0.Add(time.Duration(ms) * time.Millisecond), queries: queries,
			queues: map[string]kmetrics.Queue{ctrlInactivity: queue(reconciles, ready)}}
	}
	obs := []observation{
		ob(0, 2, 100, 0), // the first check, before from
		ob(200, 2, 100, 0),
		ob(400, 3, 100, 0), // a check: its first query counted
		ob(600, 4, 140, 50),
		ob(800, 4, 200, 0),  // 100 reconciles since, idle...
		ob(1000, 4, 200, 0), // ...twice: decided at 800
		ob(5000, 4, 200, 0),
		ob(5200, 6, 200, 0), // the next check: both queries in one read
		ob(5400, 6, 250, 10),
		ob(5600, 6, 260, 0), // idle, but only 60 since
		ob(5800, 6, 260, 0),
		ob(9800, 6, 260, 0),
		ob(10000, 7, 260, 0), // a third check, never decided: the run ended
		ob(10200, 8, 300, 5),
	}
	cs := findCycles(obs, t0.Add(100*time.Millisecond), 100)
	if len(cs) != 3 {
		t.Fatalf("%d cycles, want 3: %+v", len(cs), cs)
	}
	if !cs[0].complete || cs[0].wall() != 600*time.Millisecond || !cs[0].start.Equal(t0.Add(200*time.Millisecond)) {
		t.Errorf("cycle 0: %+v, wall %s", cs[0], cs[0].wall())
	}
	if cs[1].complete || !cs[1].start.Equal(t0.Add(5*time.Second)) {
		t.Errorf("cycle 1 (too few reconciles, then the next check): %+v", cs[1])
	}
	if cs[2].complete || !cs[2].start.Equal(t0.Add(9800*time.Millisecond)) {
		t.Errorf("cycle 2 (cut off): %+v", cs[2])
	}
	if got := findCycles(obs, t0.Add(6*time.Second), 100); len(got) != 1 {
		t.Errorf("cycles after 6 s: %+v", got)
	}
}

func TestGrowth(t *testing.T) {
	mib := func(f float64) float64 { return f * (1 << 20) }
	minute := func(m int, live float64) heapSample {
		return heapSample{at: time.Duration(m) * time.Minute, live: mib(live)}
	}
	var flat, grown []heapSample
	for m := 1; m <= 30; m++ {
		flat = append(flat, minute(m, 60+float64(m%3))) // noise, no trend
		grown = append(grown, minute(m, 50+float64(m))) // 55 MiB at minute 5, 80 at 30
	}
	for _, tc := range []struct {
		name    string
		samples []heapSample
		churn   time.Duration
		refAt   time.Duration
		g       float64
		ok      bool
		pass    bool
	}{
		{"flat over 30 minutes", flat, 30 * time.Minute, 5 * time.Minute, 0, true, true},
		{"growing", grown, 30 * time.Minute, 5 * time.Minute, 77.5/57 - 1, true, false},
		{"one high reading at the end", append(append([]heapSample(nil), flat[:29]...), minute(30, 90)), 30 * time.Minute, 5 * time.Minute, 61.5/61 - 1, true, true},
		{"short churn: the first sixth", []heapSample{{10 * time.Second, mib(40)}, {20 * time.Second, mib(50)}, {60 * time.Second, mib(54)}}, time.Minute, 10 * time.Second, 54.0/40 - 1, true, false},
		{"exactly 10%", []heapSample{minute(5, 100), minute(30, 110)}, 30 * time.Minute, 5 * time.Minute, 0.1, true, true},
		{"one reading", []heapSample{minute(5, 100)}, 30 * time.Minute, 0, 0, false, false},
		{"nothing after the reference", []heapSample{minute(1, 100), minute(2, 100)}, 30 * time.Minute, 0, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, _, g, ok := growth(tc.samples, tc.churn)
			if ok != tc.ok || (ok && (ref.at != tc.refAt || g-tc.g > 1e-9 || tc.g-g > 1e-9)) {
				t.Fatalf("growth = ref %s, %.4f, %v; want ref %s, %.4f, %v", ref.at, g, ok, tc.refAt, tc.g, tc.ok)
			}
			row := churnRow(churnResult{heap: tc.samples}, options{churn: tc.churn})
			if row.Broken == tc.ok || (tc.ok && (row.Verdict == report.Pass) != tc.pass) {
				t.Errorf("row %+v: want broken %v, pass %v", row, !tc.ok, tc.pass)
			}
		})
	}
	if d := heapEvery(options{churn: 30 * time.Minute, heapEvery: time.Minute}); d != time.Minute {
		t.Errorf("heap every %s over 30m", d)
	}
	if d := heapEvery(options{churn: 60 * time.Second, heapEvery: time.Minute}); d != 10*time.Second {
		t.Errorf("heap every %s over 60s", d)
	}
}

func TestCPUPercent(t *testing.T) {
	if p := cpuPercent(1200*time.Millisecond, time.Minute); p != 2 {
		t.Errorf("1.2 s over a minute: %v%%", p)
	}
	if p := cpuPercent(time.Second, 0); p != 0 {
		t.Errorf("no span: %v", p)
	}
}

// full is a full-size run that met every target.
func full() (options, result) {
	o := options{namespaces: fullNamespaces, deployments: fullDeployments, cleaners: fullCleaners, events: fullEvents,
		idle: time.Minute, timeout: 30 * time.Second, checkInterval: 30 * time.Second, poll: 200 * time.Millisecond, cleanerSamples: 2}
	ms := func(d ...int) []time.Duration {
		out := make([]time.Duration, len(d))
		for i, v := range d {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	mem := kustosproc.Sample{HWMKiB: 150 << 10, RSSKiB: 140 << 10, AnonKiB: 100 << 10, CPU: 10 * time.Second}
	idle := mem
	idle.CPU += 600 * time.Millisecond // 1% of a core
	r := result{
		pass: 40 * time.Second, steady: 45 * time.Second, atPass: mem, beforeIdle: mem, afterIdle: idle, end: idle, idle: time.Minute,
		quota:   samples{expected: 2, latencies: ms(10, 40)},
		cleaner: samples{expected: 2, latencies: ms(10, 30)},
		expiry: expirysched.Group{Scheduled: make([]expirysched.Scheduled, 2),
			Stats: expirysched.Stats{DueLate: ms(100, 900)}},
		cycles: []cycle{{start: time.Unix(0, 0), decided: time.Unix(2, 0), complete: true}},
	}
	return o, r
}

func TestVerdicts(t *testing.T) {
	o, good := full()
	for _, tc := range []struct {
		name   string
		change func(*options, *result)
		missed []string // rows that miss their target
		broken []string // rows whose measurement broke
	}{
		{"every target met", func(*options, *result) {}, nil, nil},
		{"peak RSS", func(_ *options, r *result) { r.afterIdle.HWMKiB = 197 << 10 }, []string{"peak RSS"}, nil},
		{"anonymous", func(_ *options, r *result) { r.atPass.AnonKiB = 121 << 10 }, []string{"anonymous RSS"}, nil},
		{"idle CPU", func(_ *options, r *result) { r.afterIdle.CPU = r.beforeIdle.CPU + 1300*time.Millisecond }, []string{"CPU over the idle"}, nil},
		{"quota slower than the reference", func(_ *options, r *result) { r.quota.latencies[1] = quotaRefP99 }, []string{"quota"}, nil},
		{"a quota never answered", func(_ *options, r *result) { r.quota.expected = 3 }, nil, []string{"quota"}},
		{"expiry late", func(_ *options, r *result) { r.expiry.Stats.DueLate[1] = 1001 * time.Millisecond }, []string{"expiry"}, nil},
		{"expiry early", func(_ *options, r *result) { r.expiry.Stats.EarlyDue = 1 }, nil, []string{"expiry"}},
		{"Cleaner slow", func(_ *options, r *result) { r.cleaner.latencies[1] = 51 * time.Millisecond }, []string{"Cleaners"}, nil},
		{"cycle too long", func(_ *options, r *result) { r.cycles[0].decided = time.Unix(30, 0) }, []string{"inactivity"}, nil},
		{"no cycle", func(_ *options, r *result) { r.cycles = nil }, nil, []string{"inactivity"}},
		{"Events while idle", func(_ *options, r *result) { r.idleEvents = 1 }, nil, []string{"Kustos Events while idle"}},
		{"not the full size: no verdict", func(o *options, r *result) { o.namespaces = 200; r.afterIdle.HWMKiB = 500 << 10 }, nil, nil},
		{"churn grew", func(o *options, r *result) {
			o.churn = 30 * time.Minute
			r.churn = &churnResult{heap: []heapSample{{5 * time.Minute, 100}, {30 * time.Minute, 111}}}
		}, []string{"churn"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, r := full()
			r.quota.latencies = append([]time.Duration(nil), good.quota.latencies...)
			tc.change(&o, &r)
			table := r.table(o)
			var missed, broken []string
			for _, row := range table.Rows {
				if row.Verdict == report.Fail {
					missed = append(missed, row.Name)
				}
				if row.Broken {
					broken = append(broken, row.Name)
				}
			}
			if !matches(missed, tc.missed) || !matches(broken, tc.broken) {
				t.Errorf("missed %q, broken %q; want %q, %q\n%s", missed, broken, tc.missed, tc.broken, table)
			}
			if o.fullSize() && len(tc.missed) == 0 && len(tc.broken) == 0 {
				for _, row := range table.Rows {
					if row.Target != "– (reported)" && row.Verdict != report.Pass {
						t.Errorf("row %q: %s, want PASS", row.Name, row.Verdict)
					}
				}
			}
		})
	}
	_ = o
}

// matches: each of want is the prefix of exactly one of got, and nothing else is in got.
func matches(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}

func TestRenderNotMeasured(t *testing.T) {
	o, _ := full()
	r := result{err: errTest("starting Prometheus: no | bin")}
	table := r.table(o)
	if !table.Broken() || !strings.Contains(render(r, o, table), `FAIL: starting Prometheus: no \| bin`) {
		t.Errorf("a run that failed early:\n%s", render(r, o, table))
	}
	_ = kevents.Component
}

type errTest string

func (e errTest) Error() string { return string(e) }
