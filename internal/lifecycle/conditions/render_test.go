package conditions

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mustRoot plays reports (and spec bumps: a Report with only ObservedGeneration) on a Root
// with the Cleaner's steps.
func mustRoot(t *testing.T, gen int64, reps ...Report) *Root {
	t.Helper()
	r, err := New(gen, cleanerSteps...)
	if err != nil {
		t.Fatal(err)
	}
	for i, rep := range reps {
		if rep.Step == "" {
			r.SetGeneration(rep.ObservedGeneration)
			continue
		}
		rep.At = t0.Add(time.Duration(i) * time.Minute)
		if err := r.Accept(rep); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func allAt(gen int64) []Report {
	var out []Report
	for _, s := range cleanerSteps {
		out = append(out, report(s, gen, T))
	}
	return out
}

// brief is what TestSetConditions compares of a condition.
func brief(c metav1.Condition) string {
	return fmt.Sprintf("%s=%s gen=%d %s", c.Type, c.Status, c.ObservedGeneration, c.Reason)
}

func TestSetConditions(t *testing.T) {
	tests := []struct {
		name string
		root func(t *testing.T) *Root
		want []string
		// Substrings of the messages of Available and Ready.
		availMsg, readyMsg string
	}{
		{
			name: "no reports",
			root: func(t *testing.T) *Root { return mustRoot(t, 1) },
			want: []string{
				"Available=Unknown gen=0 NoReports", "Ready=False gen=1 NoReports",
				"TargetsResolved=Unknown gen=0 NoReports", "ConditionsEvaluated=Unknown gen=0 NoReports",
				"ActionsDone=Unknown gen=0 NoReports", "EventDelivered=Unknown gen=0 NoReports",
			},
			readyMsg: "waiting for the first report of TargetsResolved, ConditionsEvaluated, ActionsDone, EventDelivered",
		},
		{
			name: "some steps reported",
			root: func(t *testing.T) *Root { return mustRoot(t, 1, report(resolved, 1, T), report(actions, 1, T)) },
			want: []string{
				"Available=Unknown gen=0 Reconciling", "Ready=False gen=1 Reconciling",
				"TargetsResolved=True gen=1 Succeeded", "ConditionsEvaluated=Unknown gen=0 NoReports",
				"ActionsDone=True gen=1 Succeeded", "EventDelivered=Unknown gen=0 NoReports",
			},
			readyMsg: "waiting for Available=True at generation 1 from ConditionsEvaluated (no report), EventDelivered (no report)",
		},
		{
			name: "ready",
			root: func(t *testing.T) *Root { return mustRoot(t, 1, allAt(1)...) },
			want: []string{
				"Available=True gen=1 AllStepsAvailable", "Ready=True gen=1 AllStepsAvailable",
				"TargetsResolved=True gen=1 Succeeded", "ConditionsEvaluated=True gen=1 Succeeded",
				"ActionsDone=True gen=1 Succeeded", "EventDelivered=True gen=1 Succeeded",
			},
			availMsg: "all steps reported Available=True at generation 1",
		},
		{
			name: "spec changed, some steps at the new generation",
			root: func(t *testing.T) *Root {
				return mustRoot(t, 1, append(allAt(1), Report{ObservedGeneration: 2}, report(evaluated, 2, T))...)
			},
			want: []string{
				"Available=True gen=1 AllStepsAvailable", "Ready=False gen=2 Reconciling",
				"TargetsResolved=True gen=1 Succeeded", "ConditionsEvaluated=True gen=2 Succeeded",
				"ActionsDone=True gen=1 Succeeded", "EventDelivered=True gen=1 Succeeded",
			},
			readyMsg: "waiting for Available=True at generation 2 from TargetsResolved (at generation 1), ActionsDone (at generation 1), EventDelivered (at generation 1)",
		},
		{
			name: "a step failed at Available's generation",
			root: func(t *testing.T) *Root { return mustRoot(t, 1, append(allAt(1), report(actions, 1, F))...) },
			want: []string{
				"Available=False gen=1 StepUnavailable", "Ready=False gen=1 Failed",
				"TargetsResolved=True gen=1 Succeeded", "ConditionsEvaluated=True gen=1 Succeeded",
				"ActionsDone=False gen=1 Failed", "EventDelivered=True gen=1 Succeeded",
			},
			availMsg: "ActionsDone at generation 1: ActionsDone Failed at generation 1",
			readyMsg: "ActionsDone at generation 1: ActionsDone Failed at generation 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.root(t)
			other := metav1.Condition{Type: "Synced", Status: T, Reason: "Whatever", LastTransitionTime: metav1.NewTime(t0)}
			conds := []metav1.Condition{other}
			if !r.SetConditions(&conds, t0.Add(time.Hour)) {
				t.Error("SetConditions on new conditions reports no change")
			}
			if conds[0] != other {
				t.Errorf("another condition was touched: %+v", conds[0])
			}
			var got []string
			for _, c := range conds[1:] {
				got = append(got, brief(c))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("conditions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if errs := metav1validation.ValidateConditions(conds, field.NewPath("status", "conditions")); len(errs) > 0 {
				t.Errorf("the API server would refuse the conditions: %v", errs.ToAggregate())
			}
			for typ, want := range map[string]string{TypeAvailable: tt.availMsg, TypeReady: tt.readyMsg} {
				if c := meta.FindStatusCondition(conds, typ); want != "" && !strings.Contains(c.Message, want) {
					t.Errorf("%s message %q, want it to contain %q", typ, c.Message, want)
				}
			}
			// Writing the same state again changes nothing.
			if r.SetConditions(&conds, t0.Add(2*time.Hour)) {
				t.Error("SetConditions of an unchanged Root reports a change")
			}
		})
	}
}

// TestSetConditionsTransitionTimes: a status change stamps now on the root conditions and the
// report's time on the step's; anything else keeps the time.
func TestSetConditionsTransitionTimes(t *testing.T) {
	r, err := New(1, "A", "B")
	if err != nil {
		t.Fatal(err)
	}
	var conds []metav1.Condition
	r.SetConditions(&conds, t0)
	ltt := func(typ string) time.Time { return meta.FindStatusCondition(conds, typ).LastTransitionTime.Time }

	for _, rep := range []Report{report("A", 1, T), report("B", 1, T)} {
		rep.At = t0.Add(time.Minute)
		if err := r.Accept(rep); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(2 * time.Minute)
	if !r.SetConditions(&conds, now) {
		t.Fatal("no change reported")
	}
	for typ, want := range map[string]time.Time{TypeAvailable: now, TypeReady: now, "A": t0.Add(time.Minute), "B": t0.Add(time.Minute)} {
		if got := ltt(typ); !got.Equal(want) {
			t.Errorf("%s last transition %v, want %v", typ, got, want)
		}
	}

	// A spec change: Ready flips (now), Available keeps its time though its text is the same.
	r.SetGeneration(2)
	later := t0.Add(3 * time.Minute)
	if !r.SetConditions(&conds, later) {
		t.Fatal("no change reported")
	}
	if !ltt(TypeReady).Equal(later) || !ltt(TypeAvailable).Equal(now) {
		t.Errorf("after a spec change: Ready at %v (want %v), Available at %v (want %v)", ltt(TypeReady), later, ltt(TypeAvailable), now)
	}
	if c := meta.FindStatusCondition(conds, TypeReady); c.ObservedGeneration != 2 {
		t.Errorf("Ready's observed generation %d, want the spec's 2", c.ObservedGeneration)
	}
	if c := meta.FindStatusCondition(conds, TypeAvailable); c.ObservedGeneration != 1 {
		t.Errorf("Available's observed generation %d, want its own 1", c.ObservedGeneration)
	}

	// A step report without a time: its transition is stamped now.
	if err := r.Accept(report("A", 2, F)); err != nil {
		t.Fatal(err)
	}
	last := t0.Add(4 * time.Minute)
	r.SetConditions(&conds, last)
	if !ltt("A").Equal(last) {
		t.Errorf("A's last transition %v, want %v", ltt("A"), last)
	}
}

// TestFromConditionsRoundTrip: what SetConditions writes, FromConditions reads back — the
// root Available condition and each step's last accepted report except Applied and Health
// (not persisted: Unknown) and the report time (the last transition time).
func TestFromConditionsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		gen  int64
		reps []Report
	}{
		{"nothing reported", 1, nil},
		{"some steps", 1, []Report{report(resolved, 1, T), report(evaluated, 1, F)}},
		{"ready", 1, allAt(1)},
		{"available at an older generation", 3, append(allAt(2), report(resolved, 3, T))},
		{"unavailable at its generation", 2, append(allAt(2), report(delivered, 2, F))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRoot(t, tt.gen, tt.reps...)
			var conds []metav1.Condition
			r.SetConditions(&conds, t0.Add(time.Hour))

			back, err := FromConditions(conds, tt.gen, cleanerSteps...)
			if err != nil {
				t.Fatal(err)
			}
			gotS, gotG := back.Available()
			wantS, wantG := r.Available()
			if gotS != wantS || gotG != wantG || back.Ready() != r.Ready() || back.Generation() != r.Generation() {
				t.Errorf("read back Available %s at %d, Ready %s, generation %d; want %s at %d, %s, %d",
					gotS, gotG, back.Ready(), back.Generation(), wantS, wantG, r.Ready(), r.Generation())
			}
			for _, step := range cleanerSteps {
				want, wantOK := r.Step(step)
				got, gotOK := back.Step(step)
				if gotOK != wantOK {
					t.Errorf("step %s: has report %v, want %v", step, gotOK, wantOK)
					continue
				}
				if !wantOK {
					continue
				}
				want.Applied, want.Health = U, U
				if got != want {
					t.Errorf("step %s read back as\n%+v\nwant\n%+v", step, got, want)
				}
			}
			// And written again, nothing changes.
			if back.SetConditions(&conds, t0.Add(2*time.Hour)) {
				t.Error("writing back what was read changes the conditions")
			}
		})
	}
}

