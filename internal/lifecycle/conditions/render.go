package conditions

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Types of the root conditions. Each step has a condition too, whose type is the step's name.
const (
	// TypeAvailable is the root Available condition: the last known good generation.
	TypeAvailable = "Available"
	// TypeReady is the root Ready condition: Available at the spec generation.
	TypeReady = "Ready"
)

// Reasons of the root conditions (and of a step's condition before its first report).
const (
	// ReasonAllStepsAvailable: every step reported Available=True at the condition's
	// generation (Available: its own; Ready: the spec's).
	ReasonAllStepsAvailable = "AllStepsAvailable"
	// ReasonStepUnavailable: a step reported Available=False; the message names the steps,
	// their generations and what they said. On Available: a step at Available's own
	// generation (rule 4). On Ready or an Unknown Available, the first failing step's own
	// reason is used instead (e.g. InvalidSpec); this one only when that report has none.
	ReasonStepUnavailable = "StepUnavailable"
	// ReasonReconciling: not every step has reported Available=True at the generation yet (a
	// spec change the steps are still working on, a step with no report); the message names
	// the steps still missing and the generation of their last report.
	ReasonReconciling = "Reconciling"
	// ReasonNoReports: no step has an accepted report yet. On a step's condition: that step
	// has none (it has not reported, or only Available=Unknown).
	ReasonNoReports = "NoReports"
)

// MaxMessageLength is the longest condition message Kubernetes accepts (in bytes); longer
// report messages and the root conditions' messages are cut to it.
const MaxMessageLength = 32768

// SetConditions writes the root state into conds with meta.SetStatusCondition and reports
// whether anything changed:
//
//   - Available: its status and, as ObservedGeneration, its own last known good generation
//     (0 while Unknown).
//   - Ready: ObservedGeneration is the spec generation.
//   - one condition per step, its type the step's name: the step's last accepted report
//     (Available's status, the reason, message and observed generation), or Unknown with
//     ReasonNoReports. This is what FromConditions reads back.
//
// A condition whose status changes gets now as its last transition time (a step condition: the
// time of the report, if it has one). Conditions of other types are left alone.
func (r *Root) SetConditions(conds *[]metav1.Condition, now time.Time) (changed bool) {
	set := func(c metav1.Condition) {
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Message = truncate(c.Message)
		if meta.SetStatusCondition(conds, c) {
			changed = true
		}
	}
	set(r.availableCondition())
	set(r.readyCondition())
	for _, name := range r.stepNames() {
		if rep, ok := r.reports[name]; ok {
			set(stepCondition(rep, rep.At))
			continue
		}
		set(metav1.Condition{
			Type: name, Status: metav1.ConditionUnknown,
			Reason: ReasonNoReports, Message: "no accepted report yet",
		})
	}
	return changed
}

// FromConditions rebuilds a Root at spec generation generation, for the given steps, from the
// conditions SetConditions wrote (typically a custom resource's status.conditions), so that a
// controller can load it, Accept new reports and write it back:
//
//   - Available: status, observed generation, and (while False) reason and message.
//   - each step's last accepted report from the step's condition (True or False with an
//     observed generation >= 1; anything else is no report). Applied and Health are not
//     persisted and come back Unknown. At comes back as the condition's last transition time,
//     the last time the step's status changed: no later than its real last report.
//   - Ready is derived, never read; the trace starts empty.
//
// Without steps only Available is restored. The error is New's.
func FromConditions(conds []metav1.Condition, generation int64, steps ...string) (*Root, error) {
	r, err := New(generation, steps...)
	if err != nil {
		return nil, err
	}
	if c := meta.FindStatusCondition(conds, TypeAvailable); c != nil && c.ObservedGeneration >= 1 &&
		(c.Status == metav1.ConditionTrue || c.Status == metav1.ConditionFalse) {
		r.available, r.availableGen = c.Status, c.ObservedGeneration
		if c.Status == metav1.ConditionFalse {
			r.availableReason, r.availableMsg = c.Reason, c.Message
		}
	}
	for _, name := range steps {
		c := meta.FindStatusCondition(conds, name)
		if c == nil || c.ObservedGeneration < 1 ||
			(c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse) {
			continue
		}
		if r.reports == nil {
			r.reports = map[string]Report{}
		}
		r.reports[name] = Report{
			Step:               name,
			ObservedGeneration: c.ObservedGeneration,
			Applied:            metav1.ConditionUnknown,
			Available:          c.Status,
			Health:             metav1.ConditionUnknown,
			Reason:             c.Reason,
			Message:            c.Message,
			At:                 c.LastTransitionTime.Time,
		}
	}
	return r, nil
}

