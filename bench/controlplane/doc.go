// Command controlplane measures Kustos on a real control plane: detection latency, memory and
// CPU, in the same way as the reference implementation Kustos has to beat. `make bench` runs it
// after the Go micro-benchmarks:
//
//	go run ./bench/controlplane -kustos bin/kustos
//
// # What a scenario does
//
// Each scenario gets a fresh control plane (etcd and kube-apiserver from bin/, started by
// internal/testenv, with the CRDs of charts/kustos/files/crds/ as the chart installs them; no
// kube-controller-manager), so the figures of one scenario do not depend on another. Then:
//
//  1. Setup. N namespaces, each with one ResourceQuota "compute" whose spec.hard is
//     requests.cpu: 10, requests.memory: 20Gi; its status (hard the same, used requests.cpu: 2,
//     requests.memory: 4Gi, that is 20 %) is written by this program through the status
//     subresource, because there is no quota controller. Created by 32 workers with a client
//     allowed 2000 QPS (burst 4000). "+noise" scenarios also create 50,000 ordinary Events
//     (Normal, Pulled, about Pods) spread over the namespaces, before Kustos starts.
//  2. Kustos runs as a separate process:
//     kustos run --kubeconfig=… --state-namespace=kustos-bench --leader-elect=false
//     --metrics-bind-address=0 --health-probe-bind-address=0 --log-level=error
//     with GOMAXPROCS, GOGC and GOMEMLIMIT removed from its environment (Go's defaults, Kustos's
//     own --gogc). Its
//     output goes to a file in a temporary directory.
//  3. Idle for -idle (30 s). This includes Kustos's start-up and initial sync. RSS and CPU
//     are read here too ("after idle").
//  4. A watch on core/v1 Events in all namespaces with fieldSelector
//     reason=QuotaResizeRecommended is opened (from the resourceVersion of a list, so nothing is
//     missed). Then -samples (100) quotas, drawn with a seeded RNG (-seed), get used
//     requests.cpu: 9500m (95 %) through UpdateStatus, -interval (50 ms) apart. The latency of
//     one sample is the time the watch delivers the first Kustos (source.component "kustos")
//     Event about that ResourceQuota minus the time just before its UpdateStatus call was sent.
//     The program waits up to -timeout (30 s) after the last update; a sample without an Event
//     is a failure.
//  5. Kustos's peak RSS (VmHWM in /proc/<pid>/status) and CPU time (utime+stime in
//     /proc/<pid>/stat, in clock ticks of 1/100 s) are read while it still runs; then it gets
//     SIGTERM and the program waits for it to exit (its CPU time including shutdown, from
//     getrusage, is printed too).
//
// Percentiles are nearest-rank over the samples that got an Event: p99 of 100 samples is the
// second largest. A Kustos Event about a quota that was not sampled (all others stay at 20 %)
// counts as a failure too.
//
// # Targets
//
// The reference p99 latencies are 20 ms (2000 namespaces), 49 ms (10000) and 1090 ms
// (2000+noise); Kustos must beat them (p99 strictly lower). Peak RSS must stay at or below
// 64 MiB with 2000 namespaces (with or without noise) and 128 MiB with 10000; CPU time at or
// below 2.5 s with 2000 namespaces (with or without noise) and 10.35 s with 10000. Targets apply
// only to scenarios of exactly that shape (namespace count and 50,000 noise Events); other
// scenarios, such as a quick `-scenarios 200` smoke run, are reported without a verdict. With
// -strict (the default) a missed target makes the exit status non-zero; missing Events always
// do.
//
// The result is a Markdown table on standard output, also written to -out if given; progress
// goes to standard error.
package main
