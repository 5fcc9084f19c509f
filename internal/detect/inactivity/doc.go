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
package inactivity
