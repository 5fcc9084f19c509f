// Package state is the only place Kustos remembers anything: one coordination.k8s.io Lease per
// change Key in the controller's own namespace. The Lease holds the time of the last modification
// (for cooldowns and stale-event filtering), the lock (holder = the open pull request, in PR mode)
// and a pending decision that was decided but not yet fully recorded. GitOps tools never prune
// these Leases because they are not in Git.
//
// Every write carries the Lease's resourceVersion, so two replicas (or a replica and its own stale
// cache) can never both record the same decision: the loser gets a conflict and retries. Every read
// checks the Lease's kustos.io/key (a name shared by two keys sends the second to a hashed name; a
// legacy Lease, named state-<namespace>-<quota> by namespace-resizer's convention but without a
// key, is adopted only when one target fits it). A bounded bag holds detector
// state. Each replica (named by NewIdentity) keeps a liveness Lease, so that a pending decision
// is taken over only from a replica that is gone. A background sweep (NamespaceSweeper, on the leader) deletes Leases whose
// target namespace no longer exists, closing their open PR first, so that Leases of deleted
// namespaces do not pile up in the controller's namespace; another (GoneSweeper) deletes the
// Leases of per-object detectors' Keys whose object is gone, told by GoneRules for the kinds
// that are not simply asked of the API server (a Cleaner's CloudEvent, a helm release, a VM).
package state
