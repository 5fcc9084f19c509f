// Package inactivity is the detector of environments nobody uses (after CrownLabs' instance
// inactive termination and its exam termination): activity comes from Prometheus
// (internal/activity, one query per source per check for every target); a target idle for its
// timeout is alerted every notification interval up to its maximum number of alerts, then paused
// (persistent) or deleted through the change pipeline — a pull request for what Git defines, a
// direct change otherwise, an Event in observer mode. Activity, or a restart after the pause,
// starts over; a source that is not collecting makes nothing inactive.
//
// The package owns the decision: ParsePolicy reads the metadata (the target, its template
// object, its Namespace, the flags) and says precisely what it cannot use; Decide is a pure
// function from a Snapshot (policy, activity, the Lease's state, now) to what happens next and
// when. Its state (last activity, alerts sent) lives in the target's Lease, never on the target.
//
// Where things are: controller.go sets the detector up (the Reconciler, its watches) and holds
// Reconcile; gather.go is what a reconcile reads (the target, its template and Namespace, the
// scope, the policy and its problems, whether it runs, its activity); prober.go the exam
// probes and how often they run; request.go is what a reconcile hands the pipeline (Decide over
// the Lease); messages.go the findings and their texts; supersede.go which Change replaces
// which; checkloop.go the Prometheus check loop and what each check queues again; keep.go an
// owner's keep; resume.go what a pause records and the resume its owner asks for; options.go
// the detector's flags (Options: Validate, DefaultOptions, CacheWatches, and ParseKeepPeriods,
// which the extension server's keep links parse with too).
package inactivity
