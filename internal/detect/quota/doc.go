// Package quota is the quota-pressure detector (after namespace-resizer; docs/detectors/quota.md):
// it decides when a ResourceQuota is under pressure and what its new hard limit should be.
//
// decide.go and the parsers beside it are pure: a Snapshot (the quota, its namespace's policy,
// the FailedCreate evidence, the remembered state and the time) goes in, a Verdict comes out.
// controller.go gathers the snapshot from the informer cache and hands the decision to the
// change pipeline (internal/pipeline, through lifecycle.Request), which remembers, locks,
// carries out and follows it; it holds no arithmetic of its own. Watches says what it reads.
//
// Sizing from the usage window is pure too: sizing.go holds the window's target, the tolerance
// band and the shrink gates; history.go the daily peaks each quota's state Lease keeps when no
// History source (Prometheus, internal/quotahistory) is set; controller_window.go turns a
// Verdict with shrinks into the pipeline's Decision (opt-in, the withdrawal of an open shrink
// for a grow, the daily look); chartdata.go puts the window's daily peaks in a Change's
// evidence, which the pull request draws.
package quota
