// Package ephemeral is the detector of short-lived objects declared by Cleaners (CRD
// kustos.io/v1alpha1 Cleaner; docs/detectors/cleaners.md): after a Cleaner's TTL, its CEL
// conditions over its targets decide when the targets, its helm releases and the Cleaner itself go.
//
// The package owns the decision and nothing else: Compile checks a spec and compiles its
// conditions once per generation (the admission webhook and the controller report the same
// field-path errors); Spec.Decide is a pure function from a Snapshot (creation time, the
// targets' objects, now) to a Verdict (the conditions' values, due or not, when to look again,
// found by a binary search when the conditions are monotonic in time). CEL runs with
// Kubernetes' cost limits and a deadline; a condition that cannot be evaluated is false, never
// a deletion.
//
// Its controller gathers a Cleaner's snapshot, decides, and hands every effect of a due cleanup
// to the change pipeline as a Change with a Key of its own — each object's deletion, each helm
// release's removal (lifecycle.ReleaseTarget), the CloudEvent (an EditSendCloudEvent), the
// Cleaner's own deletion — all built by cleanupRequest; then it writes the status. It carries
// out nothing itself: the pipeline's actuators do (observe reports, direct and pr act, the
// helm release and CloudEvent actuators uninstall and send), so that observer, direct and PR
// mode treat a Cleaner's whole effect alike. Vocabulary names the Events the pipeline writes
// about them. Options are its --enable-cleaners, --cleaner-* flags: Validate, and Policy, the
// re-check pulse they set.
package ephemeral
