package conditions

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	T = metav1.ConditionTrue
	F = metav1.ConditionFalse
	U = metav1.ConditionUnknown
)

// The Cleaner's steps, as the controller will declare them.
const (
	resolved  = "TargetsResolved"
	evaluated = "ConditionsEvaluated"
	actions   = "ActionsDone"
	delivered = "EventDelivered"
)

var (
	cleanerSteps = []string{resolved, evaluated, actions, delivered}
	t0           = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// report is a step's report at gen with Applied=True, Health=True and the given Available.
func report(step string, gen int64, available metav1.ConditionStatus) Report {
	reason := map[metav1.ConditionStatus]string{T: "Succeeded", F: "Failed", U: "InProgress"}[available]
	return Report{
		Step: step, ObservedGeneration: gen,
		Applied: T, Available: available, Health: T,
		Reason: reason, Message: fmt.Sprintf("%s %s at generation %d", step, reason, gen),
	}
}

// row is one action of a scenario — the spec bumped to a generation, or a step's report — and
// the root state expected after it.
type row struct {
	name    string
	bump    int64  // > 0: the spec is bumped to this generation
	rep     Report // otherwise: this report is accepted (At: the row's time)
	wantErr error  // what Accept returns (errors.Is); nil: the report is stored

	avail    metav1.ConditionStatus // root Available
	availGen int64                  // and its own observed generation
	ready    metav1.ConditionStatus

	// Optional: the reasons of the rendered conditions, the re-check interval of the default
	// Policy, and further checks.
	availReason, readyReason string
	recheck                  time.Duration
	check                    func(t *testing.T, r *Root)
}

// start is the first row of a scenario: the spec at generation 1, nothing reported.
var start = row{name: "spec at generation 1", bump: 1, avail: U, ready: F, readyReason: ReasonNoReports}

// readyAtGen1 are the rows that bring every Cleaner step to Available=True at generation 1.
func readyAtGen1() []row {
	return []row{
		{name: "spec at generation 1", bump: 1, avail: U, ready: F, readyReason: ReasonNoReports, recheck: 10 * time.Second},
		{name: "TargetsResolved True at 1", rep: report(resolved, 1, T), avail: U, ready: F, readyReason: ReasonReconciling},
		{name: "ConditionsEvaluated True at 1", rep: report(evaluated, 1, T), avail: U, ready: F},
		{name: "ActionsDone True at 1", rep: report(actions, 1, T), avail: U, ready: F},
		{
			name: "EventDelivered True at 1: Ready at generation 1", rep: report(delivered, 1, T),
			avail: T, availGen: 1, ready: T, availReason: ReasonAllStepsAvailable, readyReason: ReasonAllStepsAvailable,
			recheck: 30 * time.Minute,
		},
	}
}

func concat(parts ...[]row) []row {
	var out []row
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// runScenario plays rows on one Root. Through conditions, the Root is rebuilt before every row
// from the conditions the previous row wrote, as a controller does from a resource's status.
func runScenario(t *testing.T, steps []string, rows []row, throughConditions bool) {
	t.Helper()
	r, err := New(0, steps...)
	if err != nil {
		t.Fatal(err)
	}
	var (
		conds []metav1.Condition
		gen   int64 // metadata.generation, which the resource keeps
	)
	for i, tt := range rows {
		t.Run(fmt.Sprintf("%02d %s", i+1, tt.name), func(t *testing.T) {
			now := t0.Add(time.Duration(i) * time.Minute)
			if throughConditions {
				if r, err = FromConditions(conds, gen, steps...); err != nil {
					t.Fatal(err)
				}
			}
			if tt.bump > 0 {
				r.SetGeneration(tt.bump)
				gen = max(gen, tt.bump) // metadata.generation never goes back
			} else {
				rep := tt.rep
				rep.At = now
				if err := r.Accept(rep); !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
					t.Errorf("Accept(%+v) = %v, want %v", rep, err, tt.wantErr)
				}
			}
			if got, gotGen := r.Available(); got != tt.avail || gotGen != tt.availGen {
				t.Errorf("Available = %s at %d, want %s at %d", got, gotGen, tt.avail, tt.availGen)
			}
			if got := r.Ready(); got != tt.ready {
				t.Errorf("Ready = %s, want %s", got, tt.ready)
			}
			if tt.recheck != 0 {
				if got := (Policy{}).RecheckAfter(r.Ready() == T); got != tt.recheck {
					t.Errorf("RecheckAfter = %v, want %v", got, tt.recheck)
				}
			}
			r.SetConditions(&conds, now)
			checkRendered(t, r, conds, tt.availReason, tt.readyReason)
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// checkRendered checks that the rendered root conditions say what r says.
func checkRendered(t *testing.T, r *Root, conds []metav1.Condition, availReason, readyReason string) {
	t.Helper()
	status, gen := r.Available()
	a := meta.FindStatusCondition(conds, TypeAvailable)
	if a == nil || a.Status != status || a.ObservedGeneration != gen {
		t.Errorf("rendered Available = %+v, want %s at %d", a, status, gen)
	} else if availReason != "" && a.Reason != availReason {
		t.Errorf("rendered Available reason = %s (%q), want %s", a.Reason, a.Message, availReason)
	}
	rd := meta.FindStatusCondition(conds, TypeReady)
	if rd == nil || rd.Status != r.Ready() || rd.ObservedGeneration != r.Generation() {
		t.Errorf("rendered Ready = %+v, want %s at %d", rd, r.Ready(), r.Generation())
	} else if readyReason != "" && rd.Reason != readyReason {
		t.Errorf("rendered Ready reason = %s (%q), want %s", rd.Reason, rd.Message, readyReason)
	}
}

var modes = []struct {
	name              string
	throughConditions bool
}{{"in memory", false}, {"through conditions", true}}

// TestUseCases plays the three cases the root conditions exist for, step by step, with the
// Cleaner's four steps as the reporting steps: a step whose work is in progress, a spec change that
// only some steps have reported on (Available at the old generation, not Ready), and a step failing
// before a spec change (Available stays False at the old generation).
func TestUseCases(t *testing.T) {
	tests := []struct {
		name string
		rows []row
	}{
		{
			// 1. In-progress adapter task response: Ready at gen=1; at 30m the refresh pulse for
			// gen=1 starts a new task, which reports Applied=True, Available=Unknown.
			name: "1 in-progress adapter task response",
			rows: concat(readyAtGen1(), []row{
				{
					name: "30m pulse: ActionsDone starts a new task, Applied=True Available=Unknown: discarded",
					rep:  report(actions, 1, U), wantErr: ErrAvailabilityUnknown,
					avail: T, availGen: 1, ready: T, recheck: 30 * time.Minute,
					check: func(t *testing.T, r *Root) {
						// Rule 2: the step keeps its report and its last report time (row 4's).
						if rep, _ := r.Step(actions); rep.Available != T || !rep.At.Equal(t0.Add(3*time.Minute)) {
							t.Errorf("ActionsDone's report = %+v, want the True one of row 4", rep)
						}
					},
				},
				{
					name: "the task finishes: ActionsDone True at 1", rep: report(actions, 1, T),
					avail: T, availGen: 1, ready: T, recheck: 30 * time.Minute,
				},
			}),
		},
		{
			// 2. Mixed generation for Available conditions: Available=True, Ready=True at gen=1;
			// the user updates the spec (gen=2); only some adapters report gen=2 Available=True.
			// Ready turns False right after the update; Available stays True at gen=1.
			name: "2 mixed generation for Available conditions",
			rows: concat(readyAtGen1(), []row{
				{
					name: "spec bumped to generation 2: Ready False, Available True at 1", bump: 2,
					avail: T, availGen: 1, ready: F, availReason: ReasonAllStepsAvailable, readyReason: ReasonReconciling,
					recheck: 10 * time.Second,
				},
				{name: "TargetsResolved True at 2", rep: report(resolved, 2, T), avail: T, availGen: 1, ready: F},
				{name: "ConditionsEvaluated True at 2", rep: report(evaluated, 2, T), avail: T, availGen: 1, ready: F},
				{name: "ActionsDone True at 2", rep: report(actions, 2, T), avail: T, availGen: 1, ready: F, readyReason: ReasonReconciling},
				{
					name: "EventDelivered True at 2: all at 2, Ready", rep: report(delivered, 2, T),
					avail: T, availGen: 2, ready: T, readyReason: ReasonAllStepsAvailable, recheck: 30 * time.Minute,
				},
			}),
		},
		{
			// 3. Cluster transitions to Ready but with mixed generations: Ready at gen=1; the
			// first adapter reports Available=False (Available=False, Ready=False at gen=1); the
			// user updates to gen=2; the first adapter reports Available=True at gen=2:
			// Available remains False at gen=1.
			name: "3 transition to Ready with mixed generations",
			rows: concat(readyAtGen1(), []row{
				{
					name: "TargetsResolved False at 1: Available False at 1", rep: report(resolved, 1, F),
					avail: F, availGen: 1, ready: F, availReason: ReasonStepUnavailable, readyReason: "Failed",
					recheck: 10 * time.Second,
				},
				{name: "spec bumped to generation 2", bump: 2, avail: F, availGen: 1, ready: F},
				{
					name: "TargetsResolved True at 2: Available remains False at 1", rep: report(resolved, 2, T),
					avail: F, availGen: 1, ready: F, availReason: ReasonStepUnavailable, readyReason: ReasonReconciling,
				},
				{name: "ConditionsEvaluated True at 2", rep: report(evaluated, 2, T), avail: F, availGen: 1, ready: F},
				{name: "ActionsDone True at 2", rep: report(actions, 2, T), avail: F, availGen: 1, ready: F},
				{
					name: "EventDelivered True at 2: all at 2, Available and Ready", rep: report(delivered, 2, T),
					avail: T, availGen: 2, ready: T, recheck: 30 * time.Minute,
				},
			}),
		},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				runScenario(t, cleanerSteps, tt.rows, mode.throughConditions)
			})
		}
	}
}

// TestRules has a scenario for each of the five rules (numbered as in the package doc) and for the
// edge cases around them, with two steps A and B.
func TestRules(t *testing.T) {
	const a, b = "A", "B"
	both := func(gen int64) []row {
		return []row{
			{name: fmt.Sprintf("A True at %d", gen), rep: report(a, gen, T), avail: U, ready: F},
			{name: fmt.Sprintf("B True at %d", gen), rep: report(b, gen, T), avail: T, availGen: gen, ready: T},
		}
	}
	// Rows for "A True at 1, B True at 1" when Available is already True at 1 or later.
	stepReport := func(step string, gen int64, s metav1.ConditionStatus, avail metav1.ConditionStatus, availGen int64, ready metav1.ConditionStatus) row {
		return row{name: fmt.Sprintf("%s %s at %d", step, s, gen), rep: report(step, gen, s), avail: avail, availGen: availGen, ready: ready}
	}
	tests := []struct {
		name       string
		rows       []row
		memoryOnly bool // checks what the conditions do not keep (report times of unchanged statuses)
	}{
		{
			name: "rule 1: an older generation never replaces a newer one's data",
			rows: concat([]row{start}, both(1), []row{
				{name: "spec bumped to 2", bump: 2, avail: T, availGen: 1, ready: F},
				stepReport(a, 2, F, T, 1, F),
				{
					name: "A True at 1 is stale", rep: report(a, 1, T), wantErr: ErrStaleGeneration,
					avail: T, availGen: 1, ready: F,
					check: func(t *testing.T, r *Root) {
						if rep, _ := r.Step(a); rep.ObservedGeneration != 2 || rep.Available != F {
							t.Errorf("A's report = %+v, want its False at 2", rep)
						}
					},
				},
			}),
		},
		{
			name: "rule 1: the same generation is accepted, and may change the status",
			rows: concat([]row{start}, both(1), []row{
				stepReport(a, 1, F, F, 1, F),
				stepReport(a, 1, T, T, 1, T),
			}),
		},
		{
			name: "rule 1: a generation newer than the spec is invalid",
			rows: concat([]row{start}, both(1), []row{
				{name: "A True at 2 with the spec at 1", rep: report(a, 2, T), wantErr: ErrFutureGeneration, avail: T, availGen: 1, ready: T},
				{name: "A False at 2 with the spec at 1", rep: report(a, 2, F), wantErr: ErrFutureGeneration, avail: T, availGen: 1, ready: T},
			}),
		},
		{
			name: "rule 2: Available=Unknown is discarded and keeps the last report time",
			rows: concat([]row{start, stepReport(a, 1, T, U, 0, F)}, []row{
				{
					name: "A Unknown at 1", rep: report(a, 1, U), wantErr: ErrAvailabilityUnknown, avail: U, ready: F,
					check: func(t *testing.T, r *Root) {
						if rep, _ := r.Step(a); rep.Available != T || !rep.At.Equal(t0.Add(time.Minute)) {
							t.Errorf("A's report = %+v, want its True of row 2", rep)
						}
					},
				},
				{
					name: "B Unknown at 1: B still has no report", rep: report(b, 1, U), wantErr: ErrAvailabilityUnknown, avail: U, ready: F,
					readyReason: ReasonReconciling,
					check: func(t *testing.T, r *Root) {
						if rep, ok := r.Step(b); ok {
							t.Errorf("B has report %+v, want none", rep)
						}
					},
				},
			}),
		},
		{
			name: "rule 2: Unknown at a newer generation does not move the step on",
			rows: concat([]row{start}, both(1), []row{
				{name: "spec bumped to 2", bump: 2, avail: T, availGen: 1, ready: F},
				{name: "A Unknown at 2", rep: report(a, 2, U), wantErr: ErrAvailabilityUnknown, avail: T, availGen: 1, ready: F},
				// Were A at 2, this would be stale.
				stepReport(a, 1, F, F, 1, F),
			}),
		},
		{
			name: "rule 3: all steps True at one generation older than the spec: Available, not Ready",
			rows: []row{
				start,
				{name: "spec bumped to 2", bump: 2, avail: U, ready: F},
				stepReport(a, 1, T, U, 0, F),
				{
					name: "B True at 1", rep: report(b, 1, T), avail: T, availGen: 1, ready: F,
					availReason: ReasonAllStepsAvailable, readyReason: ReasonReconciling,
				},
			},
		},
		{
			name: "rule 3: True at different generations is not Available",
			rows: []row{
				start, stepReport(a, 1, T, U, 0, F),
				{name: "spec bumped to 2", bump: 2, avail: U, ready: F},
				stepReport(b, 2, T, U, 0, F),
				stepReport(a, 2, T, T, 2, T),
			},
		},
		{
			name: "rule 3: a step without a report holds Available back",
			rows: []row{
				start,
				{name: "A True at 1", rep: report(a, 1, T), avail: U, ready: F, availReason: ReasonReconciling, readyReason: ReasonReconciling},
			},
		},
		{
			name: "rule 3: one step False is not Available",
			rows: []row{
				start, stepReport(a, 1, T, U, 0, F),
				{name: "B False at 1", rep: report(b, 1, F), avail: U, ready: F, availReason: "Failed", readyReason: "Failed"},
				stepReport(b, 1, T, T, 1, T),
			},
		},
		{
			name: "rule 3: True moves to the newer generation once all steps are there",
			rows: concat([]row{start}, both(1), []row{
				{name: "spec bumped to 3", bump: 3, avail: T, availGen: 1, ready: F},
				stepReport(a, 2, T, T, 1, F),
				stepReport(b, 2, T, T, 2, F),
				stepReport(b, 3, T, T, 2, F),
				stepReport(a, 3, T, T, 3, T),
			}),
		},
		{
			name: "rule 4: False at Available's generation turns it False, and True at it back",
			rows: concat([]row{start}, both(1), []row{
				{name: "B False at 1", rep: report(b, 1, F), avail: F, availGen: 1, ready: F, availReason: ReasonStepUnavailable, readyReason: "Failed"},
				stepReport(a, 1, F, F, 1, F),
				stepReport(a, 1, T, F, 1, F),
				stepReport(b, 1, T, T, 1, T),
			}),
		},
		{
			name: "rule 4: False at another generation leaves Available True",
			rows: concat([]row{start}, both(1), []row{
				{name: "spec bumped to 2", bump: 2, avail: T, availGen: 1, ready: F},
				{name: "A False at 2", rep: report(a, 2, F), avail: T, availGen: 1, ready: F, availReason: ReasonAllStepsAvailable, readyReason: "Failed"},
				// B is still at 1, Available's generation: its False counts.
				stepReport(b, 1, F, F, 1, F),
			}),
		},
		{
			name: "rule 4: before Available was ever True a False leaves it Unknown",
			rows: []row{
				start,
				{name: "A False at 1", rep: report(a, 1, F), avail: U, ready: F, availReason: "Failed", readyReason: "Failed"},
				stepReport(b, 1, T, U, 0, F),
				stepReport(a, 1, T, T, 1, T),
			},
		},
		{
			name: "rule 5: every spec change turns Ready False; Ready only at the spec generation",
			rows: concat([]row{start}, both(1), []row{
				{name: "spec bumped to 2", bump: 2, avail: T, availGen: 1, ready: F, readyReason: ReasonReconciling},
				{name: "spec bumped back to 1 is ignored", bump: 1, avail: T, availGen: 1, ready: F,
					check: func(t *testing.T, r *Root) {
						if r.Generation() != 2 {
							t.Errorf("Generation = %d, want 2", r.Generation())
						}
					}},
				stepReport(a, 2, T, T, 1, F),
				stepReport(b, 2, T, T, 2, T),
				{name: "spec bumped to 3", bump: 3, avail: T, availGen: 2, ready: F},
			}),
		},
		{
			name:       "duplicate reports are accepted and update the last report time",
			memoryOnly: true,
			rows: concat([]row{start}, both(1), []row{
				{
					name: "A True at 1 again", rep: report(a, 1, T), avail: T, availGen: 1, ready: T,
					check: func(t *testing.T, r *Root) {
						if rep, _ := r.Step(a); !rep.At.Equal(t0.Add(3 * time.Minute)) {
							t.Errorf("A's last report at %v, want %v", rep.At, t0.Add(3*time.Minute))
						}
					},
				},
				stepReport(a, 1, T, T, 1, T),
			}),
		},
		{
			name: "a report from an undeclared step is refused",
			rows: concat([]row{start}, both(1), []row{
				{name: "C False at 1", rep: report("C", 1, F), wantErr: ErrUnknownStep, avail: T, availGen: 1, ready: T},
			}),
		},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			if tt.memoryOnly && mode.throughConditions {
				continue
			}
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				runScenario(t, []string{a, b}, tt.rows, mode.throughConditions)
			})
		}
	}
}

