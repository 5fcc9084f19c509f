package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kustos-dev/kustos/bench/internal/harness"
	"github.com/kustos-dev/kustos/bench/internal/kmetrics"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/notify/mailpittest"
	"github.com/kustos-dev/kustos/internal/testenv"
)

// Kustos's expiry timing in the run: short, so that previews of a minute go through warning,
// removal PR and merge.
const (
	warnBefore     = 10 * time.Second
	notifyInterval = 5 * time.Second
	// dueSlack is how long after a deadline (or a push over quota) the action may take before
	// the liveness check counts it as missing: the warning interval, a PR poll, CI and a
	// leader election after a kill fit in it.
	dueSlack = 60 * time.Second
	// stallAge is how long an untouched PR may stay open at the end of the run.
	stallAge = 90 * time.Second
	// convergeSlack: the run has converged once nothing is due at all: every deadline passed
	// and every push over quota has its PR, and every PR only Kustos touched is merged or
	// withdrawn. (With a slack, a run whose last removals were still waiting for their PR
	// at the last fault counted as converged at once.)
	convergeSlack = 0
	// mailBatchWindow is --notify-mail-batch-window: Kustos's batching stays on, short, since
	// each message goes to one preview's owner anyway. With the SMTP exchange it is what a
	// warning's delivery may lag behind the moment Kustos counts its notification interval
	// from (mailSendSlack).
	mailBatchWindow = time.Second
	mailSendSlack   = 2 * time.Second
	// groupWindow is --group-window: a tenant's previews falling due within it are removed by
	// one PR, and the first of them waits that long for its PR.
	groupWindow = 5 * time.Second
	// witnessRun is the shortest run with a witness (faults.witness): a shorter one has no
	// replica life the heap rule could judge, and keeps all of its faults' time for the kills
	// and restarts of any replica.
	witnessRun = 10 * time.Minute
)

// outcome is what the run measured, for the report.
type outcome struct {
	seed                   uint64
	duration, settle       time.Duration
	faults, actions        map[string]int
	prs                    map[string]int // opened, merged, closed-unmerged, open-at-end
	violations             []Violation
	converged              time.Duration // after the faults stopped; -1: never
	lastFault              time.Time
	mergeLatency           []time.Duration
	chaosEnd               time.Time
	ghRequests, ghFaulted  int
	secondary              map[string]int
	heaps                  []heapSummary
	dueAtEnd, stalledAtEnd []string
	mails                  int            // messages Mailpit received
	outageExits            map[string]int // replica exits in an API server outage, by reason
}

type heapSummary struct {
	replica, life, readings int
	first, last, max        float64 // MiB
	judged                  bool
}

