// Package detectkit holds the steps the expiry and inactivity detectors' Reconcile functions
// share, so that each detector's Reconcile says only what is its own: the reconcile's duration
// metric, reading the target and its Namespace from the cache (forgetting a target that is
// gone), whether this installation serves it (--namespace-selector), the Warning Events about
// metadata it cannot use, the state entries it cannot read, the decisions the pipeline
// committed, the Supersedes rule of a detector whose Changes name their cycle by a time, and
// what a look read of its target (Seen), which the same reads of the API server
// (TargetReader) must give again before a merge stands on it.
//
// It sits beside the detectors and below them: it imports lifecycle and metrics of ours, never
// a detector, and decides nothing.
package detectkit
