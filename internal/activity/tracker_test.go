package activity

import (
	"testing"
	"time"
)

// TestTracker walks the tracker through the life of two sources: the first check covers the
// lookback; later windows reach back to the last ok answer; an unavailable source makes every
// target unknown and restarts its coverage when it answers again (its data may have a hole);
// an unreachable Prometheus does not (the next window covers the time in between); a break the
// availability query found inside a window (CollectingSince) moves the coverage past it.
func TestTracker(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	lookback := 14 * 24 * time.Hour
	vm1 := Ref{Namespace: "lab", Name: "vm-1"}
	refs := map[string]Ref{"nginx": vm1, "bastion": vm1}
	names := []string{"nginx", "bastion"}
	ok := func(name string, last map[Ref]time.Time) SourceResult {
		return SourceResult{Name: name, Status: StatusOK, Last: last}
	}
	tr := &Tracker{Lookback: lookback}

	type step struct {
		name    string
		at      time.Time
		sources []SourceResult
		// want, after Observe
		window  time.Duration // Window at `at` + 5m, margin 6m
		known   bool
		last    time.Time
		covered time.Time
	}
	steps := []step{
		{name: "before any check: the next window is the lookback, nothing known", at: t0, window: lookback},
		{name: "first check: covered since t0 − lookback", at: t0,
			sources: []SourceResult{ok("nginx", map[Ref]time.Time{vm1: t0.Add(-3 * 24 * time.Hour)}), ok("bastion", nil)},
			window:  11 * time.Minute, known: true, last: t0.Add(-3 * 24 * time.Hour), covered: t0.Add(-lookback)},
		{name: "ssh activity later: the latest of both", at: t0.Add(5 * time.Minute),
			sources: []SourceResult{ok("nginx", nil), ok("bastion", map[Ref]time.Time{vm1: t0.Add(4 * time.Minute)})},
			window:  11 * time.Minute, known: true, last: t0.Add(4 * time.Minute), covered: t0.Add(-lookback)},
		{name: "Prometheus unreachable for nginx: unknown, the next window reaches back to its last answer", at: t0.Add(10 * time.Minute),
			sources: []SourceResult{{Name: "nginx", Status: StatusError, Detail: "connection refused"}, ok("bastion", nil)},
			window:  16 * time.Minute, known: false, last: t0.Add(4 * time.Minute), covered: t0.Add(-lookback)},
		{name: "reachable again: coverage unchanged", at: t0.Add(15 * time.Minute),
			sources: []SourceResult{ok("nginx", nil), ok("bastion", nil)},
			window:  11 * time.Minute, known: true, last: t0.Add(4 * time.Minute), covered: t0.Add(-lookback)},
		{name: "bastion not collecting: unknown", at: t0.Add(20 * time.Minute),
			sources: []SourceResult{ok("nginx", nil), {Name: "bastion", Status: StatusUnavailable, Detail: "no samples"}},
			window:  16 * time.Minute, known: false, last: t0.Add(4 * time.Minute), covered: t0.Add(-lookback)},
		{name: "bastion collecting again: its silence counts only from now", at: t0.Add(25 * time.Minute),
			sources: []SourceResult{ok("nginx", nil), ok("bastion", nil)},
			window:  11 * time.Minute, known: true, last: t0.Add(4 * time.Minute), covered: t0.Add(25 * time.Minute)},
		{name: "nginx had a break between two checks (its availability found nothing at a step): covered only since", at: t0.Add(30 * time.Minute),
			sources: []SourceResult{{Name: "nginx", Status: StatusOK, CollectingSince: t0.Add(28 * time.Minute)}, ok("bastion", nil)},
			window:  11 * time.Minute, known: true, last: t0.Add(4 * time.Minute), covered: t0.Add(28 * time.Minute)},
		{name: "weeks later: activity older than the lookback is forgotten (the Lease keeps it); the lookback-long window did not reach back to the last answer, so covered only since its start", at: t0.Add(lookback + time.Hour),
			sources: []SourceResult{ok("nginx", nil), ok("bastion", nil)},
			window:  11 * time.Minute, known: true, covered: t0.Add(time.Hour)},
	}
	for _, s := range steps {
		if s.sources != nil {
			tr.Observe(Result{At: s.at, Window: lookback, Sources: s.sources})
		}
		if w := tr.Window(s.at.Add(5*time.Minute), 6*time.Minute, names); w != s.window {
			t.Errorf("%s: window = %s, want %s", s.name, w, s.window)
		}
		a := tr.Lookup(refs)
		if a.Known() != s.known || !a.Last.Equal(s.last) || (s.known && !a.CoveredSince.Equal(s.covered)) {
			t.Errorf("%s: activity = known %v, last %s, covered since %s; want %v, %s, %s", s.name, a.Known(), a.Last, a.CoveredSince, s.known, s.last, s.covered)
		}
	}
	// A target a source cannot name (no Ref for it) is never known.
	if a := tr.Lookup(map[string]Ref{"nginx": vm1}); a.Known() {
		t.Errorf("a target without a bastion ref is known: %+v", a)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		`Post "https://kustos:s3cret@prometheus.example:9090/api/v1/query": dial tcp: refused`: `Post "https://***@prometheus.example:9090/api/v1/query": dial tcp: refused`,
		// Unencoded / and @ in the password: not a URL url.Parse reads as one.
		`--prometheus-url="https://kustos:s3/cr@t@prometheus.example:9090"`: `--prometheus-url="https://***@prometheus.example:9090"`,
		`no credentials: https://prometheus.example:9090/api`:               `no credentials: https://prometheus.example:9090/api`,
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestTrackerCoverageAfterOutage: a source's silence is evidence only where Kustos has queried
// it without a break. After an outage longer than the lookback (Prometheus unreachable or
// answering in part, this replica not the leader) the next window is capped at the lookback,
// so the time between the last ok answer and the start of that window was never queried: the
// coverage starts at the window's start, not where it was. Windows come from Tracker.Window,
// as the check loop asks.
func TestTrackerCoverageAfterOutage(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	lookback := 14 * day
	margin := 7 * time.Minute
	vm1 := Ref{Namespace: "lab", Name: "vm-1"}
	names := []string{"nginx"}
	type obs struct {
		after  time.Duration // since t0
		status Status
		// collectingSince, after t0, when not zero
		collectingSince time.Duration
	}
	for _, tc := range []struct {
		name string
		obs  []obs
		// want after the last observation, since t0
		covered time.Duration
	}{
		{"checks every 5 minutes: the first window's start", []obs{{0, StatusOK, 0}, {5 * time.Minute, StatusOK, 0}}, -lookback},
		{"Prometheus unreachable for a day: the next window reaches back, the coverage stays",
			[]obs{{0, StatusOK, 0}, {12 * time.Hour, StatusError, 0}, {day, StatusOK, 0}}, -lookback},
		{"Prometheus unreachable for three weeks: covered from the lookback-long window's start",
			[]obs{{0, StatusOK, 0}, {10 * day, StatusError, 0}, {21 * day, StatusOK, 0}}, 21*day - lookback},
		{"partial answers for three weeks: the same",
			[]obs{{0, StatusOK, 0}, {10 * day, StatusPartial, 0}, {21 * day, StatusOK, 0}}, 21*day - lookback},
		{"no check for three weeks (this replica was not the leader)",
			[]obs{{0, StatusOK, 0}, {21 * day, StatusOK, 0}}, 21*day - lookback},
		{"three weeks, and a break inside the window later than its start: from the break",
			[]obs{{0, StatusOK, 0}, {21 * day, StatusOK, 20 * day}}, 20 * day},
		{"three weeks, the source not collecting before: from its return, as always",
			[]obs{{0, StatusOK, 0}, {day, StatusUnavailable, 0}, {21 * day, StatusOK, 0}}, 21 * day},
		{"after the catch-up, checks every 5 minutes keep it",
			[]obs{{0, StatusOK, 0}, {21 * day, StatusOK, 0}, {21*day + 5*time.Minute, StatusOK, 0}}, 21*day - lookback},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Tracker{Lookback: lookback}
			for _, o := range tc.obs {
				at := t0.Add(o.after)
				sr := SourceResult{Name: "nginx", Status: o.status}
				if o.status == StatusOK {
					sr.Last = map[Ref]time.Time{}
					if o.collectingSince != 0 {
						sr.CollectingSince = t0.Add(o.collectingSince)
					}
				}
				tr.Observe(Result{At: at, Window: tr.Window(at, margin, names), Sources: []SourceResult{sr}})
			}
			a := tr.Lookup(map[string]Ref{"nginx": vm1})
			if want := t0.Add(tc.covered); !a.Known() || !a.CoveredSince.Equal(want) {
				t.Errorf("known %v, covered since %s; want %s", a.Known(), a.CoveredSince, want)
			}
		})
	}
}

