// Package quota is the quota-pressure detector (after namespace-resizer; docs/detectors/quota.md):
// it decides when a ResourceQuota is under pressure and what its new hard limit should be.
//
// decide.go and the parsers beside it are pure: a Snapshot (the quota, its namespace's policy,
// the FailedCreate evidence, the remembered state and the time) goes in, a Verdict comes out.
// controller.go gathers the snapshot from the informer cache and hands the decision to the
// change pipeline (internal/pipeline, through lifecycle.Request), which remembers, locks,
// carries out and follows it; it holds no arithmetic of its own. Watches says what it reads.
package quota
