package quota

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// look is one look at the quota: its usage at a time.
type look struct {
	at   time.Time
	used corev1.ResourceList
}

// daily is one look a day at 06:00 UTC for n days ending on t0's day, memory at 1Gi except as
// given (day index → value).
func daily(n int, except map[int]string, skip ...int) []look {
	var out []look
	skipped := map[int]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	start := utcDay(t0).AddDate(0, 0, -(n - 1)).Add(6 * time.Hour)
	for i := 0; i < n; i++ {
		if skipped[i] {
			continue
		}
		v := "1Gi"
		if e, ok := except[i]; ok {
			v = e
		}
		out = append(out, look{at: start.AddDate(0, 0, i), used: rl("requests.memory", v)})
	}
	return out
}

func TestDailyPeaks(t *testing.T) {
	mem := []corev1.ResourceName{"requests.memory"}
	const window = 14 * day
	tests := []struct {
		name          string
		bag           map[string]string
		looks         []look
		resources     []corev1.ResourceName
		wantComplete  bool
		wantPeak      string // requests.memory's, "" for none
		wantPeakAt    string
		wantWhy       string // a part of Incomplete
		wantProblems  string // a part of the joined problems
		wantBagPrefix string // of peak.requests.memory
		wantDays      int    // tokens in peak.requests.memory, when set
		// wantChart is the window's days of requests.memory, "11-07=1Gi,…", when set.
		wantChart string
	}{
		{name: "no history yet", looks: nil, resources: mem, wantWhy: "keeps no usage history yet"},
		{name: "one look: the history began inside the window", looks: daily(1, nil), resources: mem,
			wantPeak: "1Gi", wantWhy: "daily peaks begin 2026-11-21, the window needs them from 2026-11-06"},
		// t0 is 2026-11-21 12:00; the window starts 2026-11-07 12:00; its first day is the 7th and
		// the day before it the 6th: 16 days of peaks.
		{name: "a peak every day of the window and the day before it: complete", looks: daily(16, map[int]string{5: "6Gi", 9: "3Gi"}), resources: mem,
			wantComplete: true, wantPeak: "6Gi", wantPeakAt: "2026-11-11T06:00:00Z", wantBagPrefix: "2026-11-06:1Gi@0600,", wantDays: 16,
			wantChart: "11-07=1Gi,11-08=1Gi,11-09=1Gi,11-10=1Gi,11-11=6Gi,11-12=1Gi,11-13=1Gi,11-14=1Gi,11-15=3Gi,11-16=1Gi,11-17=1Gi,11-18=1Gi,11-19=1Gi,11-20=1Gi,11-21=1Gi"},
		{name: "the day before the window is needed too", looks: daily(15, nil), resources: mem,
			wantPeak: "1Gi", wantWhy: "begin 2026-11-07"},
		{name: "a peak before the window counts for nothing", looks: daily(16, map[int]string{0: "9Gi"}), resources: mem,
			wantComplete: true, wantPeak: "1Gi"},
		{name: "a day without a look leaves a gap", looks: daily(16, nil, 7), resources: mem,
			wantPeak: "1Gi", wantWhy: "no daily peak on 2026-11-13", wantBagPrefix: "2026-11-06:1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,,1Gi@0600",
			wantChart: "11-07=1Gi,11-08=1Gi,11-09=1Gi,11-10=1Gi,11-11=1Gi,11-12=1Gi,11-14=1Gi,11-15=1Gi,11-16=1Gi,11-17=1Gi,11-18=1Gi,11-19=1Gi,11-20=1Gi,11-21=1Gi"},
		{name: "days beyond the window's reach are dropped: bounded", looks: daily(40, map[int]string{3: "50Gi"}), resources: mem,
			wantComplete: true, wantPeak: "1Gi", wantDays: 16,
			wantChart: "11-07=1Gi,11-08=1Gi,11-09=1Gi,11-10=1Gi,11-11=1Gi,11-12=1Gi,11-13=1Gi,11-14=1Gi,11-15=1Gi,11-16=1Gi,11-17=1Gi,11-18=1Gi,11-19=1Gi,11-20=1Gi,11-21=1Gi"},
		{name: "the day's peak rises, never falls", resources: mem,
			looks:        append(daily(16, nil), look{at: t0.Add(-time.Hour), used: rl("requests.memory", "5Gi")}, look{at: t0, used: rl("requests.memory", "2Gi")}),
			wantComplete: true, wantPeak: "5Gi", wantPeakAt: "2026-11-21T11:00:00Z"},
		{name: "a resource without usage has a peak of 0", looks: daily(16, nil), resources: []corev1.ResourceName{"requests.memory", "requests.cpu"},
			wantComplete: true, wantPeak: "1Gi"},
		{name: "a corrupt day is a gap: the problem is named, the window incomplete, the other days kept",
			bag:       map[string]string{"peak.requests.memory": "2026-11-06:1Gi@0600,1Gi@0600,lots@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600,1Gi@0600"},
			looks:     []look{{at: t0, used: rl("requests.memory", "1Gi")}},
			resources: mem, wantPeak: "1Gi", wantWhy: "no daily peak on 2026-11-08",
			wantProblems:  `state bag entry peak.requests.memory="2026-11-06:1Gi@0600,1Gi@0600,lots@0600,1…": the peaks of 2026-11-08 cannot be read; those days count as missing`,
			wantBagPrefix: "2026-11-06:1Gi@0600,1Gi@0600,,1Gi@0600", wantDays: 16},
		{name: "a corrupt first day restarts that resource's history, not the others'",
			bag:       map[string]string{"peak.requests.memory": "yesterday:1Gi@0600", "peak.requests.cpu": "2026-11-20:1@0600", "grew": "2026-11-01T00:00:00Z"},
			looks:     []look{{at: t0, used: rl("requests.memory", "1Gi", "requests.cpu", "2")}},
			resources: []corev1.ResourceName{"requests.memory", "requests.cpu"}, wantPeak: "1Gi", wantWhy: "begin 2026-11-21",
			wantProblems: "its first day cannot be read", wantBagPrefix: "2026-11-21:1Gi@1200", wantDays: 1},
		{name: "a corrupt time is named and read as none",
			bag: map[string]string{"shrunk": "last week"}, looks: daily(1, nil), resources: mem,
			wantPeak: "1Gi", wantWhy: "begin", wantProblems: `state bag entry shrunk="last week" is not a time; read as none`},
		{name: "a resource that left the quota leaves the bag",
			bag:   map[string]string{"peak.requests.cpu": "2026-11-20:1@0600"},
			looks: daily(16, nil), resources: mem, wantComplete: true, wantPeak: "1Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bag := tt.bag
			p, problems := ReadDailyPeaks(bag, tt.resources)
			now := t0
			for _, l := range tt.looks {
				// Every look reads what the previous one wrote, as the controller does.
				p, _ = ReadDailyPeaks(p.Bag(), tt.resources)
				problems = append(problems, p.Record(l.used, tt.resources, l.at, window)...)
				now = l.at
			}
			w := p.Window(now, window)
			bag = p.Bag()
			if w.Complete != tt.wantComplete {
				t.Errorf("Complete = %v (%s), want %v", w.Complete, w.Incomplete, tt.wantComplete)
			}
			if w.Complete != (w.Incomplete == "") {
				t.Errorf("Complete = %v with Incomplete %q", w.Complete, w.Incomplete)
			}
			if tt.wantWhy != "" && !strings.Contains(w.Incomplete, tt.wantWhy) {
				t.Errorf("Incomplete = %q, want it to say %q", w.Incomplete, tt.wantWhy)
			}
			pk, ok := w.Peaks["requests.memory"]
			if got := map[bool]string{true: pk.Value.String(), false: ""}[ok]; got != tt.wantPeak {
				t.Errorf("peak = %q, want %q", got, tt.wantPeak)
			}
			// The window's days: what a pull request charts, one a day, inside the window, the
			// peak among them.
			var chart []string
			for i, d := range w.Days["requests.memory"] {
				chart = append(chart, d.Day.Format("01-02")+"="+d.Value.String())
				if d.Day.Before(utcDay(w.Start)) || d.Day.After(utcDay(now)) || i > 0 && !d.Day.After(w.Days["requests.memory"][i-1].Day) {
					t.Errorf("day %s outside the window [%s, %s] or out of order", d.Day, w.Start, now)
				}
				if ok && d.Value.Cmp(pk.Value) > 0 {
					t.Errorf("day %s holds %s, above the peak %s", d.Day, d.Value.String(), pk.Value.String())
				}
			}
			if ok != (len(chart) > 0) {
				t.Errorf("peak %v with %d days", ok, len(chart))
			}
			if got := strings.Join(chart, ","); tt.wantChart != "" && got != tt.wantChart {
				t.Errorf("window days\n%s\nwant\n%s", got, tt.wantChart)
			}
			if tt.wantPeakAt != "" && pk.At.Format(time.RFC3339) != tt.wantPeakAt {
				t.Errorf("peak at %s, want %s", pk.At.Format(time.RFC3339), tt.wantPeakAt)
			}
			if got := strings.Join(problems, "\n"); tt.wantProblems == "" && got != "" || !strings.Contains(got, tt.wantProblems) {
				t.Errorf("problems %q, want %q", got, tt.wantProblems)
			}
			v := bag["peak.requests.memory"]
			if !strings.HasPrefix(v, tt.wantBagPrefix) {
				t.Errorf("bag %q, want it to begin %q", v, tt.wantBagPrefix)
			}
			if tt.wantDays > 0 {
				_, list, _ := strings.Cut(v, ":")
				if n := len(strings.Split(list, ",")); n != tt.wantDays {
					t.Errorf("bag holds %d days, want %d: %s", n, tt.wantDays, v)
				}
			}
			for k := range bag {
				if k != bagLastGrow && k != bagLastShrink && !strings.HasPrefix(k, bagPeakPrefix) {
					t.Errorf("unexpected bag key %q", k)
				}
				if strings.HasPrefix(k, bagPeakPrefix) && !contains(tt.resources, corev1.ResourceName(strings.TrimPrefix(k, bagPeakPrefix))) {
					t.Errorf("bag keeps %q of a resource the quota no longer has", k)
				}
			}
			// What is written reads back the same.
			again, more := ReadDailyPeaks(bag, tt.resources)
			if len(more) > 0 {
				t.Errorf("the written bag reads with problems: %v", more)
			}
			if back := again.Bag(); !equalBags(back, bag) {
				t.Errorf("round trip:\n%v\n%v", bag, back)
			}
		})
	}
}

