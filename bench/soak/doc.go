// Command soak is a randomized soak of the whole system: faults no one scripted, injected while
// a random workload runs, and Kustos's promises checked all along from outside, in the manner of
// etcd's robustness tests. `make soak` runs it for SOAK_DURATION (20m) with SOAK_SEED, the -seed flag
// (empty: an RNG seed from the clock). The RNG seed is printed first; given back, it replays
// the same workload and faults (the timing of the processes, and so the interleaving, is not
// replayed):
//
//	go run ./bench/soak -kustos bin/kustos -duration 20m -seed 42
//
// TestSoakSmoke runs it for three minutes (`make e2e`, `make test`).
//
// # The system
//
// etcd, kube-apiserver and kube-controller-manager (internal/testenv; the quota, ReplicaSet and
// namespace controllers are the real ones), and the GitHub-compatible test server
// (internal/gitops/githubtest) over HTTP with GitHub's secondary rate limits enforced, holding
// acme/gitops with a required check. -replicas (2) `kustos run` processes (bench/internal/
// kustosproc) share one state namespace with leader election on, in PR mode with auto-merge:
// the quota and expiry detectors, expiry grouped as -group-by says (namespace, Kustos's default:
// one PR removes a tenant's previews that fall due within --group-window=5s, and takes out one
// extended meanwhile; none: one PR a preview), --pr-poll-interval=3s, a warning 10 s before
// a deadline and the removal at least 5 s after it, --max-new-prs-per-hour=0, and
// --allow-delete=expiry:apps/deployments (every preview has a manifest in Git, so nothing may
// be deleted directly; were it, the check below would see it). The Cleaner detector runs too:
// the API server has the Cleaner CRD (charts/kustos/files/crds), the replicas verify the
// author stamps the soak signs as the admission webhook would (--cleaner-author-key-file; the
// author is the soak's own user), and --allow=cleaner:delete:configmaps,cleaner:delete:kustos.io/cleaners
// lets Cleaners delete ConfigMaps and themselves directly, never Secrets. Expiry warnings go by mail to
// each preview's owner (its own address, soak+<preview>@example.com, so that one message holds
// one preview's notices) through a real Mailpit (bin/mailpit), behind a TCP proxy of the soak's
// that the faults take down, with Kustos's batching on (--notify-mail-batch-window=1s). Every
// replica serves the extension links (--extension-addr, periods 20s and 40s) behind one front
// door of the soak's (--extension-url), as an Ingress would, forwarding to the first replica
// that answers. The inactivity detector runs too (lab.go, prom.go): a real Prometheus
// (internal/activity/promtest) scrapes, every second, an exporter of the soak's holding the
// bastion's bastion_ssh_connections{namespace,name} for each lab (1 while used, 0 idle), and the
// replicas ask it through a proxy of the soak's (--prometheus-url) with the bastion as the only
// source (--inactivity-config, minRange 3s), --inactivity-check-interval=2s,
// --activity-min-step=1s, --max-alerts=1 (one alert by mail to the lab's owner, the pause one
// --notification-interval later) and --allow=inactivity:pause:apps/deployments (every lab has a
// manifest in Git, so nothing is paused directly; were it, the check below would see it).
//
// Around Kustos the bench plays the rest of the world: a CI that reports the required check
// green on each new PR head one to six seconds after it appears; a GitOps tool that every two
// seconds applies each tenant's quota from the base branch and prunes a preview whose manifest
// a merged PR removed, and each lab's replicas from its manifest; a human (below).
//
// # The workload
//
// One action every -tick (3 s; longer in a run of over about seven minutes, so that at most
// 140 actions, the labs' one every two ticks counted, keep Kustos's content-creating GitHub
// requests under the 500 an hour GitHub allows),
// drawn by the seeded RNG: a tenant appears (its quota.yaml and
// kustomization in Git, then its namespace and ResourceQuota requests.cpu 4 in the cluster) or
// disappears (namespace deleted, then its files); a tenant is pushed over its quota (a
// Deployment of four 1500m pods: the quota controller counts them, the ReplicaSet controller
// reports FailedCreate); a preview is created (a Deployment with kustos.io/owner and
// kustos.io/expires-at 20 to 60 s ahead, in Git first); a preview's deadline is moved later in
// Git and then in the cluster, at whatever moment it falls (before its warning, after it, while
// its removal PR is open), always later than it was; a preview is opted out of expiry
// (kustos.io/expiration-ignore: "true", in Git and then in the cluster), at any such moment; or, half of the time once a warning about
// its current deadline has arrived, by its owner through one of the warning's links (read from
// Mailpit: GET, then POST of the page's form, as a browser; a link whose new deadline would fall
// in the settle period is not used), and the same POST once more, which must answer 409; a
// human closes a random open PR, or pushes a commit of their own onto its branch. The human
// closes a PR they pushed to 45 s later, so that it does not hold a place under --max-open-prs
// for the rest of the run. Every second tick, besides (or slower, to spread them over the
// workload period), a tenant gets a Cleaner (at most 12 in a run, as each may cost a PR within
// GitHub's hourly limit; no conditions, a TTL of 10 to 30 s, every target delete: true) over
// objects made for it: one time in four a Secret only in the cluster, a kind --allow does not
// name, else a ConfigMap whose manifest is in Git (two times in three; the GitOps tool prunes it
// once a merged PR removed the manifest) and a ConfigMap only in the cluster (two in three). No
// deadline or Cleaner falls due in the settle period. Three times in four after an API server
// restart (an RNG of its own, so the draws above stay the RNG seed's), 1 to 5 s after the server
// serves again, a preview whose removal is under way (an open PR proposes it, or, with none,
// its deadline has passed) is opted out as above (preview-opted-out-after-restart in the
// report): the moment the replicas relist their watches and a new leader may take over.
//
// Beside it, with an RNG of its own, one lab action every two -ticks: lab environments (two lab
// namespaces, lab-a and lab-b, two labs each at the start, at most six) are Deployments of one
// replica with kustos.io/owner and kustos.io/inactivity-timeout 15s, in Git first. A lab drawn is
// used (its gauge at 1) when it was idle, half of the time; idle when it was used; resumed by its
// owner when it was paused (replicas: 1 pushed to Git, which the GitOps tool applies; used from
// then on); kept by its owner, now and then, through the keep link of an alert that arrived
// since its last use (GET, then POST, as a browser; --inactivity-keep-periods=45s); now and then
// a new lab is made. The tenants' workload never touches the lab
// namespaces. A lab's state at the start of the settle period stays: a used lab must keep
// running, an idle one must be paused.
//
// # The faults
//
// One every 5 to 15 s, drawn by the seeded RNG: for 3 to 15 s, every request to one endpoint
// Kustos uses (or to all of them) answers 500, 502 or 503, or 403 or 429 with GitHub's
// secondary-limit body and a Retry-After of 1 to 5 s, or is slowed by 0.5 to 3 s; or one or two
// requests to it in those seconds are held past Kustos's 30 s request timeout and then carried
// out all the same (a write whose answer is lost); or (at most every 20 s) a replica gets
// SIGKILL and is restarted 1 to 8 s later (in a run of 10 minutes or more, any replica in the
// first half of the faults' time, and from then on any but replica 1, the witness, whose life
// then spans the second half and the settle period, as the heap rule needs); or the mail
// server is down for 3 to 15 s (the proxy cuts every SMTP connection, open or new; Mailpit
// keeps what it holds); or Prometheus is unreachable for 3 to 15 s (its proxy cuts every
// connection, or answers 503); or Prometheus answers in part for 15 to 30 s, as Thanos's
// querier does with a store down: the proxy drops the series of every lab, or of a random half
// of them, from each query's answer and adds a warning (long enough that a lab in use whose
// series are left out would look idle past its timeout and its alert);
// or (at most every 60 s, and at least once a run, once two thirds of the faults' time have
// gone without one; with a witness, only in the first half and at least once by a third of it,
// since the leader exits on it and the witness's life must last) the API server restarts
// (internal/testenv's RestartAPIServer: the same address, certificates and etcd): down for 1
// to 10 s, plus its own stop and start (-api-restart-every forces one once that long has passed
// since the last, so that a short run has several). Every watch breaks and is relisted; the leader, unable
// to renew its lease for the renew deadline (10 s), exits ("leader election lost":
// controller-runtime's manager stops and `kustos run` exits 1), and a replica started while
// the server is down exits at once (it cannot read the API's discovery), as a pod would that
// its kubelet restarts. The soak restarts such a replica once the server serves again and
// counts its exit in the report, not as replica-exited, if it fell in the outage or in the
// 30 s after it. The workload does not act while the server is down (its record of what it
// wrote would be false where a write failed halfway); the GitOps tool and CI retry. The last
// -settle of the run (a third of -duration, from 90 s to 5 m) has no faults and no workload.
//
// # The invariants
//
// Checked every second from the server's pull requests and branches, the API server's watch of
// Deployments and the workload's own record (Checker, which does no I/O; TestChecker feeds it
// recorded histories, a broken one for each invariant). Each violation is logged at once with
// the RNG seed and the time, and fails the run:
//
//   - one-open-pr: never two open PRs for one branch key (Kustos derives the branch from the
//     target);
//   - no-merge-extended: no PR merged that removes a preview (its merge commit deletes the
//     preview's manifest, which the base held right before: read from the commits, so that a
//     group's PR is judged preview by preview) while the preview's deadline, as set more than 5 s
//     before the previous look, was still ahead (an extension made inside those seconds may
//     lose the race honestly); an extension through a link counts from the moment its POST was
//     sent; a merged PR that writes such an extension back into Git deletes no manifest; nor
//     merged after the preview was opted out (more than 5 s before the previous look);
//   - link-used-once: the second POST of a link that extended answers 409 (429 and 503 are
//     asked again);
//   - notice-once: each expiry warning (a preview's deadline, named in its subject) is delivered
//     at most twice (a crash between the send and its record sends it once more), every time
//     under the Message-ID its notice id gives; and no removal PR is merged less than
//     --notification-interval after the warning about the deadline in force at the merge (the
//     last one set more than 5 s before the previous look) reached Mailpit, nor with no such
//     warning at all: an extension gets a warning of its own (less 2 s:
//     Kustos counts the interval from its decision to send, before the batch window and the
//     SMTP exchange), judged once the mailbox (read every 2 s) was read after the merge;
//   - deleted-via-pr: no Deployment deleted except by the GitOps tool after a merged PR removed
//     its manifest, or with its tenant's namespace; of a Cleaner's targets (the API server's
//     watch of the ConfigMaps and Secrets the workload labelled), one Git defines only so too,
//     one only in the cluster not before its Cleaner fell due, a Secret never but with its
//     namespace;
//   - cleaner-once: no PR of a Cleaner's branch (one per Cleaner) opened after one of them was
//     merged: its cleanup is proposed once;
//   - foreign-commit-kept: a commit the human pushed onto a PR branch stays on that branch until
//     the branch is merged or deleted;
//   - no-pause-used: no pause PR of a lab merged while the lab was used within its timeout
//     before the merge (its creation and a resume count as uses). Two honest slacks: 3 s at
//     the old end (Kustos sees a use's last scrape, up to a scrape interval and a 1 s step
//     before it ended), and a use that began less than 10 s before the look preceding the
//     merge may lose the race (a scrape, a 2 s check, the query, and the withdrawal racing a
//     merge in flight); a use during a Prometheus fault counts like any other (Kustos merges
//     a pause only on a whole answer, and the first one after the fault shows the use); nor
//     merged while Prometheus could not answer in full, from 10 s before the look preceding
//     the merge to the look that saw it merged; nor while its owner's keep (from its POST,
//     less the same 10 s) lasts;
//   - paused-via-pr: a lab's spec.replicas (the API server's watch) goes to 0 only when the
//     GitOps tool applies a merged pause from Git;
//   - liveness: once the faults stop, nothing stays due (a preview past its deadline with no
//     removal PR since its last extension — grouped: no open PR of its tenant's group whose
//     head lacks its manifest — or with no warning delivered about that deadline whatever the
//     mail server went through, unless the human closed or pushed onto its removal PR since; a
//     tenant over quota with no quota PR; a Cleaner due with a target Git defines still there
//     and no PR of its branch opened since the Cleaner was, or with a ConfigMap only in the
//     cluster not yet deleted, or whose status (listed every 2 s) records no due evaluation,
//     or, its PR closed unmerged by the human, does not say ActionsDone=False CleanupBlocked,
//     or still there 15 s after every target went, none a Secret; a lab idle for its timeout
//     and one alert interval, not paused, with no pause PR since its last use unless the human
//     closed or pushed onto its PR since (past its keep's end, when kept); a lab used or kept
//     with its pause PR, which the human left alone, still open) and no PR only Kustos
//     touched stays open; the time until nothing is due is the convergence figure, and if the
//     settle period ends first the run fails with what was left; at the end, whatever is still
//     due by over 60 s is a violation of its own;
//   - heap-flat: for each replica life with readings (go_gc_heap_live_bytes on its /metrics,
//     every 15 s) over at least 8 minutes from the half-way point of the faults in a run with a
//     witness (by then the tenants, previews and the Leases Kustos keeps, swept every minute
//     here, have levelled off), the median of the last sixth is at most 25% above the median
//     of the readings from a sixth to a third of it (in a 20-minute run, the witness's last
//     life is judged);
//   - github-contract and replica-exited: the server's own contract checks, and a replica that
//     exits without being killed (outside an API server outage, above).
//
// KUSTOS_SOAK_BREAK=overwrite (read by this bench only) makes the fake human force-push over
// its own commit on a Kustos branch once: that run must fail with foreign-commit-kept, which
// shows the check working end to end. KUSTOS_SOAK_BREAK=silent-partial makes Prometheus lie
// instead: 20 s into the run every lab is used, and for a minute the proxy leaves their series
// out of every answer without a warning, which Kustos cannot tell from idleness; that run must
// fail with no-pause-used.
//
// # The report
//
// A Markdown table on standard output (and -out): faults by kind, workload actions by kind,
// PRs opened, merged and closed, the owners' mail Mailpit received, GitHub REST requests (and those a fault answered), the
// server's secondary-limit answers, the convergence time, each replica life's heap after GC, and
// the replicas' exits in API server outages (by reason), and
// the violations with the command that replays the run. Kustos's output (one log per replica
// life) is kept when the run fails or with -keep-logs.
package main