// TestFromConditionsIgnores: conditions that are no accepted report, or no Available that
// ever was True or False, are not read as one.
func TestFromConditionsIgnores(t *testing.T) {
	at := metav1.NewTime(t0)
	tests := []struct {
		name  string
		avail metav1.Condition
	}{
		{"Available Unknown", metav1.Condition{Type: TypeAvailable, Status: U, ObservedGeneration: 1, Reason: ReasonReconciling, LastTransitionTime: at}},
		{"Available True without a generation", metav1.Condition{Type: TypeAvailable, Status: T, Reason: ReasonAllStepsAvailable, LastTransitionTime: at}},
		{"Available with a bad status", metav1.Condition{Type: TypeAvailable, Status: "Yes", ObservedGeneration: 1, Reason: ReasonAllStepsAvailable, LastTransitionTime: at}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := []metav1.Condition{
				tt.avail,
				{Type: "A", Status: U, ObservedGeneration: 1, Reason: "InProgress", LastTransitionTime: at},
				{Type: "B", Status: T, ObservedGeneration: 0, Reason: "Succeeded", LastTransitionTime: at},
				{Type: "C", Status: T, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: at},
			}
			r, err := FromConditions(conds, 1, "A", "B")
			if err != nil {
				t.Fatal(err)
			}
			if s, g := r.Available(); s != U || g != 0 {
				t.Errorf("Available %s at %d, want Unknown at 0", s, g)
			}
			for _, step := range []string{"A", "B", "C"} {
				if rep, ok := r.Step(step); ok {
					t.Errorf("step %s read as %+v, want no report", step, rep)
				}
			}
		})
	}
}

