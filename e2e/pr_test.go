package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/actuate/group"
	"github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/app"
	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
)

const (
	ghOwner = "acme"
	ghRepo  = "gitops"
)

// quotaManifest is the commented quota of a team in the GitOps repository, without a
// namespace: the kustomization beside it sets one.
func quotaManifest(cpu string) string {
	return `# Team quota. Owned by the platform team; Kustos may raise it through pull requests.
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute   # referenced by the team's runbook
spec:
  hard:
    # CPU: agreed with the team.
    requests.cpu: "` + cpu + `"   # keep quoted
    pods: "50"
`
}

// gitops is a GitHub-compatible server holding acme/gitops with the quota of namespace ns
// under clusters/e2e/<ns>/, and a token file for it.
type gitops struct {
	s         *githubtest.Server
	ns        string
	path      string
	tokenFile string
}

func newGitOps(t *testing.T, ns string) *gitops {
	t.Helper()
	s := githubtest.New(t, githubtest.Options{})
	dir := "clusters/e2e/" + ns + "/"
	s.SeedRepo(ghOwner, ghRepo, "main", map[string]string{
		"README.md":                       "# GitOps\n",
		"clusters/e2e/kustomization.yaml": "resources:\n  - " + ns + "\n",
		dir + "kustomization.yaml":        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n  - quota.yaml\n",
		dir + "quota.yaml":                quotaManifest("3"),
	})
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(s.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &gitops{s: s, ns: ns, path: dir + "quota.yaml", tokenFile: tok}
}

// addManifest commits file, holding content, beside quota.yaml in the namespace's directory of
// the base branch, listed in its kustomization, and returns that directory.
func (g *gitops) addManifest(msg, file, content string) string {
	dir := "clusters/e2e/" + g.ns + "/"
	g.s.PushBaseCommit(ghOwner, ghRepo, "main", msg, map[string]string{
		dir + "kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + g.ns + "\nresources:\n  - quota.yaml\n  - " + file + "\n",
		dir + file:                 content,
	})
	return dir
}

// prMode returns a mutate function for startKustos that runs Kustos in PR mode against g.
func (g *gitops) prMode(extra func(*app.Options)) func(*app.Options) {
	return func(o *app.Options) {
		o.Mode = app.ModePR
		o.PR = group.Options{
			GitHub:       github.Config{APIURL: g.s.URL(), TokenFile: g.tokenFile, Repository: ghOwner + "/" + ghRepo},
			Cluster:      "e2e",
			Paths:        []string{"clusters/e2e/"},
			Labels:       []string{"kustos", "quota-resize"},
			PollInterval: 300 * time.Millisecond,
			ClientOptions: []github.Option{
				github.WithMutationInterval(0), github.WithBackoff(20*time.Millisecond, 200*time.Millisecond),
				github.WithMaxRateLimitWait(3 * time.Second),
			},
		}
		if extra != nil {
			extra(o)
		}
	}
}

func (g *gitops) prs() []githubtest.PullRequest { return g.s.PRs(ghOwner, ghRepo) }

// waitPR waits until the repository has exactly one PR and cond holds for it.
func (g *gitops) waitPR(t *testing.T, what string, cond func(githubtest.PullRequest) bool) githubtest.PullRequest {
	t.Helper()
	var got githubtest.PullRequest
	eventually(t, what, func() bool {
		prs := g.prs()
		if len(prs) > 1 {
			t.Fatalf("want exactly one pull request, got %d: %+v", len(prs), prs)
		}
		if len(prs) == 0 {
			return false
		}
		got = prs[0]
		return cond(got)
	})
	return got
}

// onePR asserts that the repository keeps exactly one PR during d.
func (g *gitops) onePR(t *testing.T, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if prs := g.prs(); len(prs) != 1 {
			t.Fatalf("want exactly one pull request, got %d: %+v", len(prs), prs)
		}
		time.Sleep(tick)
	}
}

func (g *gitops) fileAt(t *testing.T, ref string) string {
	t.Helper()
	s, ok := g.s.FileAt(ghOwner, ghRepo, ref, g.path)
	if !ok {
		t.Fatalf("%s missing at %s", g.path, ref)
	}
	return s
}

func stateLease(t *testing.T, stateNS, ns string) coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: stateNS, Name: "state-" + ns + "-compute"}, &l); err != nil {
		t.Fatalf("state lease: %v", err)
	}
	return l
}

func holder(l coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func waitHolder(t *testing.T, stateNS, ns, want string) coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	eventually(t, fmt.Sprintf("lease holder %q", want), func() bool {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: stateNS, Name: "state-" + ns + "-compute"}, &l)
		return err == nil && holder(l) == want && l.Annotations[state.AnnotationPending] == ""
	})
	return l
}