func run(s *harness.Session, o options) harness.Result {
	ctx := s.Ctx
	logf := s.Logf
	logf("soak: seed %d, duration %s (settle %s), %d replicas; replay with -seed %d", o.seed, o.duration, o.settle, o.replicas, o.seed)
	if o.broken != "" {
		logf("soak: %s=%s: a deliberately broken run, which must fail", breakEnv, o.broken)
	}
	start := time.Now()
	crds, err := cleanerCRDs()
	if err != nil {
		return harness.Result{Err: err}
	}
	env, err := testenv.Start(ctx, testenv.Options{BinDir: o.BinDir, ControllerManager: true, CRDDirectoryPaths: []string{crds}})
	if err != nil {
		return harness.Result{Err: fmt.Errorf("starting the control plane: %w", err)}
	}
	defer func() {
		if err := env.Stop(); err != nil {
			logf("stopping the control plane: %v", err)
		}
	}()
	logf("control plane (etcd, kube-apiserver, kube-controller-manager) up in %s", time.Since(start).Round(time.Millisecond))
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return harness.Result{Err: err}
	}

	tb := &soakTB{dir: filepath.Join(s.LogDir, "github")}
	defer tb.finish()
	var gh *githubtest.Server
	if err := catch(func() {
		// The zero Options: GitHub's secondary limits, enforced.
		gh = githubtest.New(tb, githubtest.Options{})
		gh.SeedRepo(ghOwner, ghRepo, baseBranch, map[string]string{"README.md": "# GitOps\n"})
		gh.SetRequiredChecks(ghOwner, ghRepo, requiredCheck)
	}); err != nil {
		return harness.Result{Err: err}
	}
	tokenFile := filepath.Join(s.LogDir, "token")
	if err := os.WriteFile(tokenFile, []byte(gh.Token()+"\n"), 0o600); err != nil {
		return harness.Result{Err: err}
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stateNamespace}}, metav1.CreateOptions{}); err != nil {
		return harness.Result{Err: err}
	}

	check := NewChecker(o.seed, 5*time.Second, isAncestorFunc(gh), logf)
	check.WatchMail(notifyInterval, mailSendSlack)
	check.ReadRemovals(o.groupBy, fileAtFunc(gh), func(sha string) (string, bool) {
		ps := gh.CommitParents(ghOwner, ghRepo, sha)
		if len(ps) == 0 {
			return "", false
		}
		return ps[0], true
	})

	// The owners' mail server, behind a proxy the faults can take down.
	if o.BinDir != "" && os.Getenv(testenv.EnvTestBin) == "" {
		if err := os.Setenv(testenv.EnvTestBin, o.BinDir); err != nil {
			return harness.Result{Err: err}
		}
	}
	var mp *mailpittest.Server
	if err := catch(func() { mp = mailpittest.Start(tb) }); err != nil {
		return harness.Result{Err: err}
	}
	smtp, err := newSMTPProxy(fmt.Sprintf("127.0.0.1:%d", mp.Port))
	if err != nil {
		return harness.Result{Err: err}
	}
	defer smtp.close()
	mb := &mailbox{api: mp.API, hc: &http.Client{}}
	keyFile := filepath.Join(s.LogDir, "extension-key")
	if err := os.WriteFile(keyFile, []byte("soak-extension-key-0123456789abcdef0123\n"), 0o600); err != nil {
		return harness.Result{Err: err}
	}

	// Every Deployment deletion, as the API server reports it: invariant 3.
	inf := informers.NewSharedInformerFactory(cs, 0)
	dinf := inf.Apps().V1().Deployments().Informer()
	if _, err := dinf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if d, ok := obj.(*appsv1.Deployment); ok {
			check.Deleted(d.Namespace, d.Name, time.Now())
		}
	}}); err != nil {
		return harness.Result{Err: err}
	}
	infCtx, stopInf := context.WithCancel(ctx)
	defer stopInf()
	inf.Start(infCtx.Done())
	inf.WaitForCacheSync(infCtx.Done())
	if err := watchCleanerTargets(infCtx, cs, check); err != nil {
		return harness.Result{Err: err}
	}
	authorKeyFile := filepath.Join(s.LogDir, "cleaner-author-key")
	if err := os.WriteFile(authorKeyFile, []byte(cleanerAuthorKey), 0o600); err != nil {
		return harness.Result{Err: err}
	}

	// The labs, their Prometheus and its proxy (lab.go, prom.go).
	lab, err := startLabs(ctx, tb, s.LogDir, cs, gh, check, o.seed, logf)
	if err != nil {
		return harness.Result{Err: fmt.Errorf("starting the labs: %w", err)}
	}
	defer lab.close()
	lab.verbose = o.verbose
	if err := lab.watch(dinf); err != nil {
		return harness.Result{Err: err}
	}

	var reps []*replica
	var extAddrs []string
	for i := range o.replicas {
		addr, err := kmetrics.FreeAddr(ctx)
		if err != nil {
			return harness.Result{Err: err}
		}
		ext, err := kmetrics.FreeAddr(ctx)
		if err != nil {
			return harness.Result{Err: err}
		}
		extAddrs = append(extAddrs, ext)
		reps = append(reps, &replica{id: i + 1, bin: o.Kustos, logDir: s.LogDir, metrics: addr, ext: ext})
	}
	door, err := newFrontDoor(extAddrs)
	if err != nil {
		return harness.Result{Err: err}
	}
	defer door.close()
	args := append(kustosArgs(env.Kubeconfig, gh.URL(), tokenFile, o.logLevel, o.groupBy, notifyInterval, warnBefore, smtp.port(), door.url(), keyFile),
		cleanerArgs(authorKeyFile)...)
	args = append(args, lab.args...)
	for _, r := range reps {
		r.args = args
		if err := r.start(); err != nil {
			return harness.Result{Err: err}
		}
	}
	defer func() {
		for _, r := range reps {
			r.stop()
		}
	}()
	logf("%d Kustos replicas started (leader election on, PR mode, auto-merge) against %s", len(reps), gh.URL())

	runStart := time.Now()
	end := runStart.Add(o.duration)
	chaosEnd := end.Add(-o.settle)
	w := newWorld(cs, gh, check, o.seed, o.maxTenant, chaosEnd, logf)
	w.verbose = o.verbose
	w.mail, w.owner = mb, &browser{hc: &http.Client{}}
	cw, err := newCleaners(ctx, env.Config, cs, w, o.seed)
	if err != nil {
		return harness.Result{Err: err}
	}
	lab.mail, lab.owner = mb, &browser{hc: &http.Client{}}
	f := newFaults(gh, reps, smtp, o.seed, logf)
	f.prom = lab
	if o.duration >= witnessRun {
		f.witness, f.witnessFrom = reps[0], runStart.Add(chaosEnd.Sub(runStart)/2)
	}
	api := newAPIServer(env.RestartAPIServer)
	f.api, f.apiEvery = api, o.apiEvery
	restart := func(r *replica) {
		if err := r.start(); err != nil {
			check.Violate(time.Now(), invExitEarly, "replica %d could not be restarted: %v", r.id, err)
		}
	}
	chaosCtx, stopChaos := context.WithDeadline(ctx, chaosEnd)
	defer stopChaos()
	api.back = func(at time.Time) {
		w.afterAPIRestart(chaosCtx, api, at)
	}
	runCtx, stopRun := context.WithDeadline(ctx, end)
	defer stopRun()

	var wg sync.WaitGroup
	every := func(c context.Context, d time.Duration, fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sleep(c, d) {
				fn()
			}
		}()
	}
	// The system around Kustos: CI, the GitOps tool, the human who tidies up.
	every(runCtx, time.Second, func() { w.ci(runCtx) })
	every(runCtx, 2*time.Second, func() { w.sync(runCtx) })
	every(runCtx, 5*time.Second, w.tidy)
	// The workload and the faults, until the settle period.
	every(chaosCtx, o.tick, func() { api.act(func() { w.step(chaosCtx) }) })
	every(chaosCtx, cleanerEvery(o.tick, chaosEnd.Sub(runStart)), func() { api.act(func() { cw.step(chaosCtx) }) })
	every(runCtx, 2*time.Second, func() {
		cw.sync(runCtx)
		cw.observe(runCtx)
	})
	// Half the pace: each pause is a PR in the same queue.
	every(chaosCtx, 2*o.tick, func() { api.act(func() { lab.step(chaosCtx) }) })
	every(runCtx, 2*time.Second, func() { lab.sync(runCtx) })
	if o.broken == "overwrite" {
		broke := false
		every(chaosCtx, 2*time.Second, func() {
			if !broke && w.breakOverwrite(chaosCtx) == nil {
				broke = true
				logf("broken mode: the human force-pushed over its own commit on a Kustos branch")
			}
		})
	}
	if o.broken == breakSilentPartial {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lab.breakSilent(chaosCtx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.run(chaosCtx, restart)
	}()
	// The observers: the invariants, memory, replicas that die on their own.
	every(runCtx, 15*time.Second, func() {
		for _, r := range reps {
			r.readHeap(runCtx)
		}
	})
	converged := time.Duration(-1)
	var mailCount atomic.Int64
	observe := func() {
		now := time.Now()
		prs := gh.PRs(ghOwner, ghRepo)
		heads := map[string]string{}
		for _, h := range check.humanBranches() {
			heads[h] = gh.BranchSHA(ghOwner, ghRepo, h)
			for _, k := range check.KeptBranches(h) {
				heads[k] = gh.BranchSHA(ghOwner, ghRepo, k)
			}
		}
		check.ObservePRs(now, prs, heads)
		for _, e := range tb.takeErrs() {
			check.Violate(now, invContract, "%s", e)
		}
		for _, r := range reps {
			if err := r.exitedOnItsOwn(); err != nil {
				wait, excused, reason := api.exitVerdict(now, r.logPath())
				switch {
				case wait:
					continue
				case excused:
					logf("replica %d exited in an API server outage (%s): %v; restarted", r.id, reason, err)
				default:
					check.Violate(now, invExitEarly, "replica %d: %v", r.id, err)
				}
				restart(r)
			}
		}
		// Converged: nothing overdue and no PR left open that only Kustos touched.
		if now.After(chaosEnd) && now.After(f.lastEnded()) && converged < 0 {
			if len(check.Due(now, convergeSlack, w.overQuota())) == 0 && len(check.Stalled(now, 0)) == 0 {
				converged = now.Sub(maxTime(chaosEnd, f.lastEnded()))
				logf("converged %s after the last fault", converged.Round(time.Second))
			}
		}
	}
	every(runCtx, time.Second, observe)
	// Invariant 4: the owners' mailbox.
	readMail := func() {
		now := time.Now()
		ms, err := mb.list(runCtx)
		if err != nil {
			if runCtx.Err() == nil {
				logf("reading the mailbox: %v", err)
			}
			return
		}
		check.ObserveMail(now, ms)
		mailCount.Store(int64(len(ms)))
	}
	every(runCtx, 2*time.Second, readMail)
	every(runCtx, time.Minute, func() {
		a := w.actionCounts()
		logf("progress: %d PRs, %d violations, faults %v, actions %v", len(gh.PRs(ghOwner, ghRepo)), len(check.Violations()), f.countsCopy(), a)
	})
	<-runCtx.Done()
	wg.Wait()
	interrupted := ctx.Err() != nil
	now := time.Now()
	observe()
	if !interrupted {
		readMail()
	}
	logf("cleaners: %v", check.CleanerCounts())

	out := outcome{seed: o.seed, duration: now.Sub(runStart), settle: o.settle, faults: f.countsCopy(), actions: mergeCounts(w.actionCounts(), lab.actionCounts()),
		converged: converged, lastFault: f.lastEnded(), chaosEnd: chaosEnd, secondary: gh.SecondaryLimitedBy(), mails: int(mailCount.Load()), outageExits: api.exitCounts()}
	if !interrupted {
		out.dueAtEnd = check.Due(now, dueSlack, w.overQuota())
		out.stalledAtEnd = check.Stalled(now, stallAge)
		for _, d := range out.dueAtEnd {
			check.Violate(now, invLiveness, "%s", d)
		}
		for _, d := range out.stalledAtEnd {
			check.Violate(now, invLiveness, "PR %s still open at the end, untouched by the human", d)
		}
		if converged < 0 {
			stalled := check.Stalled(now, 0)
			check.Violate(now, invLiveness, "not converged within the %s after the faults stopped: due %s; open %s", o.settle,
				joinLines(check.Due(now, convergeSlack, w.overQuota())), joinLines(stalled))
			for _, l := range logsAbout(s.LogDir, stalled) {
				logf("%s", l)
			}
		}
	}
	out.prs = map[string]int{}
	for _, p := range gh.PRs(ghOwner, ghRepo) {
		out.prs["opened"]++
		switch {
		case p.Merged:
			out.prs["merged"]++
		case p.State == "closed":
			out.prs["closed unmerged"]++
		default:
			out.prs["open at the end"]++
		}
	}
	for _, r := range gh.Requests() {
		if r.Git {
			continue
		}
		out.ghRequests++
		if r.Faulted {
			out.ghFaulted++
		}
	}
	writeRequests(filepath.Join(s.LogDir, "github-requests.log"), gh.Requests(), logf)
	out.heaps = heapRule(reps, check, f.witnessFrom)
	out.mergeLatency = check.MergeLatencies()
	out.violations = check.Violations()
	res := harness.Result{Report: render(out)}
	if interrupted {
		res.Err = ctx.Err()
	}
	for _, v := range out.violations {
		res.Failures = append(res.Failures, fmt.Sprintf("%s at %s (seed %d): %s", v.Invariant, v.At.Format("15:04:05.000"), o.seed, v.Detail))
	}
	res.Failed = len(out.violations) > 0
	return res
}