// TestZeroValue: a Root nobody declared steps for takes the steps that report.
func TestZeroValue(t *testing.T) {
	var r Root
	if s, g := r.Available(); s != U || g != 0 || r.Ready() != F || r.Generation() != 0 {
		t.Fatalf("zero Root: Available %s at %d, Ready %s, generation %d", s, g, r.Ready(), r.Generation())
	}
	var conds []metav1.Condition
	if !r.SetConditions(&conds, t0) || len(conds) != 2 {
		t.Fatalf("zero Root renders %+v, want Available and Ready", conds)
	}
	checkRendered(t, &r, conds, ReasonNoReports, ReasonNoReports)
	if err := r.Accept(report("X", 1, T)); !errors.Is(err, ErrFutureGeneration) {
		t.Errorf("Accept at generation 1 before SetGeneration = %v, want %v", err, ErrFutureGeneration)
	}
	r.SetGeneration(1)
	if err := r.Accept(report("X", 1, T)); err != nil {
		t.Fatal(err)
	}
	if s, g := r.Available(); s != T || g != 1 || r.Ready() != T {
		t.Errorf("after X True at 1: Available %s at %d, Ready %s, want True at 1, True", s, g, r.Ready())
	}
	// Y joins the steps with its first report; at Available's generation its False counts.
	if err := r.Accept(report("Y", 1, F)); err != nil {
		t.Fatal(err)
	}
	if s, g := r.Available(); s != F || g != 1 || r.Ready() != F {
		t.Errorf("after Y False at 1: Available %s at %d, Ready %s, want False at 1, False", s, g, r.Ready())
	}
	r.SetConditions(&conds, t0)
	for _, step := range []string{"X", "Y"} {
		if c := meta.FindStatusCondition(conds, step); c == nil || c.ObservedGeneration != 1 {
			t.Errorf("step %s rendered as %+v", step, c)
		}
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		steps   []string
		wantErr error
	}{
		{"the Cleaner's steps", cleanerSteps, nil},
		{"no steps", nil, nil},
		{"a root condition type: Available", []string{"A", TypeAvailable}, ErrInvalidStep},
		{"a root condition type: Ready", []string{TypeReady}, ErrInvalidStep},
		{"twice", []string{"A", "B", "A"}, ErrInvalidStep},
		{"empty", []string{""}, ErrInvalidStep},
		{"not a condition type", []string{"Targets Resolved"}, ErrInvalidStep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(1, tt.steps...)
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("New(%q) = %v, want %v", tt.steps, err, tt.wantErr)
			}
			if err == nil && r.Generation() != 1 {
				t.Errorf("Generation = %d, want 1", r.Generation())
			}
			if _, err := FromConditions(nil, 1, tt.steps...); !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Errorf("FromConditions(%q) = %v, want %v", tt.steps, err, tt.wantErr)
			}
		})
	}
}