func equalBags(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The bag stays within the state Lease's bounds whatever the quota: the longest window, the
// longest quantities, more resources than it holds.
func TestDailyPeaksBounded(t *testing.T) {
	var resources []corev1.ResourceName
	used := corev1.ResourceList{}
	for i := 0; i < 40; i++ {
		name := corev1.ResourceName("count/r" + strings.Repeat("x", i) + ".example.com")
		resources = append(resources, name)
		used[name] = rl("x", "9223372036854775807")["x"]
	}
	resources = append(resources, corev1.ResourceName("requests.example.com/"+strings.Repeat("y", 70)))
	p, _ := ReadDailyPeaks(nil, resources)
	var problems []string
	for i := 0; i < 60; i++ {
		problems = p.Record(used, resources, t0.AddDate(0, 0, i).Add(time.Duration(i)*time.Minute), MaxWindowDays*day)
	}
	bag := p.Bag()
	if len(bag) > maxPeakResources+2 {
		t.Fatalf("%d bag entries", len(bag))
	}
	for k, v := range bag {
		if len(v) > 1024 {
			t.Fatalf("%s holds %d bytes", k, len(v))
		}
	}
	if joined := strings.Join(problems, "\n"); !strings.Contains(joined, "at most 30 resources") || !strings.Contains(joined, "makes no state bag key") {
		t.Fatalf("problems: %s", joined)
	}
	w := p.Window(t0.AddDate(0, 0, 59), MaxWindowDays*day)
	if !w.Complete {
		t.Fatalf("incomplete: %s", w.Incomplete)
	}
}

func TestDailyPeaksNote(t *testing.T) {
	shrink := &lifecycle.Change{Reason: ReasonQuotaShrinkRecommended}
	grow := &lifecycle.Change{Reason: ReasonQuotaResizeRecommended}
	p := &DailyPeaks{}
	p.Note(nil, t0)
	if !p.LastGrow.IsZero() || !p.LastShrink.IsZero() {
		t.Fatalf("nothing decided, yet %+v", p)
	}
	p.Note(grow, t0)
	p.Note(grow, t0.Add(59*time.Minute)) // decided again while its proposal waits: no write
	if !p.LastGrow.Equal(t0) {
		t.Fatalf("LastGrow = %v", p.LastGrow)
	}
	p.Note(grow, t0.Add(time.Hour))
	p.Note(shrink, t0.Add(2*time.Hour))
	if !p.LastGrow.Equal(t0.Add(time.Hour)) || !p.LastShrink.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("%+v", p)
	}
	back, problems := ReadDailyPeaks(p.Bag(), nil)
	if len(problems) > 0 || !back.LastGrow.Equal(p.LastGrow) || !back.LastShrink.Equal(p.LastShrink) {
		t.Fatalf("read back %+v, %v", back, problems)
	}
}