// TestFromConditionsAvailableFalse: without steps only Available is read; a False one keeps
// its message, and gets a reason if it has none.
func TestFromConditionsAvailableFalse(t *testing.T) {
	at := metav1.NewTime(t0)
	for _, reason := range []string{ReasonStepUnavailable, "Broken", ""} {
		t.Run("reason "+reason, func(t *testing.T) {
			conds := []metav1.Condition{
				{Type: TypeAvailable, Status: F, ObservedGeneration: 1, Reason: reason, Message: "C failed", LastTransitionTime: at},
				{Type: "C", Status: T, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: at},
			}
			r, err := FromConditions(conds, 1)
			if err != nil {
				t.Fatal(err)
			}
			if s, g := r.Available(); s != F || g != 1 {
				t.Errorf("Available %s at %d, want False at 1", s, g)
			}
			if _, ok := r.Step("C"); ok {
				t.Error("step C read without being declared")
			}
			var out []metav1.Condition
			r.SetConditions(&out, t0)
			want := reason
			if want == "" {
				want = ReasonStepUnavailable
			}
			if c := meta.FindStatusCondition(out, TypeAvailable); c.Message != "C failed" || c.Reason != want {
				t.Errorf("Available written back as %+v, want reason %s and its message", c, want)
			}
		})
	}
}