// writeRequests keeps the server's request log beside Kustos's output, to tell afterwards which
// pull request Kustos stopped looking at and when.
func writeRequests(path string, rs []githubtest.Request, logf func(string, ...any)) {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s %s %d faulted=%v limited=%q\n", r.Method, r.URL, r.Status, r.Faulted, r.Limited)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		logf("writing %s: %v", path, err)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// heapRule: invariant 7. For each process life with readings over at least 8 minutes from
// steadyFrom on (the half-way point of the faults with a witness: the tenants, previews and
// Leases have levelled off by then; zero: all), the median of the readings in its last sixth
// may be at most 25% above the median of those from a sixth to a third of it (the churn rule of
// bench/wholecluster, with the margin a heap of tens of MiB needs).
func heapRule(reps []*replica, check *Checker, steadyFrom time.Time) []heapSummary {
	var out []heapSummary
	for _, r := range reps {
		r.mu.Lock()
		lives := map[int][]heapReading{}
		for _, h := range r.heaps {
			lives[h.life] = append(lives[h.life], h)
		}
		r.mu.Unlock()
		var order []int
		for life := range lives {
			order = append(order, life)
		}
		sort.Ints(order)
		for _, life := range order {
			hs := lives[life]
			s := heapSummary{replica: r.id, life: life, readings: len(hs), first: hs[0].live / (1 << 20), last: hs[len(hs)-1].live / (1 << 20)}
			for _, h := range hs {
				s.max = max(s.max, h.live/(1<<20))
			}
			var steady []heapReading
			for _, h := range hs {
				if !h.at.Before(steadyFrom) {
					steady = append(steady, h)
				}
			}
			if n := len(steady); n >= 12 && steady[n-1].at.Sub(steady[0].at) >= 8*time.Minute {
				s.judged = true
				ref, tail := median(steady[n/6:n/3]), median(steady[n-n/6:])
				if tail > 1.25*ref {
					check.Violate(time.Now(), invHeap, "replica %d life %d: heap after GC %.1f MiB at the end, %.1f MiB early on (+%.0f%%)",
						r.id, life, tail/(1<<20), ref/(1<<20), 100*(tail/ref-1))
				}
			}
			out = append(out, s)
		}
	}
	return out
}

func median(hs []heapReading) float64 {
	if len(hs) == 0 {
		return 0
	}
	v := make([]float64, len(hs))
	for i, h := range hs {
		v[i] = h.live
	}
	sort.Float64s(v)
	return v[len(v)/2]
}
