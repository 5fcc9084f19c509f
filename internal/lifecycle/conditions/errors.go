package conditions

import "errors"

// Why Accept did not store a report, matchable with errors.Is. Accept wraps them with the step
// and generation; every one of them also lands in the Trace.
var (
	// ErrInvalidReport: the report lacks what a condition needs (step name, a status among
	// True/False/Unknown for each of Applied, Available and Health, a generation >= 1, a reason
	// Kubernetes accepts), or names a root condition (Available, Ready) as its step.
	ErrInvalidReport = errors.New("invalid report")
	// ErrUnknownStep: the report is from a step the Root was not given.
	ErrUnknownStep = errors.New("unknown step")
	// ErrFutureGeneration: the report claims a generation newer than the spec's (rule 1: invalid).
	ErrFutureGeneration = errors.New("report generation is newer than the spec generation")
	// ErrStaleGeneration: the step already has an accepted report of a newer generation, whose
	// data an older one may not replace (rule 1).
	ErrStaleGeneration = errors.New("report generation is older than the step's last accepted report")
	// ErrAvailabilityUnknown: the report says Available=Unknown — the step's work is still in
	// progress — and is discarded (rule 2). Not a failure: expect another report later.
	ErrAvailabilityUnknown = errors.New("report discarded: Available=Unknown")
	// ErrInvalidStep: New or FromConditions was given a step name that cannot be a condition
	// type, is a root condition type, or is given twice.
	ErrInvalidStep = errors.New("invalid step name")
)