// TestAcceptInvalid: a report Kubernetes could not store as a condition is refused on its own,
// and changes nothing.
func TestAcceptInvalid(t *testing.T) {
	valid := report("A", 1, F)
	tests := []struct {
		name    string
		edit    func(*Report)
		wantErr error
	}{
		{"valid", func(*Report) {}, nil},
		{"no step", func(r *Report) { r.Step = "" }, ErrInvalidReport},
		{"step is a root condition", func(r *Report) { r.Step = TypeReady }, ErrInvalidReport},
		{"step is not a condition type", func(r *Report) { r.Step = "a b" }, ErrInvalidReport},
		{"undeclared step", func(r *Report) { r.Step = "C" }, ErrUnknownStep},
		{"generation 0", func(r *Report) { r.ObservedGeneration = 0 }, ErrInvalidReport},
		{"no Available status", func(r *Report) { r.Available = "" }, ErrInvalidReport},
		{"bad Available status", func(r *Report) { r.Available = "Yes" }, ErrInvalidReport},
		{"no Applied status", func(r *Report) { r.Applied = "" }, ErrInvalidReport},
		{"bad Health status", func(r *Report) { r.Health = "true" }, ErrInvalidReport},
		{"no reason", func(r *Report) { r.Reason = "" }, ErrInvalidReport},
		{"reason with spaces", func(r *Report) { r.Reason = "Not found" }, ErrInvalidReport},
		{"invalid report with Available=Unknown", func(r *Report) { r.Available, r.Reason = U, "" }, ErrInvalidReport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(1, "A", "B")
			if err != nil {
				t.Fatal(err)
			}
			rep := valid
			tt.edit(&rep)
			err = r.Accept(rep)
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("Accept = %v, want %v", err, tt.wantErr)
			}
			_, stored := r.Step(rep.Step)
			if stored != (err == nil) {
				t.Errorf("step stored = %v after Accept = %v", stored, err)
			}
			if err != nil && (len(r.Trace()) != 1 || !errors.Is(r.Trace()[0].Err, tt.wantErr)) {
				t.Errorf("Trace = %+v, want the refused report", r.Trace())
			}
		})
	}
}

