// Package recommend implements `kustos recommend`, the offline twin of the quota detector: it
// reads Kubernetes objects from files or stdin (a cluster dump, or manifests for a dry run),
// makes the same decision the controller would make for every ResourceQuota (quota.Decide), and
// prints the recommendations as JSON lines: the grows, the shrinks the usage window allows or
// holds back, and what the quotas could give back in total (quota.ReclaimTotals).
//
// The package has two halves:
//
//   - load.go names the kinds the decision reads and has package manifest read them (YAML or
//     JSON, multi-document YAML, `kind: List` and `*List` objects) into typed objects, each with
//     the file and line it came from, so that invalid input is reported as FILE:LINE: what is
//     wrong; other kinds are skipped. It then converts events.k8s.io Events, requires names of
//     Namespaces and ResourceQuotas and defaults namespaces, as kubectl would.
//   - recommend.go indexes the objects (namespaces, quotas, FailedCreate events, workloads,
//     state Leases), builds one quota.Snapshot per quota and calls quota.Decide; run.go holds
//     the command line: flags, exit codes and output.
//
// Nothing here talks to a cluster; with --prometheus-url the usage window is read from
// Prometheus as the controller reads it (internal/quotahistory), otherwise from the state
// Leases of the input. The only clock read is the default of --now.
package recommend
