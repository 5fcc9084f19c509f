// Command wholecluster measures Kustos as a platform team runs it: one process with every
// detector on, over a whole 10,000-tenant cluster (issue 19). It reports memory (peak,
// anonymous, Go heap), CPU while idle, the time until every target was looked at once, and each
// detector's detection latency measured as its own bench does. `make bench` runs it last;
// `make bench-churn` runs it with 30 minutes of churn:
//
//	go run ./bench/wholecluster -kustos bin/kustos
//	go run ./bench/wholecluster -kustos bin/kustos -churn 30m
//
// `-namespaces 200 -deployments 400 -cleaners 50 -events 500 -idle 20s -quota-samples 10
// -cleaner-samples 5 -scheduled 5 -check-interval 10s` is a quick smoke run (about two minutes).
//
// # What a run does
//
// One control plane (etcd and kube-apiserver from -bin, started by internal/testenv with
// Kustos's CRDs as the chart installs them; no kube-controller-manager, so no ReplicaSets, pods
// or quota usage follow from the objects). Setup, by -workers (32) parallel requests with a
// client allowed 2000 QPS, before Kustos starts:
//
//   - -namespaces (10,000) namespaces wc-NNNNN, each with a ResourceQuota "compute" (hard
//     requests.cpu 10, requests.memory 20Gi) whose status, 20% used, the bench writes through
//     the status subresource (bench/internal/objects.CreateQuotas, as bench/controlplane);
//   - -deployments (20,000) Deployments app-NNNNN, replicas 1, Deployment i in namespace
//     i mod -namespaces: i mod 10 = 1 is an expiry target (kustos.io/owner and
//     kustos.io/expires-at 30 days ahead), i mod 10 = 2 an inactivity target (kustos.io/owner and
//     kustos.io/inactivity-timeout 2h), the other 80% are ordinary;
//   - -cleaners (1,000) Cleaners c-NNNNN, Cleaner j in the namespace of the j-th ordinary
//     Deployment, with that Deployment as its one target d (delete: true; observer mode deletes
//     nothing), TTL 1s, retry period 1h. Nine in ten have the condition `d.spec.replicas == 0`,
//     one text shared as CI-generated Cleaners share theirs; the tenth a text of its own with the
//     same meaning. Every Deployment has replicas 1, so no Cleaner is due and nothing is deleted;
//   - -events (50,000) ordinary Events (kubelet's Normal Pulled, about Pods) spread over the
//     namespaces (objects.CreateNoise, bench/controlplane's "+noise").
//
// A real Prometheus (bin/prometheus from -bin or $KUSTOS_TESTBIN, started by
// internal/activity/promtest) scrapes every -scrape (5 s) an exporter (bench/internal/promrun, as
// bench/inactivity) with every inactivity target's ingress-nginx request counter and bastion SSH
// gauge; 90% of the targets are in use, alternately through the ingress (their counter grows)
// and the bastion (their gauge is 1). With a timeout of 2h none goes idle during the run.
//
// Kustos runs as a separate process (bench/internal/kustosproc: GOMAXPROCS, GOGC and GOMEMLIMIT
// removed from its environment, so Go's defaults and Kustos's own --gogc), its output in a
// temporary file:
//
//	kustos run --kubeconfig=… --mode=observe --enable-cleaners=true --enable-expiry=true
//	  --lifecycle-kinds=apps/v1/Deployment --expiry-warning-before=10s --notification-interval=5s
//	  --enable-inactivity=true --inactivity-kinds=apps/v1/Deployment --prometheus-url=<prometheus>
//	  --inactivity-check-interval=30s --activity-min-step=30s --activity-lookback=1h
//	  --state-namespace=kustos-bench --leader-elect=false --metrics-bind-address=127.0.0.1:<free port>
//	  --health-probe-bind-address=0 --log-level=error
//
// (-warning-before, -notification-interval and -check-interval set those three; the quota
// detector always runs.) One list+watch of the Events Kustos writes (bench/internal/kevents) and
// one of all Cleaners (bench/internal/cleanerwatch) start before Kustos. The bench reads
// Kustos's /metrics every -poll (200 ms), except during the idle period.
//
//  1. Initial pass: over when, at two consecutive reads, each detector's controller has at least
//     as many reconciles (controller_runtime_reconcile_total) as it has objects to look at,
//     none since the read before, and nothing in its work queue (workqueue_depth) or being
//     reconciled (controller_runtime_active_workers): "quota" every quota,
//     "expiry-deployment.apps" and "inactivity-deployment-apps" every Deployment (both watch
//     them all, targets or not), "expiry-namespace" every namespace, "cleaner" every Cleaner
//     (bench/internal/kmetrics.Settled for each). Reported: the time from Kustos's start to the
//     first of those two reads; then VmHWM, VmRSS and RssAnon (/proc/<pid>/status) and Go's
//     heap after GC, go_gc_heap_live_bytes (the runtime's /gc/heap/live:bytes, which
//     client_golang's Go collector exports because controller-runtime registers it with
//     runtime metrics), beside go_memstats_heap_inuse_bytes.
//     Then the first inactivity check that starts after the pass is awaited (a cycle as in 3):
//     start-up work is over after it. The first check looks at every Deployment (once in
//     inactivity.FullSweepEvery checks), and a check that learns a used target's activity for
//     the first time writes it to the target's Lease; those writes had fallen into an idle
//     minute that started at the pass (idle CPU 3.8–4.2%). Reported: when it was decided.
//  2. Idle period: -idle (60 s), /metrics read only every -idle-poll (15 s), as each read costs
//     Kustos CPU. Reported: the CPU time (utime+stime in /proc/<pid>/stat) over it as % of one
//     core, the memory figures again at its end, and the Kustos Events written during it (any
//     fails the run: nothing is due).
//  3. Detection latency, each as its own bench defines it:
//     - quota (bench/controlplane): -quota-samples (100) quotas, drawn with a seeded RNG
//     (-seed), get used requests.cpu 9500m (95%) through UpdateStatus, -interval (50 ms)
//     apart; the latency of one is the time the watch delivers Kustos's
//     QuotaResizeRecommended Event about it minus the time just before its update was sent.
//     Target: p99 below the reference quota controller's at 10,000 namespaces, 49 ms.
//     - expiry (bench/expiry, bench/internal/expirysched): -scheduled (20) Deployments
//     due-NNN in namespace wc-scheduled, deadlines spread over -from (15 s) to -to (40 s)
//     after their creation; the ExpiryDue Event seen minus the deadline. Target: p99 ≤ 1 s,
//     none early. Runs meanwhile with the other two.
//     - Cleaners (bench/cleaners): -cleaner-samples (20) Cleaners drawn with the same RNG get
//     their Deployment scaled to 0 (a merge patch), -interval apart; the latency is the time
//     the watch delivers the Cleaner's status with lastEvaluation.due=true minus the time
//     just before the patch. Target: p99 ≤ 50 ms.
//     - inactivity (bench/inactivity's cycle wall time, read from Kustos's metrics rather than a
//     proxy in front of Prometheus): a check cycle starts at the last read before
//     kustos_activity_queries_total rose, and is decided at the first of two consecutive reads,
//     before the next cycle, that show at least as many reconciles of
//     "inactivity-deployment-apps" since its start as there are inactivity targets and an idle
//     queue. Cycles that start after the idle period count (the latencies, and churn if any,
//     run meanwhile); the resolution is -poll. Target: p99 below the check interval.
//     A sample that gets no answer within -timeout (30 s) after the last one, an answer about
//     an object that was not sampled, or a failed write fails the run.
//  4. Churn, with -churn DURATION (default 0: none): every -churn-tick (5 s) a tenant is
//     created (a namespace churn-NNNNN with its quota at 20%, five Deployments: one expiry
//     target, one inactivity target with activity, three ordinary; and a Cleaner over one of
//     those) and the tenant created six ticks before is deleted (its objects, then the namespace,
//     which the bench finalizes itself as no namespace controller runs); one standing
//     inactivity target's activity is switched on or off. Kustos's heap after GC is read every
//     -heap-every (1 m; at most a sixth of -churn) and at the end. The run FAILS, at any size,
//     if the median of the readings in the last sixth of the churn is more than 10% above the
//     median of those from a sixth of it to a third: minutes 25–30 against minutes 5–10 with
//     `-churn 30m` (issue 19: from minute 5 to minute 30; one reading moves by a fifth with what
//     a check has in flight), the same proportions for a shorter churn. Those readings must come
//     after the churn tenants reach their steady number
//     (six alive), so a sixth of -churn must be at least six -churn-tick: -churn 3m at least
//     with the default tick, `-churn 60s -churn-tick 1s` for a quick look.
//
// At the end Kustos's memory and CPU are read once more, then it gets SIGTERM (its CPU time
// including shutdown, from getrusage, is printed too).
//
// # Targets
//
// Issue 19's, for the full-size shape only (10,000 namespaces, 20,000 Deployments, 1,000
// Cleaners, 50,000 Events): peak RSS ≤ 196 MiB (the reference quota controller's at 10,000
// namespaces, for quota alone), anonymous RSS ≤ 120 MiB, idle CPU ≤ 2% of a core, each
// detector's latency target above. Peak and anonymous RSS are judged on the larger of the
// readings after the pass and after the idle period. Any other shape is reported without
// verdicts (churn's growth excepted). A missed target makes the exit status non-zero with
// -strict (the default); a broken measurement always does.
//
// The result is a Markdown table on standard output (also written to -out), progress goes to
// standard error; -v adds every scheduled Deployment's lateness. Kustos's output is kept when something failed or
// with -keep-logs.
package main
