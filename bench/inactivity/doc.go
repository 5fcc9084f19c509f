// Command inactivity measures Kustos's inactivity detector on a real control plane and a real
// Prometheus: how many Prometheus queries one check cycle makes for 10,000 targets (the design:
// one per activity source, whatever the number of targets), how long one cycle takes from its
// first query until every target is decided, and Kustos's memory and CPU meanwhile. `make
// bench` runs it after bench/expiry:
//
//	go run ./bench/inactivity -kustos bin/kustos
//
// A full run at the default -n 10000 takes under two minutes on 2 cores; `-n 500
// -namespaces 10 -active 10 -cycles 2 -interval 5s -min-step 5s -scrape 2s -timeout 30m` is
// a quick smoke run.
//
// # What a run does
//
// One control plane (etcd and kube-apiserver from bin/, started by internal/testenv; no
// kube-controller-manager, so a Deployment with replicas 1 costs no ReplicaSet or pod).
// -namespaces (100) namespaces, each with kustos.io/owner; -n (10,000) Deployments
// env-NNNNN spread round-robin over them, replicas 1 (running, so each is a target whose
// idleness counts), created by -workers (32) parallel requests before Kustos starts.
//
// A real Prometheus (bin/prometheus, started by internal/activity/promtest) scrapes, every
// -scrape (5 s), an exporter with, for every target, ingress-nginx's
// nginx_ingress_controller_requests{namespace,service,status="200"} counter and the bastion's
// bastion_ssh_connections{namespace,name} gauge, plus
// nginx_ingress_controller_config_last_reload_successful = 1: 2n+1 series. -active (100)
// targets are in use: every (n/active)-th, alternately through the ingress (its counter grows
// every scrape/2) and the bastion (its gauge is 1); every other counter stays flat and every
// other gauge 0. The bench waits until Prometheus holds every series and the first increases.
//
// Kustos runs as a separate process (bench/internal/kustosproc: Go's runtime defaults, its
// output in a temporary file):
//
//	kustos run --kubeconfig=… --mode=observe --enable-cleaners=false --enable-expiry=false
//	  --enable-inactivity --inactivity-kinds=apps/v1/Deployment --prometheus-url=<proxy>
//	  --inactivity-check-interval=15s --inactivity-timeout=1h --activity-min-step=15s
//	  --activity-lookback=1h --state-namespace=kustos-bench --leader-elect=false
//	  --metrics-bind-address=127.0.0.1:<free port> --health-probe-bind-address=0 --log-level=error
//
// with the default activity sources (nginx and bastion: 2 sources). --activity-lookback is 1h
// rather than its default 14d: this Prometheus holds minutes of data, and the lookback only
// sets the first check's window. The timeout is an hour, so no target becomes idle during the
// run: observer mode writes no Event, and each target's state Lease changes only when its last
// activity does.
//
// Kustos reaches Prometheus only through a reverse proxy on loopback (httputil.ReverseProxy)
// that records every request: its path, the source its query reads (by the metric it names),
// when it came and when it was answered. A cycle is the requests that start within half a
// check interval of each other. Every -poll (200 ms) the bench reads Kustos's /metrics and its
// /proc (RSS, VmHWM, utime+stime).
//
//  1. Initial pass: Kustos looks at every target once after its start (its initial lists);
//     over when kustos_reconcile_duration_seconds_count{detector="inactivity"} is at least n
//     and the inactivity controller's work queue (workqueue_depth) and workers
//     (controller_runtime_active_workers) are idle at two consecutive reads (the same test as
//     bench/expiry, bench/internal/kmetrics.Settled). Its first check, at start, runs meanwhile
//     with the window = the lookback; it is reported on its own.
//  2. Cycles: the bench waits for -cycles (4) complete cycles that start after the pass (and
//     the start of the next one), then analyses every cycle the proxy saw:
//     - queries: requests to /api/v1/query and /api/v1/query_range. Every cycle must make
//     exactly one per source (nginx once, bastion once) and each must be answered 200, and in
//     the measured cycles Kustos's kustos_activity_queries_total{status="ok"} must rise by the
//     number of sources; otherwise the run FAILS, whatever -strict says.
//     - check: the increase of kustos_activity_check_duration_seconds_sum over the one check in
//     between two reads (Kustos's own measure of its queries), and the queries' time at the
//     proxy.
//     - wall time: from the cycle's first query at the proxy to "decided", the first of two
//     consecutive reads after its last answer and before the next cycle that show at least n
//     inactivity reconciles since the last read before that answer and an idle queue. After a
//     check, Kustos queues every target once (queued items dedupe, waiting RequeueAfters
//     included), so n reconciles and an empty queue mean each target was decided with the new
//     data. The resolution is the poll interval; reading /metrics five times a second costs
//     Kustos a little CPU. Target: below the check interval (else the cycles overlap).
//     - CPU per cycle: from the last read before its first query to the last read before the
//     next cycle's first query; API requests (rest_client_requests_total), Events written and
//     reconcile errors over the same span (an error fails the run).
//  3. Activity: the inactivity state Leases in kustos-bench that hold a last activity must be
//     exactly the targets in use (all of them; no idle one), else the run FAILS: the queries
//     were answered but did not say what they should.
//
// Also reported, as arithmetic and labelled so: what asking Prometheus once per target and
// source would cost (n × sources queries per cycle). At the end Kustos gets SIGTERM; its CPU
// time including shutdown (getrusage) is printed too.
//
// The result is a Markdown table on standard output (also written to -out), progress goes to
// standard error; -v adds every cycle's figures. A missed target makes the exit status non-zero
// with -strict (the default); a broken measurement always does. Kustos's output is kept when
// something failed or with -keep-logs.
package main
