// Command expiry measures Kustos's expiry detector on a real control plane: what thousands of
// environments with an owner and a far deadline cost while nothing is due, and how punctually
// the removal of an environment becomes due. `make bench` runs it after bench/cleaners:
//
//	go run ./bench/expiry -kustos bin/kustos
//
// A full run at the default -n 10000 takes about a minute and a half on 2 cores, most of it
// waiting: the idle period and the deadlines of the scheduled group; `-n 500 -idle 10s
// -scheduled 10` is a quick smoke run.
//
// # What a run does
//
// One control plane (etcd and kube-apiserver from bin/, started by internal/testenv; no
// kube-controller-manager, so no ReplicaSets or Deployment status writes). Kustos runs as a
// separate process:
//
//	kustos run --kubeconfig=… --mode=observe --enable-cleaners=false --enable-expiry=true
//	  --lifecycle-kinds=apps/v1/Deployment --expiry-warning-before=10s --notification-interval=5s
//	  --state-namespace=kustos-bench --leader-elect=false --metrics-bind-address=127.0.0.1:<free port>
//	  --health-probe-bind-address=0 --log-level=error
//
// with GOMAXPROCS, GOGC and GOMEMLIMIT removed from its environment (Go's defaults, Kustos's own
// --gogc); its output
// goes to a temporary file. Observer mode: nothing is deleted, ExpiryWarning and ExpiryDue are
// Warning Events. One list+watch of the Events Kustos writes (fieldSelector source=kustos,
// started before Kustos) timestamps when each was delivered, per Deployment and reason.
//
//  1. Initial pass. -namespaces (100) namespaces; -n (10,000) Deployments env-NNNNN, spread
//     round-robin over them, replicas 0 (no pods), each with kustos.io/owner and
//     kustos.io/expires-at -far-future (30 days) ahead, created by -workers (32) parallel
//     requests before Kustos starts. Nothing about them is written to the API server while
//     nothing is due (no Lease, no Event), so the bench reads Kustos's own /metrics every -poll
//     (100 ms): the pass is over when controller_runtime_reconcile_total of the controller
//     "expiry-deployment.apps" is at least -n, and workqueue_depth (items ready; those waiting
//     for a RequeueAfter are not counted) and controller_runtime_active_workers of every
//     "expiry-…" controller are 0, at two consecutive reads with no reconcile in between.
//     controller-runtime queues every object of its initial lists before its workers start, so
//     an empty queue after -n reconciles means every Deployment was looked at. Reported: the
//     time from Kustos's start to the first of those two reads, the reconciles by then (a
//     Deployment may be queued once more by its Namespace's initial event), and Kustos's CPU
//     time, RSS and peak RSS right after.
//  2. Idle period. -idle (30 s) with nothing due. Reported: the CPU time over it, RSS and peak
//     RSS (VmHWM) at its end, and, from two reads of /metrics at its start and end, the
//     reconciles of every controller and the API requests Kustos made (rest_client_requests_total:
//     the replica's liveness Lease is renewed every 5 s), and the Kustos Events written. An Event
//     here fails the run.
//  3. Scheduling. -scheduled (50) Deployments due-NNN in namespace expiry-scheduled, whose
//     kustos.io/expires-at deadlines are spread evenly over -from (15 s) to -to (40 s) after the
//     group's creation starts, on whole seconds. With -warning-before (10s) > -interval (5s),
//     Kustos warns at deadline − 10 s, and ExpiryDue is due at max(deadline, warning sent + 5 s),
//     that is at the deadline itself as long as the warning was sent at most 5 s late; the bench
//     checks that from when the watch saw the warning (Kustos records the warning's time after
//     writing its Event), and fails the run otherwise. Measured per Deployment: when the watch
//     delivered its ExpiryDue Event minus the deadline (target: p99 ≤ 1 s; nearest rank, so with
//     50 samples the largest), and the same for ExpiryWarning minus (deadline − 10 s), reported
//     only. An Event seen before its time, or whose lastTimestamp (Kustos's decision time, in
//     whole seconds, compared with a whole-second due time) is before it, counts as early and
//     fails the run, as does a missing one or an ExpiryDue without a warning. Waits up to
//     -timeout (30 s) after the last deadline, then 1 s more for duplicates.
//
// Any Kustos Event about an idle Deployment, or of another reason, fails the run. At the end
// Kustos's CPU time, RSS and peak RSS are read once more, then it gets SIGTERM (its CPU time
// including shutdown, from getrusage, is printed too).
//
// Peak RSS is the largest VmHWM in /proc/<pid>/status read so far (Linux updates the mark it
// reports lazily: a later reading can be a little lower than an earlier one); CPU time is
// utime+stime in /proc/<pid>/stat, in clock ticks of 1/100 s. Reading /metrics costs Kustos a little CPU (ten reads a second
// during the initial pass, one during the idle period). The result is a Markdown table on
// standard output (also written to -out), progress goes to standard error; -v adds every
// warning's and ExpiryDue's lateness. A missed target makes the exit status non-zero with
// -strict (the default); a broken measurement always does. Kustos's output is kept when
// something failed or with -keep-logs.
package main