// TestLookupPerSource: a target's activity names each source's last activity, so that a pause's
// evidence can say which source saw the target last and when; a source that saw none within
// what it remembers has none.
func TestLookupPerSource(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	vm1, vm2 := Ref{Namespace: "lab", Name: "vm-1"}, Ref{Namespace: "lab", Name: "vm-2"}
	tr := &Tracker{Lookback: 14 * 24 * time.Hour}
	tr.Observe(Result{At: t0, Window: 14 * 24 * time.Hour, Sources: []SourceResult{
		{Name: "nginx", Status: StatusOK, Last: map[Ref]time.Time{vm1: t0.Add(-3 * time.Hour), vm2: t0.Add(-time.Hour)}},
		{Name: "bastion", Status: StatusOK, Last: map[Ref]time.Time{vm2: t0.Add(-2 * time.Hour)}},
	}})
	tests := []struct {
		name string
		ref  Ref
		want map[string]time.Time
	}{
		{name: "seen by nginx only", ref: vm1, want: map[string]time.Time{"nginx": t0.Add(-3 * time.Hour), "bastion": {}}},
		{name: "seen by both", ref: vm2, want: map[string]time.Time{"nginx": t0.Add(-time.Hour), "bastion": t0.Add(-2 * time.Hour)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tr.Lookup(map[string]Ref{"nginx": tc.ref, "bastion": tc.ref})
			if len(a.Sources) != 2 {
				t.Fatalf("sources = %+v", a.Sources)
			}
			for _, s := range a.Sources {
				if !s.Last.Equal(tc.want[s.Name]) {
					t.Errorf("%s: last = %s, want %s", s.Name, s.Last, tc.want[s.Name])
				}
			}
		})
	}
}