// TestLongRootMessageIsCut: the root conditions' messages, which list steps, are cut to what
// the API server accepts.
func TestLongRootMessageIsCut(t *testing.T) {
	var reps []Report
	for _, s := range cleanerSteps {
		rep := report(s, 1, F)
		rep.Message = strings.Repeat("x", MaxMessageLength)
		reps = append(reps, rep)
	}
	r := mustRoot(t, 1, reps...)
	var conds []metav1.Condition
	r.SetConditions(&conds, t0)
	if errs := metav1validation.ValidateConditions(conds, field.NewPath("status", "conditions")); len(errs) > 0 {
		t.Errorf("the API server would refuse the conditions: %v", errs.ToAggregate())
	}
	if c := meta.FindStatusCondition(conds, TypeReady); !strings.HasSuffix(c.Message, "…") {
		t.Errorf("Ready message of %d bytes not cut", len(c.Message))
	}
}

// TestAvailableNeverGoesBack: conditions that hold Available at a newer generation than the
// steps' (written by hand, or by an older version) do not move it back to the steps' one.
func TestAvailableNeverGoesBack(t *testing.T) {
	at := metav1.NewTime(t0)
	conds := []metav1.Condition{
		{Type: TypeAvailable, Status: F, ObservedGeneration: 2, Reason: ReasonStepUnavailable, LastTransitionTime: at},
		{Type: "A", Status: T, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: at},
		{Type: "B", Status: T, ObservedGeneration: 1, Reason: "Succeeded", LastTransitionTime: at},
	}
	r, err := FromConditions(conds, 2, "A", "B")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Accept(report("A", 1, T)); err != nil {
		t.Fatal(err)
	}
	if s, g := r.Available(); s != F || g != 2 {
		t.Errorf("Available %s at %d, want it to stay False at 2", s, g)
	}

	// Available True ahead of the spec (a spec generation that went back): all steps at the
	// spec's generation still leave Ready False, and its message says what it waits for.
	conds[0].Status = T
	r, err = FromConditions(conds, 1, "A", "B")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Accept(report("B", 1, T)); err != nil {
		t.Fatal(err)
	}
	var out []metav1.Condition
	r.SetConditions(&out, t0)
	if c := meta.FindStatusCondition(out, TypeReady); c.Status != F || c.Message != "waiting for Available=True at generation 1" {
		t.Errorf("Ready = %+v", c)
	}
}