// overQuota creates the quota (requests.cpu 3) and a Deployment of replicas 2-cpu pods that
// does not fit: one pod runs, the rest fail with the real FailedCreate event.
func overQuota(t *testing.T, ns string, replicas int32) *appsv1.Deployment {
	t.Helper()
	newQuota(t, ns, "compute", rl("requests.cpu", "3", "pods", "50"))
	d := deploymentOf(ns, "web", replicas, "2")
	if err := k8s.Create(context.Background(), d); err != nil {
		t.Fatalf("creating deployment: %v", err)
	}
	return d
}

// TestPROpenUpdateMerge: a Deployment that does not fit opens one PR with the expected edit;
// more replicas update the same PR; green checks let Kustos merge it; the Lease is unlocked
// and no new PR follows while the cluster still shows the old quota.
func TestPROpenUpdateMerge(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	g.s.SetRequiredChecks(ghOwner, ghRepo, "ci")
	// Cooldown 0: after the merge only "the base already holds it" keeps Kustos from
	// proposing the same change again.
	k := startKustos(t, g.prMode(func(o *app.Options) { o.DefaultCooldown = 0; o.PR.AutoMerge = true }))
	d := overQuota(t, ns, 5)

	// 1 pod runs (2 of 3), 4 are missing: 2 + 4×2 = 10.
	p := g.waitPR(t, "a PR raising requests.cpu to 10", func(p githubtest.PullRequest) bool { return p.State == "open" })
	if got, want := g.fileAt(t, p.HeadSHA), quotaManifest("10"); got != want {
		t.Fatalf("file on the PR branch\n got:\n%s\nwant:\n%s", got, want)
	}
	if got := g.fileAt(t, "main"); got != quotaManifest("3") {
		t.Fatalf("base changed before the merge:\n%s", got)
	}
	if !strings.Contains(p.Title, "requests.cpu") || !strings.Contains(p.Head, "kustos/e2e/quota/"+ns+"/compute") {
		t.Errorf("PR title %q head %q", p.Title, p.Head)
	}
	waitHolder(t, k.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))
	evs := waitEvents(t, ns, quota.ReasonQuotaResizeProposed, 1)
	if !strings.Contains(evs[0].Message, fmt.Sprintf("#%d", p.Number)) || !strings.Contains(evs[0].Message, "http") {
		t.Errorf("proposed event message %q lacks the PR number and URL", evs[0].Message)
	}

	// Usage grows: 7 replicas → 2 + 6×2 = 14, in the same PR.
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptrInt32(7)
	if err := k8s.Update(context.Background(), d); err != nil {
		t.Fatalf("scaling: %v", err)
	}
	p = g.waitPR(t, "the same PR raising requests.cpu to 14", func(p githubtest.PullRequest) bool {
		s, _ := g.s.FileAt(ghOwner, ghRepo, p.HeadSHA, g.path)
		return s == quotaManifest("14")
	})
	if p.State != "open" {
		t.Fatalf("PR is %s before checks passed", p.State)
	}

	// The required check turns green: Kustos merges.
	g.s.SetCheck(ghOwner, ghRepo, p.HeadSHA, "ci", "success")
	p = g.waitPR(t, "the PR merged", func(p githubtest.PullRequest) bool { return p.Merged })
	if got := g.fileAt(t, "main"); got != quotaManifest("14") {
		t.Fatalf("base after the merge\n got:\n%s\nwant:\n%s", got, quotaManifest("14"))
	}
	l := waitHolder(t, k.opts.StateNamespace, ns, "")
	if lm, err := time.Parse(time.RFC3339Nano, l.Annotations[state.AnnotationLastModified]); err != nil || time.Since(lm) > time.Minute {
		t.Errorf("last-modified %q after the merge: %v", l.Annotations[state.AnnotationLastModified], err)
	}
	waitEvents(t, ns, quota.ReasonQuotaResizeMerged, 1)
	// The cluster still has requests.cpu 3 and the Deployment still fails, but the base holds
	// 14: nothing new.
	g.onePR(t, 4*time.Second)
}

