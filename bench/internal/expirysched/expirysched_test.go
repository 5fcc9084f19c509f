package expirysched

import (
	"reflect"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kevents"
)

func TestDeadlinesOnWholeSecondsInRange(t *testing.T) {
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	dl := Deadlines(base, 50, 15*time.Second, 40*time.Second)
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
	if one := Deadlines(base, 1, 15*time.Second, 40*time.Second); !one[0].Equal(base.Add(15 * time.Second)) {
		t.Errorf("one: %s", one[0])
	}
	d := Deployment("ns", "x", 0, "ana@example.com", base.Add(500*time.Millisecond))
	if d.Annotations[AnnotationExpiresAt] != "2026-11-24T10:00:00Z" || *d.Spec.Replicas != 0 {
		t.Errorf("deployment: %v, replicas %d", d.Annotations, *d.Spec.Replicas)
	}
}

func TestAnalyze(t *testing.T) {
	dl := time.Date(2026, 11, 24, 10, 0, 30, 0, time.UTC)
	wb, iv := 10*time.Second, 5*time.Second
	seen := func(at time.Time, stamp time.Time) kevents.Seen {
		return kevents.Seen{Seen: at, Stamp: stamp, Count: 1}
	}
	ok := Scheduled{Key: "ok", Deadline: dl,
		Warn: seen(dl.Add(-wb+20*time.Millisecond), dl.Add(-wb)), Due: seen(dl.Add(30*time.Millisecond), dl)}
	st := Analyze([]Scheduled{ok}, wb, iv)
	if len(st.DueLate) != 1 || st.DueLate[0] != 30*time.Millisecond || len(st.WarnLate) != 1 || st.WarnLate[0] != 20*time.Millisecond || !reflect.DeepEqual(counts(st), Stats{}) {
		t.Fatalf("one on time: %+v", st)
	}

	earlySeen := ok
	earlySeen.Due = seen(dl.Add(-time.Millisecond), dl.Add(-time.Second))
	decidedEarly := ok // seen after the deadline, but decided in the second before it
	decidedEarly.Due = seen(dl.Add(5*time.Millisecond), dl.Add(-time.Second))
	warnedEarly := ok
	warnedEarly.Warn = seen(dl.Add(-wb-time.Second), dl.Add(-wb-time.Second))
	lateWarning := ok // warned 6 s late: due at warned + 5 s, after the deadline
	lateWarning.Warn = seen(dl.Add(-4*time.Second), dl.Add(-4*time.Second))
	lateWarning.Due = seen(dl.Add(time.Second), dl.Add(time.Second))
	unwarned := ok
	unwarned.Warn = kevents.Seen{}
	neverDue := ok
	neverDue.Due = kevents.Seen{}
	twice := ok
	twice.Due.Count, twice.Warn.Count = 2, 3
	st = Analyze([]Scheduled{ok, earlySeen, decidedEarly, warnedEarly, lateWarning, unwarned, neverDue, twice}, wb, iv)
	want := Stats{EarlyDue: 2, EarlyWarn: 1, Unknown: 1, Unwarned: 1, MissingWarn: 1, MissingDue: 1, DupDue: 1, DupWarn: 2}
	if got := counts(st); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// Left out of the lateness: the one warned too late (due time unknown), the unwarned one
	// and the one never due.
	if len(st.DueLate) != 5 || len(st.WarnLate) != 7 {
		t.Errorf("%d due and %d warning samples, want 5 and 7", len(st.DueLate), len(st.WarnLate))
	}
}

// counts is st without its samples, to compare.
func counts(st Stats) Stats {
	st.WarnLate, st.DueLate = nil, nil
	return st
}