// stepCondition is a step's condition for its report; at is its last transition time if the
// status changes (zero: the caller's now).
func stepCondition(rep Report, at time.Time) metav1.Condition {
	c := metav1.Condition{
		Type:               rep.Step,
		Status:             rep.Available,
		ObservedGeneration: rep.ObservedGeneration,
		Reason:             rep.Reason,
		Message:            rep.Message,
	}
	if !at.IsZero() {
		c.LastTransitionTime = metav1.NewTime(at)
	}
	return c
}

func (r *Root) availableCondition() metav1.Condition {
	status, gen := r.Available()
	c := metav1.Condition{Type: TypeAvailable, Status: status, ObservedGeneration: gen}
	switch status {
	case metav1.ConditionTrue:
		c.Reason = ReasonAllStepsAvailable
		c.Message = fmt.Sprintf("all steps reported Available=True at generation %d", gen)
	case metav1.ConditionFalse:
		c.Reason, c.Message = r.availableReason, r.availableMsg
		if c.Reason == "" {
			c.Reason = ReasonStepUnavailable
		}
	default:
		c.Reason, c.Message = r.pending()
	}
	return c
}

func (r *Root) readyCondition() metav1.Condition {
	c := metav1.Condition{Type: TypeReady, Status: r.Ready(), ObservedGeneration: r.generation}
	if c.Status == metav1.ConditionTrue {
		c.Reason = ReasonAllStepsAvailable
		c.Message = fmt.Sprintf("all steps reported Available=True at generation %d", r.generation)
	} else {
		c.Reason, c.Message = r.pending()
	}
	return c
}

// pending says why the spec generation is not Ready: no reports, a step's Available=False, or
// steps still to report Available=True at it.
func (r *Root) pending() (reason, message string) {
	if len(r.reports) == 0 {
		if len(r.steps) == 0 {
			return ReasonNoReports, "no step has reported yet"
		}
		return ReasonNoReports, "waiting for the first report of " + strings.Join(r.steps, ", ")
	}
	failed := func(s Report) bool { return s.Available == metav1.ConditionFalse }
	if msg := r.describeSteps(failed); msg != "" {
		// The first failing step's own reason (InvalidSpec, Forbidden…) is what `kubectl get`
		// and `kubectl wait` users see first; the message names every failing step.
		for _, name := range r.stepNames() {
			if rep, ok := r.reports[name]; ok && failed(rep) && rep.Reason != "" {
				return rep.Reason, msg
			}
		}
		return ReasonStepUnavailable, msg
	}
	var behind []string
	for _, name := range r.stepNames() {
		rep, ok := r.reports[name]
		switch {
		case !ok:
			behind = append(behind, name+" (no report)")
		case rep.ObservedGeneration != r.generation:
			behind = append(behind, fmt.Sprintf("%s (at generation %d)", name, rep.ObservedGeneration))
		}
	}
	message = fmt.Sprintf("waiting for Available=True at generation %d", r.generation)
	if len(behind) > 0 {
		message += " from " + strings.Join(behind, ", ")
	}
	return ReasonReconciling, message
}

// describeSteps lists the steps whose last accepted report matches, with its generation and
// message (its reason if it has none), in step order.
func (r *Root) describeSteps(match func(Report) bool) string {
	var parts []string
	for _, name := range r.stepNames() {
		rep, ok := r.reports[name]
		if !ok || !match(rep) {
			continue
		}
		what := rep.Message
		if what == "" {
			what = rep.Reason
		}
		parts = append(parts, fmt.Sprintf("%s at generation %d: %s", name, rep.ObservedGeneration, what))
	}
	return strings.Join(parts, "; ")
}

// truncate cuts s to MaxMessageLength bytes at a rune boundary, marking the cut.
func truncate(s string) string {
	if len(s) <= MaxMessageLength {
		return s
	}
	const mark = "…"
	end := MaxMessageLength - len(mark)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}