// TestPRAutoMergeOptOutAndHumanClose: resizer.io/auto-merge "false" keeps a clean PR open; a
// human closing it is respected within the cooldown.
func TestPRAutoMergeOptOutAndHumanClose(t *testing.T) {
	ns := newNamespace(t, t.Name(), map[string]string{quota.AnnotationAutoMerge: "false"})
	g := newGitOps(t, ns)
	k := startKustos(t, g.prMode(func(o *app.Options) { o.PR.AutoMerge = true }))
	overQuota(t, ns, 5)

	p := g.waitPR(t, "a PR", func(p githubtest.PullRequest) bool { return p.State == "open" })
	waitHolder(t, k.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))
	g.onePR(t, 3*time.Second)
	if p, _ = g.s.PR(ghOwner, ghRepo, p.Number); p.State != "open" || p.Merged {
		t.Fatalf("opted-out PR is %s (merged %v)", p.State, p.Merged)
	}

	g.s.ClosePR(ghOwner, ghRepo, p.Number)
	g.declined(t, k.opts.StateNamespace, ns, p.Number)
}

// declined asserts what a human close of PR number leaves: a Declined Event, an unlocked Lease
// that remembers the declined values, and no other PR while the closed one stays closed.
func (g *gitops) declined(t *testing.T, stateNS, ns string, number int) {
	t.Helper()
	waitEvents(t, ns, quota.ReasonQuotaResizeDeclined, 1)
	l := waitHolder(t, stateNS, ns, "")
	if l.Annotations[state.AnnotationClosedValues] == "" {
		t.Errorf("the declined values are not remembered: %v", l.Annotations)
	}
	g.onePR(t, 4*time.Second)
	if p, _ := g.s.PR(ghOwner, ghRepo, number); p.State != "closed" {
		t.Fatalf("the closed PR is %s", p.State)
	}
}

// TestPRCrashBeforeLeaseWrite: Kustos stops after the PR was created but before the Lease
// names it; the next Kustos adopts that PR.
func TestPRCrashBeforeLeaseWrite(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	stateNS := newNamespace(t, "kustos-state", nil)
	crashAfterPropose(t, g, ns, stateNS)
	l := stateLease(t, stateNS, ns)
	if holder(l) != "" || l.Annotations[state.AnnotationPending] == "" {
		t.Fatalf("after the crash want a pending decision and no holder, got holder %q pending %q", holder(l), l.Annotations[state.AnnotationPending])
	}
	if n := len(g.prs()); n != 1 {
		t.Fatalf("after the crash want 1 PR, got %d", n)
	}

	k2 := startKustos(t, g.prMode(func(o *app.Options) { o.StateNamespace = stateNS }))
	p := g.waitPR(t, "the PR", func(githubtest.PullRequest) bool { return true })
	waitHolder(t, k2.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))
	g.onePR(t, 3*time.Second)
	if got := g.fileAt(t, p.HeadSHA); got != quotaManifest("10") {
		t.Fatalf("file on the PR branch\n got:\n%s", got)
	}

	// Stopped after the Lease was written: the next Kustos follows the same PR.
	k2.stop()
	k3 := startKustos(t, g.prMode(func(o *app.Options) { o.StateNamespace = stateNS }))
	g.onePR(t, 3*time.Second)
	waitHolder(t, k3.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))
}

// TestPRCrashAfterBranchBeforePR: Kustos stops after the branch and its commit exist but
// before any PR was opened (GitHub refuses to open it); the next Kustos opens exactly one.
func TestPRCrashAfterBranchBeforePR(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	stateNS := newNamespace(t, "kustos-state", nil)
	g.s.Inject(githubtest.FaultSpec{Method: "POST", PathPattern: "/repos/{owner}/{repo}/pulls", Status: 500, Times: -1})
	k1 := startKustos(t, g.prMode(func(o *app.Options) { o.StateNamespace = stateNS }))
	overQuota(t, ns, 5)
	branch := "kustos/e2e/quota/" + ns + "/compute"
	eventually(t, "the branch created", func() bool { return g.s.BranchSHA(ghOwner, ghRepo, branch) != "" })
	k1.stop()
	if n := len(g.prs()); n != 0 {
		t.Fatalf("want no PR yet, got %d", n)
	}
	g.s.ClearFaults()
	startKustos(t, g.prMode(func(o *app.Options) { o.StateNamespace = stateNS }))
	p := g.waitPR(t, "the PR", func(githubtest.PullRequest) bool { return true })
	waitHolder(t, stateNS, ns, fmt.Sprintf("pr-%d", p.Number))
	g.onePR(t, 3*time.Second)
	if got := g.fileAt(t, p.HeadSHA); got != quotaManifest("10") {
		t.Fatalf("file on the PR branch\n got:\n%s", got)
	}
}

