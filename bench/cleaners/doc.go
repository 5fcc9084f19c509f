// Command cleaners measures Kustos's Cleaner detector on a real control plane: what N idle
// Cleaners cost, how fast a target change makes one due, and how late a time-based condition
// is noticed. `make bench` runs it after bench/controlplane:
//
//	go run ./bench/cleaners -kustos bin/kustos
//
// A full run at the default -n 10000 takes about four minutes on 2 cores, most of it Kustos's
// first evaluation of every Cleaner; `-n 500` is a quick smoke run.
//
// # What a run does
//
// One control plane (etcd and kube-apiserver from bin/, started by internal/testenv, with the
// CRDs of charts/kustos/files/crds/). Kustos runs as a separate process:
//
//	kustos run --kubeconfig=… --mode=observe --enable-cleaners=true --state-namespace=kustos-bench
//	  --leader-elect=false --metrics-bind-address=0 --health-probe-bind-address=0 --log-level=error
//
// with GOMAXPROCS, GOGC and GOMEMLIMIT removed from its environment (Go's defaults, Kustos's own
// --gogc); its output
// goes to a temporary file. One list+watch of all Cleaners (started before Kustos) timestamps,
// per Cleaner, when a status with lastEvaluation and when one with lastEvaluation.due=true was
// first delivered, and counts MODIFIED events (status writes: nothing else writes Cleaners).
//
//  1. Idle cost. -namespaces (100) namespaces; -n (10,000) Cleaners c-NNNNN, spread round-robin
//     over them, each with three named ConfigMap targets <name>-a, -b, -c (delete: true, created
//     with data.done "no"), ttl 1s, retry.period 1h and the condition `a.data.done == "yes"`.
//     Created by -workers (32) parallel requests. 2 s later (creationTimestamp has whole seconds,
//     so every TTL has passed) Kustos starts. Measured: the time from its start until the watch
//     has seen every Cleaner with status.lastEvaluation (and the first one), Kustos's CPU time
//     and RSS then; then, after -idle (30 s): CPU time (and its increase over the idle period),
//     RSS, peak RSS (VmHWM), the status writes seen during the idle period and how far into it
//     the last one came. Every Cleaner is then evaluated and not due, so it should sit idle
//     until its period; a Cleaner due here fails the run.
//  2. Re-evaluation latency. For reference first: the round trip of -samples/5+1 status writes
//     (-interval apart) by the bench itself to an inert Cleaner "probe" (TTL 30d, no targets;
//     Kustos ignores status changes), the API server's part of the write each sample waits
//     for. Then -samples (100) of the idle Cleaners, drawn with a seeded RNG (-seed), get
//     data.done "yes" on their ConfigMap "a" (a merge patch), -interval (50 ms) apart. The
//     latency of one sample is the time the watch delivers the Cleaner's status with
//     lastEvaluation.due=true minus the time just before the patch was sent. Observer mode, so
//     nothing is deleted: the Cleaner gets ActionsDone=True ObserverMode and stays. Waits up to
//     -timeout (30 s) after the last patch; a sample never due, or an unsampled Cleaner due,
//     fails the run. Target: p99 ≤ 50 ms (nearest rank: the second largest of 100).
//  3. Lateness. -late (20) Cleaners with retry {monotonic: true, period: 1h} and as many with
//     retry {period: -late-period (20s)}, in their own namespace, each with one ConfigMap target
//     and the condition `time >= timestamp("<T>")`; the i-th of each group has the same T,
//     spread evenly over -late-from (15 s) to -late-to (30 s) after creation, on whole seconds
//     (as Kubernetes timestamps are; the monotonic search finds whole seconds). For each: how
//     late after T the watch delivered the status with due=true (wall time − T), and
//     status.lastEvaluation.time − T (that field has whole seconds only). Target: monotonic ≤ 1 s
//     (wall time, max). Periodic ones are expected up to one period late: reported, not judged.
//     A Cleaner never due, or due before T, fails the run.
//
// At the end Kustos's CPU time, RSS and peak RSS are read once more, then it gets SIGTERM (its
// CPU time including shutdown, from getrusage, is printed too).
//
// Peak RSS is VmHWM in /proc/<pid>/status; CPU time is utime+stime in /proc/<pid>/stat, in
// clock ticks of 1/100 s. The result is a Markdown table on standard output (also written to
// -out), progress goes to standard error; -v adds every latency and lateness, and the first
// status writes of the idle period (before and after). A missed target makes the exit status
// non-zero with -strict (the default); a broken measurement always does. Kustos's output is
// kept when something failed or with -keep-logs; -kustos-log-level debug makes it say which
// target changes it mapped to Cleaners and what the pipeline did.
package main
