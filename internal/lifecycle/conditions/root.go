package conditions

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Report is what one step says about the resource after it ran: a status report with three
// mandatory conditions. Only Available enters the arithmetic; Applied ("the work has been started")
// and Health ("additional info about the probe") are checked and kept with the step's report, but
// not persisted in the conditions (see FromConditions).
type Report struct {
	// Step names the step; it becomes the type of the step's condition, so it must be a valid
	// condition type and neither "Available" nor "Ready".
	Step string
	// ObservedGeneration is the spec generation the step worked on (>= 1).
	ObservedGeneration int64
	// Applied, Available and Health are the step's three conditions.
	Applied, Available, Health metav1.ConditionStatus
	// Reason (CamelCase, as a condition reason) and Message explain Available. A Message longer
	// than Kubernetes allows (MaxMessageLength) is cut.
	Reason, Message string
	// At is when the step reported (its last report time); the caller's clock, never read by this
	// package. It may be zero.
	At time.Time
}

// TraceEntry is a report Accept did not store, with the error that says why.
type TraceEntry struct {
	Report Report
	Err    error
}

// TraceSize bounds the trace: the last TraceSize reports Accept did not store are kept (rule
// 2's "status log for tracing"), older ones are dropped. 16 is four rounds of the Cleaner's four
// steps (at the 10s not-Ready re-check, the last 40 seconds): enough to see what a stuck step
// keeps saying, at a fixed cost of a few kilobytes per Root.
const TraceSize = 16

// Root is a resource's root conditions arithmetic: the spec generation, the steps, each step's
// last accepted report, the root Available condition (status and the generation it holds for)
// and a bounded trace. Ready is derived, never stored.
//
// The zero value has spec generation 0 (so it accepts no report before SetGeneration) and no
// declared steps: then the steps are the ones that have reported so far, so Available can turn
// True before a step that has not reported yet has said anything. Declare the steps (New,
// FromConditions) so that a step without a report holds Available back. A Root is used through
// a pointer and is not safe for concurrent use.
type Root struct {
	generation int64
	steps      []string          // declared steps in order; nil: whoever reported
	reports    map[string]Report // last accepted report per step

	// The root Available condition: status, the generation it holds for (0 while Unknown)
	// and, while False, the reason and message of the step reports that made it so.
	available       metav1.ConditionStatus
	availableGen    int64
	availableReason string
	availableMsg    string

	trace     [TraceSize]TraceEntry
	traceNext int // index the next entry goes to
	traceLen  int
}

// New returns a Root at spec generation generation whose Available needs a report from every
// one of steps (their order is the order of the step conditions and of messages). With no
// steps it behaves as the zero value (at that generation). It fails with ErrInvalidStep for a name that cannot be a
// condition type, is "Available" or "Ready", or is given twice.
func New(generation int64, steps ...string) (*Root, error) {
	for i, s := range steps {
		if err := validateStep(s); err != nil {
			return nil, err
		}
		if slices.Contains(steps[:i], s) {
			return nil, fmt.Errorf("step %q given twice: %w", s, ErrInvalidStep)
		}
	}
	r := &Root{generation: generation}
	if len(steps) > 0 {
		r.steps = slices.Clone(steps)
	}
	return r, nil
}

func validateStep(s string) error {
	if s == TypeAvailable || s == TypeReady {
		return fmt.Errorf("step %q is a root condition type: %w", s, ErrInvalidStep)
	}
	if errs := validation.IsQualifiedName(s); len(errs) > 0 {
		return fmt.Errorf("step %q: %v: %w", s, errs, ErrInvalidStep)
	}
	return nil
}

// Generation returns the spec generation.
func (r *Root) Generation() int64 { return r.generation }

// SetGeneration records the spec generation (metadata.generation). Generations only grow: a
// lower one is ignored. A higher one is a spec change, which turns Ready False (rule 5) until
// every step has reported Available=True at it; Available keeps its last known good generation.
func (r *Root) SetGeneration(gen int64) {
	// Rule 5 needs nothing more: Ready is derived (Available=True at the spec generation), and
	// after an increase no step can be at the new generation yet.
	if gen > r.generation {
		r.generation = gen
	}
}

// Accept takes a step's report. It returns nil if the report is now the step's last accepted
// report (and the root Available condition follows from it), or an error matching one of
// ErrInvalidReport, ErrUnknownStep, ErrFutureGeneration, ErrStaleGeneration or
// ErrAvailabilityUnknown (with errors.Is) if it was not stored; such a report changes nothing
// but the Trace.
func (r *Root) Accept(rep Report) error {
	rep.Message = truncate(rep.Message)
	if err := r.check(rep); err != nil {
		r.record(rep, err)
		return err
	}
	if r.reports == nil {
		r.reports = map[string]Report{}
	}
	r.reports[rep.Step] = rep
	r.evaluate(rep)
	return nil
}