// TestPRTwoInstancesOnePR: two Kustos without leader election on one quota open one PR.
func TestPRTwoInstancesOnePR(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	stateNS := newNamespace(t, "kustos-state", nil)
	mutate := g.prMode(func(o *app.Options) { o.StateNamespace = stateNS; o.LeaderElection = false })
	startKustos(t, mutate)
	startKustos(t, mutate)
	overQuota(t, ns, 5)
	p := g.waitPR(t, "a PR", func(githubtest.PullRequest) bool { return true })
	waitHolder(t, stateNS, ns, fmt.Sprintf("pr-%d", p.Number))
	g.onePR(t, 4*time.Second)
}

// TestPRGitHubFaults: 5xx and 429 with Retry-After at GitHub's endpoints delay the PR; one
// correct PR comes out of it.
func TestPRGitHubFaults(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, ns)
	for _, f := range []githubtest.FaultSpec{
		{Method: "GET", PathPattern: "/repos/{owner}/{repo}/git/ref/{ref}", Status: 503, Times: 6},
		{Method: "POST", PathPattern: "/repos/{owner}/{repo}/git/trees", Status: 500, Times: 3},
		{Method: "POST", PathPattern: "/repos/{owner}/{repo}/git/commits", Status: 429, RetryAfter: time.Second, Times: 2},
		// Mutations are not retried by the client: each fault fails one reconcile, which
		// controller-runtime retries with its backoff while the Lease keeps the decision.
		{Method: "POST", PathPattern: "/repos/{owner}/{repo}/git/refs", Status: 502, Times: 2},
		{Method: "POST", PathPattern: "/repos/{owner}/{repo}/pulls", Status: 500, Times: 3},
		{Method: "POST", PathPattern: "/repos/{owner}/{repo}/issues/{issue_number}/labels", Status: 503, Times: 1},
		{Method: "GET", PathPattern: "/repos/{owner}/{repo}/pulls", Status: 429, RetryAfter: time.Second, Times: 2},
	} {
		g.s.Inject(f)
	}
	k := startKustos(t, g.prMode(nil))
	overQuota(t, ns, 5)
	p := g.waitPR(t, "a PR despite the faults", func(githubtest.PullRequest) bool { return true })
	waitHolder(t, k.opts.StateNamespace, ns, fmt.Sprintf("pr-%d", p.Number))
	if got := g.fileAt(t, p.HeadSHA); got != quotaManifest("10") {
		t.Fatalf("file on the PR branch\n got:\n%s", got)
	}
	g.onePR(t, 3*time.Second)
	faulted := 0
	for _, r := range g.s.Requests() {
		if r.Faulted {
			faulted++
		}
	}
	if faulted == 0 {
		t.Fatal("no fault was injected")
	}
}

func ptrInt32(v int32) *int32 { return &v }

// TestPRSourceNotFound: a quota no file in the repository defines gets a SourceNotFound Event
// and the recommendation in observer form; no PR.
func TestPRSourceNotFound(t *testing.T) {
	ns := newNamespace(t, t.Name(), nil)
	g := newGitOps(t, "another-team")
	k := startKustos(t, g.prMode(nil))
	overQuota(t, ns, 5)
	evs := waitEvents(t, ns, pipeline.ReasonSourceNotFound, 1)
	if evs[0].Type != "Warning" || evs[0].InvolvedObject.Name != "compute" {
		t.Errorf("SourceNotFound event: %s on %s", evs[0].Type, evs[0].InvolvedObject.Name)
	}
	waitEvents(t, ns, reasonRecommended, 1)
	eventually(t, "pending decision cleared", func() bool {
		l := stateLease(t, k.opts.StateNamespace, ns)
		return l.Annotations[state.AnnotationPending] == "" && holder(l) == ""
	})
	never(t, ns, pipeline.ReasonSourceNotFound, 1, 2*time.Second)
	if n := len(g.prs()); n != 0 {
		t.Fatalf("want no PR, got %d", n)
	}
}

// crashAfterPropose runs a Kustos that stops (as if it crashed) right after its first Propose,
// before its Lease names the PR, on a Deployment in ns that does not fit its quota.
func crashAfterPropose(t *testing.T, g *gitops, ns, stateNS string) {
	t.Helper()
	crashed := make(chan struct{})
	var once sync.Once
	k := startKustos(t, g.prMode(func(o *app.Options) {
		o.StateNamespace = stateNS
		o.PR.AfterPropose = func(lifecycle.Key, pr.Result) error {
			once.Do(func() { close(crashed) })
			return errors.New("simulated crash after Propose")
		}
	}))
	overQuota(t, ns, 5)
	select {
	case <-crashed:
	case <-time.After(wait):
		t.Fatal("Kustos never proposed")
	}
	k.stop()
}