func TestLongMessageIsCut(t *testing.T) {
	r, err := New(1, "A")
	if err != nil {
		t.Fatal(err)
	}
	rep := report("A", 1, T)
	// The cut falls inside the first é, so it moves back before it.
	rep.Message = string(make([]byte, MaxMessageLength-4)) + "ééé"
	if err := r.Accept(rep); err != nil {
		t.Fatal(err)
	}
	got, _ := r.Step("A")
	if want := rep.Message[:MaxMessageLength-4] + "…"; got.Message != want {
		t.Errorf("message of %d bytes ending %q, want %d bytes ending with …", len(got.Message), got.Message[len(got.Message)-8:], len(want))
	}
}

// TestTrace: the reports Accept did not store, the last TraceSize of them, oldest first.
func TestTrace(t *testing.T) {
	var r Root
	if tr := r.Trace(); len(tr) != 0 {
		t.Fatalf("new Root's trace = %+v", tr)
	}
	bad := report("A", 2, T) // newer than the spec
	tests := []struct {
		name      string
		unknowns  int // Available=Unknown reports after the future one
		wantLen   int
		wantFirst int // index of the first entry among all refused reports (0: the future one)
	}{
		{"below the bound", 3, 4, 0},
		{"at the bound", TraceSize - 1, TraceSize, 0},
		{"past the bound, the oldest dropped", TraceSize + 4, TraceSize, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(1, "A", "B")
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Accept(report("A", 1, T)); err != nil { // stored: not traced
				t.Fatal(err)
			}
			all := []Report{bad}
			if err := r.Accept(bad); !errors.Is(err, ErrFutureGeneration) {
				t.Fatalf("Accept(future) = %v", err)
			}
			for i := range tt.unknowns {
				rep := report("B", 1, U)
				rep.At = t0.Add(time.Duration(i) * time.Second)
				all = append(all, rep)
				if err := r.Accept(rep); !errors.Is(err, ErrAvailabilityUnknown) {
					t.Fatalf("Accept(Unknown) = %v", err)
				}
			}
			tr := r.Trace()
			if len(tr) != tt.wantLen {
				t.Fatalf("len(Trace) = %d, want %d", len(tr), tt.wantLen)
			}
			for i, e := range tr {
				want := all[tt.wantFirst+i]
				if e.Report != want {
					t.Errorf("Trace[%d] = %+v, want %+v", i, e.Report, want)
				}
				wantErr := ErrAvailabilityUnknown
				if tt.wantFirst+i == 0 {
					wantErr = ErrFutureGeneration
				}
				if !errors.Is(e.Err, wantErr) {
					t.Errorf("Trace[%d].Err = %v, want %v", i, e.Err, wantErr)
				}
			}
		})
	}
}