// check applies the validity checks and rules 1 and 2 to a report.
func (r *Root) check(rep Report) error {
	if err := validateReport(rep); err != nil {
		return err
	}
	if r.steps != nil && !slices.Contains(r.steps, rep.Step) {
		return fmt.Errorf("step %q: %w", rep.Step, ErrUnknownStep)
	}
	// Rule 1 (invalid): no step can have worked on a generation the spec has not reached.
	if rep.ObservedGeneration > r.generation {
		return fmt.Errorf("step %q at generation %d, spec at %d: %w",
			rep.Step, rep.ObservedGeneration, r.generation, ErrFutureGeneration)
	}
	// Rule 1: only the same or a newer generation than the step's last accepted report; an
	// update cannot replace the data of a newer generation.
	if last, ok := r.reports[rep.Step]; ok && rep.ObservedGeneration < last.ObservedGeneration {
		return fmt.Errorf("step %q at generation %d, its last accepted report at %d: %w",
			rep.Step, rep.ObservedGeneration, last.ObservedGeneration, ErrStaleGeneration)
	}
	// Rule 2: Available=Unknown (work in progress) is discarded: it neither replaces the step's
	// state nor counts as a report (the step's last report time stays); it is only traced.
	if rep.Available == metav1.ConditionUnknown {
		return fmt.Errorf("step %q at generation %d: %w", rep.Step, rep.ObservedGeneration, ErrAvailabilityUnknown)
	}
	return nil
}

func validateReport(rep Report) error {
	if err := validateStep(rep.Step); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidReport, err)
	}
	if rep.ObservedGeneration < 1 {
		return fmt.Errorf("step %q: observed generation %d, want >= 1: %w", rep.Step, rep.ObservedGeneration, ErrInvalidReport)
	}
	if !validStatus(rep.Applied) {
		return fmt.Errorf("step %q: Applied status %q: %w", rep.Step, rep.Applied, ErrInvalidReport)
	}
	if !validStatus(rep.Health) {
		return fmt.Errorf("step %q: Health status %q: %w", rep.Step, rep.Health, ErrInvalidReport)
	}
	// Everything else (Available's status, the reason's form and length) is what the API server
	// checks in the step's condition: check it here, so that a bad report is refused alone
	// instead of failing the whole status update later.
	c := stepCondition(rep, time.Unix(1, 0))
	if errs := metav1validation.ValidateCondition(c, field.NewPath("report")); len(errs) > 0 {
		return fmt.Errorf("step %q: %w: %w", rep.Step, errs.ToAggregate(), ErrInvalidReport)
	}
	return nil
}

func validStatus(s metav1.ConditionStatus) bool {
	return s == metav1.ConditionTrue || s == metav1.ConditionFalse || s == metav1.ConditionUnknown
}

// evaluate applies rules 3 and 4 after rep was accepted.
func (r *Root) evaluate(rep Report) {
	// Rule 3: Available turns True only if all steps are at the same generation and report
	// Available=True there. That generation may be older than the spec's (reports of an older
	// generation arriving after a quick spec change): Available for it, Ready False. It never
	// moves back to an older generation than the one it holds.
	if gen, ok := r.allAvailableAt(); ok && gen >= r.availableGen {
		r.available, r.availableGen = metav1.ConditionTrue, gen
		r.availableReason, r.availableMsg = "", ""
		return
	}
	// Rule 4: Available turns False only if a step whose report is at Available's own
	// generation reports Available=False; False at another generation leaves it alone, so the
	// last known good generation stays Available while Ready is False. Before Available was ever
	// True there is no such generation (availableGen is 0, reports are at 1 or later) and it
	// stays Unknown.
	if rep.Available == metav1.ConditionFalse && rep.ObservedGeneration == r.availableGen {
		r.available = metav1.ConditionFalse
		r.availableReason = ReasonStepUnavailable
		r.availableMsg = r.describeSteps(func(s Report) bool {
			return s.ObservedGeneration == r.availableGen && s.Available == metav1.ConditionFalse
		})
	}
}

// allAvailableAt reports whether every step has an accepted report, all at one generation and
// all Available=True, and which generation.
func (r *Root) allAvailableAt() (int64, bool) {
	names := r.stepNames()
	if len(names) == 0 {
		return 0, false
	}
	var gen int64
	for i, name := range names {
		rep, ok := r.reports[name]
		if !ok || rep.Available != metav1.ConditionTrue {
			return 0, false
		}
		if i == 0 {
			gen = rep.ObservedGeneration
		} else if rep.ObservedGeneration != gen {
			return 0, false
		}
	}
	return gen, true
}

// stepNames returns the declared steps, or, without any, the reporting ones in name order.
func (r *Root) stepNames() []string {
	if r.steps != nil {
		return r.steps
	}
	names := make([]string, 0, len(r.reports))
	for name := range r.reports {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Available returns the root Available condition's status and the generation it holds for
// (the last known good generation; 0 while Unknown).
func (r *Root) Available() (status metav1.ConditionStatus, observedGeneration int64) {
	if r.available == "" {
		return metav1.ConditionUnknown, 0
	}
	return r.available, r.availableGen
}

// Ready returns True if Available is True at the spec generation (rule 5), else False.
func (r *Root) Ready() metav1.ConditionStatus {
	if r.available == metav1.ConditionTrue && r.availableGen == r.generation {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// Step returns the step's last accepted report, if it has one.
func (r *Root) Step(name string) (Report, bool) {
	rep, ok := r.reports[name]
	return rep, ok
}

// Trace returns the last TraceSize reports Accept did not store, oldest first. It lives as
// long as the Root: it is not persisted in the conditions.
func (r *Root) Trace() []TraceEntry {
	out := make([]TraceEntry, 0, r.traceLen)
	start := (r.traceNext - r.traceLen + TraceSize) % TraceSize
	for i := range r.traceLen {
		out = append(out, r.trace[(start+i)%TraceSize])
	}
	return out
}

func (r *Root) record(rep Report, err error) {
	r.trace[r.traceNext] = TraceEntry{Report: rep, Err: err}
	r.traceNext = (r.traceNext + 1) % TraceSize
	if r.traceLen < TraceSize {
		r.traceLen++
	}
}
