package pr

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/github"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

const (
	owner     = "acme"
	repoName  = "gitops"
	quotaPath = "clusters/prod/team-a/quota.yaml"
	branch    = "kustos/prod/quota/team-a/compute"
)

var labels = []string{"kustos", "quota-resize"}

// lossy drops the response of the next request that matches method and path suffix, after the
// server has carried it out: Kustos crashing right after a step succeeded.
type lossy struct {
	mu     sync.Mutex
	method string
	suffix string
	// before, when set, runs once before the next request whose method and path suffix are
	// beforeMethod and beforeSuffix goes out: someone else acting at that moment.
	before                     func()
	beforeMethod, beforeSuffix string
}

func (l *lossy) armBefore(method, suffix string, f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beforeMethod, l.beforeSuffix, l.before = method, suffix, f
}

func (l *lossy) arm(method, suffix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.method, l.suffix = method, suffix
}

func (l *lossy) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	before := l.before
	if before != nil && r.Method == l.beforeMethod && strings.HasSuffix(r.URL.Path, l.beforeSuffix) {
		l.before = nil
	} else {
		before = nil
	}
	l.mu.Unlock()
	if before != nil {
		before()
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && l.method != "" && r.Method == l.method && strings.HasSuffix(r.URL.Path, l.suffix) {
		l.method = ""
		resp.Body.Close()
		return nil, errors.New("simulated crash: response lost")
	}
	return resp, err
}

type env struct {
	t     testing.TB
	s     *githubtest.Server
	gh    *github.Client
	lossy *lossy
	repo  *GitRepo
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newEnv seeds acme/gitops from testdata/repo and returns a client without retries (every
// injected fault reaches the Writer) and without a pause between mutations.
func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvFrom(t, "testdata/repo")
}

// newEnvFrom is newEnv with acme/gitops seeded from dir.
func newEnvFrom(t testing.TB, dir string) *env {
	t.Helper()
	s := githubtest.New(t, githubtest.Options{})
	s.SeedRepoFromDir(owner, repoName, "main", dir)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(s.Token()), 0o600); err != nil {
		t.Fatal(err)
	}
	l := &lossy{}
	c, err := github.NewClient(github.Config{APIURL: s.URL(), TokenFile: tok, Repository: owner + "/" + repoName},
		github.WithBaseTransport(l), github.WithMaxRetries(0), github.WithMutationInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	r := &GitRepo{URL: s.GitURL(owner, repoName), Branch: "main",
		Token: func(context.Context) (string, error) { return s.Token(), nil }}
	return &env{t: t, s: s, gh: c, lossy: l, repo: r}
}

func (e *env) writer(cfg Config) *Writer {
	if cfg.Cluster == "" {
		cfg.Cluster = "prod"
	}
	if cfg.Paths == nil {
		cfg.Paths = []string{"clusters/prod/"}
	}
	if cfg.Labels == nil {
		cfg.Labels = labels
	}
	return NewWriter(e.gh, e.repo, cfg)
}

func quotaChange(from, to string) lifecycle.Change {
	return lifecycle.Change{
		Key:      lifecycle.NewKey("quota", "team-a", "compute"),
		Detector: "quota",
		Target:   lifecycle.Target{Version: "v1", Kind: "ResourceQuota", Namespace: "team-a", Name: "compute"},
		Edit: lifecycle.Edit{Op: lifecycle.EditSetFields, Fields: []lifecycle.FieldChange{
			{Path: []string{"spec", "hard", "requests.cpu"}, From: from, To: to},
		}},
		Reason:  "QuotaResizeRecommended",
		Summary: "requests.cpu of team-a/compute is 90% used (threshold 80%): raise 10 → " + to,
		Evidence: []map[string]string{{
			"namespace": "team-a", "quota": "compute", "resource": "requests.cpu", "current": "10", "used": "9",
			"usedPercent": "90", "thresholdPercent": "80", "recommended": to, "trigger": "deficit", "detector": "quota",
			"ownerKind": "Deployment", "ownerName": "web", "missingPods": "2",
			"event": `Error creating: pods "web-59df5cf7b9-g5w8x" is forbidden: exceeded quota: compute, requested: requests.cpu=4, used: requests.cpu=8, limited: requests.cpu=10`,
		}},
	}
}

// onePR asserts that the repository has exactly one PR, from the key's branch, and returns it.
func (e *env) onePR() githubtest.PullRequest {
	e.t.Helper()
	prs := e.s.PRs(owner, repoName)
	if len(prs) != 1 {
		e.t.Fatalf("want exactly one PR, have %d: %+v", len(prs), prs)
	}
	if prs[0].Head != branch || prs[0].Base != "main" {
		e.t.Fatalf("PR %s → %s, want %s → main", prs[0].Head, prs[0].Base, branch)
	}
	return prs[0]
}

// branchHolds asserts the branch is one verified commit on the base head whose quota file is
// the golden, byte for byte.
func (e *env) branchHolds(golden string) {
	e.t.Helper()
	got, ok := e.s.FileAt(owner, repoName, branch, quotaPath)
	if !ok {
		e.t.Fatalf("%s not on %s", quotaPath, branch)
	}
	if want := readFile(e.t, golden); got != want {
		e.t.Fatalf("%s on %s differs from %s:\n--- got\n%s\n--- want\n%s", quotaPath, branch, golden, got, want)
	}
	head := e.s.BranchSHA(owner, repoName, branch)
	if ps := e.s.CommitParents(owner, repoName, head); len(ps) != 1 || ps[0] != e.s.BranchSHA(owner, repoName, "main") {
		e.t.Fatalf("branch head %s has parents %v, want exactly the base head %s", head, ps, e.s.BranchSHA(owner, repoName, "main"))
	}
	cm, err := e.gh.GetCommit(context.Background(), head)
	if err != nil {
		e.t.Fatal(err)
	}
	if !cm.GetVerification().GetVerified() {
		e.t.Errorf("commit %s is not verified", head)
	}
	if !strings.Contains(cm.GetMessage(), "Kustos-Key: quota/team-a/compute") {
		e.t.Errorf("commit message lacks the key trailer:\n%s", cm.GetMessage())
	}
}

func TestProposeOnePRIdempotentAndUpdated(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{})
	// The default branch is read once per process, not per PR.
	if b, err := w.BaseBranch(ctx); err != nil || b != "main" {
		t.Fatalf("base branch %q %v", b, err)
	}

	e.s.ResetRequests()
	res, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rest, gitReqs := 0, 0
	for _, r := range e.s.Requests() {
		if r.Git {
			gitReqs++
		} else {
			rest++
			t.Logf("REST %s %s → %d", r.Method, r.Path, r.Status)
		}
	}
	t.Logf("new PR: %d REST calls, %d Git smart-HTTP requests (shallow clone)", rest, gitReqs)
	if rest > 7 {
		t.Errorf("a new PR cost %d REST calls, target ≤ 7", rest)
	}
	if !res.Created || res.Adopted || !res.Committed || res.AlreadyInBase || res.Number != 1 || res.Branch != branch {
		t.Errorf("result %+v", res)
	}
	if res.Location != (index.Location{Path: quotaPath, Doc: 1, Namespace: "team-a"}) {
		t.Errorf("location %+v", res.Location)
	}
	pr := e.onePR()
	e.branchHolds("testdata/prod-quota.12.golden.yaml")
	if pr.Title != "quota(team-a/compute): raise requests.cpu 10 → 12" {
		t.Errorf("title %q", pr.Title)
	}
	for _, want := range []string{
		"<!-- kustos:key=quota/team-a/compute -->",
		"| resource | used | hard | % | threshold | proposed |",
		"| `requests.cpu` | 9 | 10 | 90% | 80% | **12** |",
		"Deployment `web` cannot create 2 pod(s)",
		"exceeded quota: compute",
		`resizer.io/enabled: "false"`,
		"`" + quotaPath + "` (document 2, namespace `team-a`)",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}
	if strings.Join(pr.Labels, ",") != "kustos,quota-resize" {
		t.Errorf("labels %v", pr.Labels)
	}
	if k, ok := MarkerKey(pr.Body); !ok || k != "quota/team-a/compute" {
		t.Errorf("marker key %q %v", k, ok)
	}

	// Same change again: no commit, no mutation, same PR.
	head := e.s.BranchSHA(owner, repoName, branch)
	e.s.ResetRequests()
	res, err = w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Committed || res.Created || res.Edited || !res.Adopted || res.Number != 1 {
		t.Errorf("second Propose: %+v", res)
	}
	if got := e.s.BranchSHA(owner, repoName, branch); got != head {
		t.Errorf("branch moved %s → %s", head, got)
	}
	var mutations int
	for _, r := range e.s.Requests() {
		if !r.Git && r.Method != http.MethodGet {
			mutations++
		}
	}
	for _, r := range e.s.Requests() {
		t.Logf("unchanged: %s %s → %d", r.Method, r.Path, r.Status)
	}
	t.Logf("unchanged Propose: %d REST calls, %d mutations", e.s.CountRequests("", ""), mutations)
	if mutations != 0 {
		t.Errorf("unchanged Propose made %d mutations", mutations)
	}
	e.onePR()

	// A larger recommendation: the same PR, branch and body updated.
	res, err = w.Propose(ctx, quotaChange("10", "14"), ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Committed || !res.Edited || res.Created || res.Number != 1 {
		t.Errorf("larger Propose: %+v", res)
	}
	pr = e.onePR()
	e.branchHolds("testdata/prod-quota.14.golden.yaml")
	if pr.Title != "quota(team-a/compute): raise requests.cpu 10 → 14" || !strings.Contains(pr.Body, "**14**") || strings.Contains(pr.Body, "**12**") {
		t.Errorf("PR not updated: %q\n%s", pr.Title, pr.Body)
	}
	if pr.State != "open" {
		t.Errorf("state %s", pr.State)
	}
}

// TestProposeResumesAfterEveryStep fails each mutating step once — before GitHub carries it out
// (an injected 5xx) and after (the response is lost: Kustos crashed) — and proposes again.
func TestProposeResumesAfterEveryStep(t *testing.T) {
	steps := []struct {
		method, template, suffix string
	}{
		{"POST", "/repos/{owner}/{repo}/git/trees", "/git/trees"},
		{"POST", "/repos/{owner}/{repo}/git/commits", "/git/commits"},
		{"POST", "/repos/{owner}/{repo}/git/refs", "/git/refs"},
		{"POST", "/repos/{owner}/{repo}/pulls", "/pulls"},
		{"POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels", "/labels"},
	}
	for _, st := range steps {
		for _, mode := range []string{"before", "after"} {
			t.Run(mode+" "+st.suffix, func(t *testing.T) {
				ctx := context.Background()
				e := newEnv(t)
				w := e.writer(Config{})
				if mode == "before" {
					e.s.Inject(githubtest.FaultSpec{Method: st.method, PathPattern: st.template, Status: 502})
				} else {
					e.lossy.arm(st.method, st.suffix)
				}
				if _, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); err == nil {
					t.Fatal("Propose succeeded despite the fault")
				}
				// A restarted Kustos: a new Writer without memory.
				w = e.writer(Config{})
				res, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if res.Number != 1 {
					t.Errorf("result %+v", res)
				}
				pr := e.onePR()
				e.branchHolds("testdata/prod-quota.12.golden.yaml")
				if strings.Join(pr.Labels, ",") != "kustos,quota-resize" || !strings.Contains(pr.Body, Marker(quotaChange("", "").Key)) {
					t.Errorf("PR %+v", pr)
				}
				// And a third time: nothing left to do.
				res, err = w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
				if err != nil || res.Committed || res.Created || res.Edited {
					t.Errorf("third Propose: %+v %v", res, err)
				}
				e.onePR()
			})
		}
	}
}

func TestProposeRebuildsOnMovedConflictingBase(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{})
	if _, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); err != nil {
		t.Fatal(err)
	}
	oldHead := e.s.BranchSHA(owner, repoName, branch)
	// A human edits the same line (its comment) on the base: the PR now conflicts.
	orig := readFile(t, "testdata/repo/"+quotaPath)
	moved := strings.Replace(orig, `requests.cpu: "10"   # keep quoted`, `requests.cpu: "10"   # keep quoted (reviewed)`, 1)
	moved = strings.Replace(moved, "pods: \"50\"", "pods: \"60\"", 1)
	e.s.PushBaseCommit(owner, repoName, "main", "quota: review comment", map[string]string{quotaPath: moved})
	st := pollMergeable(t, w)
	if st.Mergeable == nil || *st.Mergeable || st.MergeableState != "dirty" {
		t.Fatalf("after the conflicting base commit: %+v", st)
	}
	if _, _, err := w.MaybeMerge(ctx, quotaChange("", "").Key, true); !errors.Is(err, ErrDirty) {
		t.Errorf("MaybeMerge on a dirty PR: %v", err)
	}

	res, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Committed || !res.Rebuilt || res.Created || res.Number != 1 {
		t.Errorf("result %+v", res)
	}
	e.onePR()
	if e.s.BranchSHA(owner, repoName, branch) == oldHead {
		t.Fatal("branch not rebuilt")
	}
	dir := t.TempDir()
	golden := filepath.Join(dir, "moved.12.yaml")
	want := strings.Replace(moved, `requests.cpu: "10"`, `requests.cpu: "12"`, 1)
	if err := os.WriteFile(golden, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	e.branchHolds(golden)
	st = pollMergeable(t, w)
	if st.Mergeable == nil || !*st.Mergeable {
		t.Errorf("rebuilt PR still not mergeable: %+v", st)
	}
}

// pollMergeable reads the PR until GitHub has computed mergeability.
func pollMergeable(t *testing.T, w *Writer) PRState {
	t.Helper()
	for i := 0; i < 20; i++ {
		st, err := w.Status(context.Background(), quotaChange("", "").Key)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mergeable != nil {
			return st
		}
	}
	t.Fatal("mergeable stayed null")
	return PRState{}
}

func TestMaybeMergeThenAlreadyInBase(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.s.SetRequiredChecks(owner, repoName, "ci/validate")
	w := e.writer(Config{})
	key := quotaChange("", "").Key
	proposed := time.Now().Truncate(time.Second)
	if _, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); err != nil {
		t.Fatal(err)
	}
	merged, after, err := w.MaybeMerge(ctx, key, true)
	if err != nil || merged || after != w.cfg.RecheckAfter {
		t.Fatalf("mergeable null: merged=%v after=%v err=%v, want a recheck after %v", merged, after, err, w.cfg.RecheckAfter)
	}
	merged, after, err = w.MaybeMerge(ctx, key, true)
	if err != nil || merged || after != w.cfg.PendingAfter {
		t.Fatalf("blocked: merged=%v after=%v err=%v", merged, after, err)
	}
	st, err := w.Status(ctx, key)
	if err != nil || st.State != StateOpen || st.MergeableState != "blocked" || st.HeadSHA != e.s.BranchSHA(owner, repoName, branch) {
		t.Fatalf("status %+v %v", st, err)
	}
	if !st.Unchanged {
		t.Errorf("an unchanged PR was not answered from the ETag cache (304)")
	}
	// The opening time (GitHub's created_at, also from the cache) is what the age of the
	// oldest open pull request is measured from.
	if st.OpenedAt.Before(proposed) || st.OpenedAt.After(time.Now()) {
		t.Errorf("OpenedAt = %v, want the time the PR was opened (after %v)", st.OpenedAt, proposed)
	}
	e.s.SetCheck(owner, repoName, st.HeadSHA, "ci/validate", "success")
	if merged, _, err := w.MaybeMerge(ctx, key, false); err != nil || merged {
		t.Fatalf("merged although not allowed: %v %v", merged, err)
	}
	if pr := e.onePR(); pr.Merged {
		t.Fatal("merged although not allowed")
	}
	merged, _, err = w.MaybeMerge(ctx, key, true)
	if err != nil || !merged {
		t.Fatalf("green checks: merged=%v err=%v", merged, err)
	}
	pr := e.onePR()
	if !pr.Merged {
		t.Fatal("PR not merged")
	}
	if got, _ := e.s.FileAt(owner, repoName, "main", quotaPath); got != readFile(t, "testdata/prod-quota.12.golden.yaml") {
		t.Errorf("base after squash merge:\n%s", got)
	}
	if ps := e.s.CommitParents(owner, repoName, pr.MergeCommitSHA); len(ps) != 1 {
		t.Errorf("not a squash merge: parents %v", ps)
	}
	if st, _ := w.Status(ctx, key); st.State != StateMerged {
		t.Errorf("status after merge %+v", st)
	}
	if merged, _, err := w.MaybeMerge(ctx, key, true); err != nil || !merged {
		t.Errorf("MaybeMerge after merge: %v %v", merged, err)
	}
	// Waiting for Argo CD/Flux: the same change is done, not proposed again.
	res, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
	if err != nil || !res.AlreadyInBase || res.Number != 0 {
		t.Fatalf("after merge: %+v %v", res, err)
	}
	e.onePR()
}

func TestHumanClosedPR(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{})
	key := quotaChange("", "").Key
	res, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.s.ClosePR(owner, repoName, res.Number)
	st, err := w.Status(ctx, key)
	if err != nil || st.State != StateClosedByHuman || st.Number != 1 {
		t.Fatalf("status %+v %v", st, err)
	}
	if _, _, err := w.MaybeMerge(ctx, key, true); !errors.Is(err, ErrClosed) {
		t.Errorf("MaybeMerge on a closed PR: %v", err)
	}
	// After a restart the controller hands the number from its Lease back.
	w2 := e.writer(Config{})
	if st, _ := w2.Status(ctx, key); st.State != StateNone {
		t.Errorf("untracked closed PR: %+v", st)
	}
	w2.Track(key, 1)
	if st, _ := w2.Status(ctx, key); st.State != StateClosedByHuman {
		t.Errorf("tracked closed PR: %+v", st)
	}
}

func TestPathPrefixesAndOverride(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := quotaChange("", "12")

	// Without --git-path both clusters define team-a/compute.
	if _, err := e.writer(Config{Paths: []string{}}).Propose(ctx, c, ProposeOptions{}); !errors.Is(err, index.ErrSourceAmbiguous) ||
		!strings.Contains(err.Error(), "clusters/staging/team-a/quota.yaml") {
		t.Fatalf("whole repository: %v", err)
	}
	// The staging instance only sees clusters/staging and uses its own branch.
	staging := e.writer(Config{Cluster: "staging", Paths: []string{"clusters/staging"}})
	res, err := staging.Propose(ctx, quotaChange("4", "5"), ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "kustos/staging/quota/team-a/compute" || res.Location.Path != "clusters/staging/team-a/quota.yaml" {
		t.Errorf("staging: %+v", res)
	}
	if got, _ := e.s.FileAt(owner, repoName, res.Branch, "clusters/staging/team-a/quota.yaml"); !strings.Contains(got, `requests.cpu: "5"`) {
		t.Errorf("staging file:\n%s", got)
	}
	if got, _ := e.s.FileAt(owner, repoName, res.Branch, quotaPath); got != readFile(t, "testdata/repo/"+quotaPath) {
		t.Errorf("staging PR touched prod")
	}
	// A resizer.io/git-path override wins over discovery, below --git-path (TestHostileGitPath:
	// outside it, it is refused).
	res, err = e.writer(Config{Paths: []string{"clusters"}}).Propose(ctx, quotaChange("4", "6"), ProposeOptions{GitPath: "clusters/staging/team-a/quota.yaml"})
	if err != nil || res.Location.Path != "clusters/staging/team-a/quota.yaml" {
		t.Fatalf("override: %+v %v", res, err)
	}
	// A stale observation: Git holds 10, the detector saw 8.
	if _, err := e.writer(Config{}).Propose(ctx, quotaChange("8", "12"), ProposeOptions{}); !errors.Is(err, yamledit.ErrConflict) {
		t.Errorf("stale From: %v", err)
	}
	if _, err := e.writer(Config{}).Propose(ctx, lifecycle.Change{Key: "x"}, ProposeOptions{}); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("invalid change: %v", err)
	}
	if n := len(e.s.PRs(owner, repoName)); n != 2 {
		t.Errorf("%d PRs, want 2 (prod and staging)", n)
	}
}

func TestBranchTakenByAnotherKey(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{})
	if _, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); err != nil {
		t.Fatal(err)
	}
	// A PR on the key's branch whose marker names another key (e.g. two names sanitised to one
	// branch) is never adopted.
	if _, err := e.gh.EditPR(ctx, 1, "", Marker("quota/other/compute")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.writer(Config{}).Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); !errors.Is(err, ErrBranchTaken) {
		t.Errorf("foreign marker: %v", err)
	}
}

// TestProposeDeleteManifest: a deletion of the only object of a file deletes the file; proposing
// it again finds the branch right (the locally computed tree matches GitHub's).
func TestProposeDeleteManifest(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{Cluster: "staging", Paths: []string{"clusters/staging"}})
	c := quotaChange("", "")
	c.Detector, c.Key, c.Edit = "expiry", lifecycle.NewKey("expiry", "team-a", "compute"), lifecycle.Edit{Op: lifecycle.EditDelete}
	c.Evidence = []map[string]string{{"expiredAt": "2026-11-01T00:00:00Z", "ttl": "720h"}}
	res, err := w.Propose(ctx, c, ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const staging = "clusters/staging/team-a/quota.yaml"
	if _, ok := e.s.FileAt(owner, repoName, res.Branch, staging); ok {
		t.Errorf("%s still on %s", staging, res.Branch)
	}
	if _, ok := e.s.FileAt(owner, repoName, res.Branch, "clusters/staging/team-a/kustomization.yaml"); !ok {
		t.Errorf("the rest of the directory went too")
	}
	pr, _ := e.s.PR(owner, repoName, res.Number)
	if pr.Title != "expiry(team-a/compute): delete ResourceQuota compute" || !strings.Contains(pr.Body, "| expiredAt | 2026-11-01T00:00:00Z |") {
		t.Errorf("PR %q\n%s", pr.Title, pr.Body)
	}
	res, err = w.Propose(ctx, c, ProposeOptions{})
	if err != nil || res.Committed || res.Created {
		t.Errorf("again: %+v %v", res, err)
	}
}

// TestConcurrentWriters: two replicas without a lock race on one key: one PR.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(e.s.Token()), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := github.NewClient(github.Config{APIURL: e.s.URL(), TokenFile: tok, Repository: owner + "/" + repoName}, github.WithMutationInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	ws := []*Writer{e.writer(Config{}), NewWriter(other, &GitRepo{URL: e.repo.URL, Branch: "main", Token: e.repo.Token},
		Config{Cluster: "prod", Paths: []string{"clusters/prod"}, Labels: labels})}
	var wg sync.WaitGroup
	errs := make([]error, len(ws))
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Logf("racing Propose: %v", err) // a lost race may fail; the retry converges
		}
	}
	for _, w := range ws {
		if _, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.onePR()
	e.branchHolds("testdata/prod-quota.12.golden.yaml")
}

// TestCloneErrorHasNoToken: a refused clone names the branch, never the credential.
func TestCloneErrorHasNoToken(t *testing.T) {
	e := newEnv(t)
	const secret = "ghs_notAValidTokenButSecret42"
	r := &GitRepo{URL: e.repo.URL, Branch: "main", Token: func(context.Context) (string, error) { return secret, nil }}
	_, err := r.Snapshot(context.Background(), "0000000000000000000000000000000000000000")
	if err == nil {
		t.Fatal("clone with a bad token succeeded")
	}
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "main") {
		t.Errorf("error %q", err)
	}
	t.Logf("error: %v", err)
}

// TestProposeNeverOverwritesAHumanCommit: a human pushed to the open PR's branch while the Lease
// did not name that commit (a crash before the lock, or a push since the last look). Propose
// must refuse, even when the human's commit copies Kustos's message (an amend keeps it), and
// must go on over a head of its own that the Lease does not record yet.
func TestProposeNeverOverwritesAHumanCommit(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{})
	key := quotaChange("", "").Key
	if _, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); err != nil {
		t.Fatal(err)
	}
	first := e.s.BranchSHA(owner, repoName, branch)
	if own, err := w.OwnCommit(ctx, key, first); err != nil || !own {
		t.Fatalf("OwnCommit(Kustos's first head) = %v, %v", own, err)
	}
	// Kustos updates the PR, and crashes before its Lease records the new head: the Lease
	// still says first. A restarted Kustos knows the new head as its own.
	if _, err := NewWriter(e.gh, e.repo, w.cfg).Propose(ctx, quotaChange("10", "14"), ProposeOptions{Head: first}); err != nil {
		t.Fatal(err)
	}
	second := e.s.BranchSHA(owner, repoName, branch)
	if second == first {
		t.Fatal("the update wrote no commit; the test proves nothing")
	}
	if res, err := NewWriter(e.gh, e.repo, w.cfg).Propose(ctx, quotaChange("10", "14"), ProposeOptions{Head: first}); err != nil || res.Committed {
		t.Fatalf("Propose over Kustos's own unrecorded head: %+v, %v; want it adopted as up to date", res, err)
	}

	// A human amends the content, keeping Kustos's message and trailers.
	msg := e.s.CommitMessage(owner, repoName, second)
	orig := readFile(t, "testdata/repo/"+quotaPath)
	human := e.s.PushBaseCommit(owner, repoName, branch, msg, map[string]string{
		quotaPath: strings.Replace(orig, `requests.cpu: "10"`, `requests.cpu: "16"`, 1)})
	for _, head := range []string{"", first, second} {
		w := NewWriter(e.gh, e.repo, w.cfg)
		_, err := w.Propose(ctx, quotaChange("10", "14"), ProposeOptions{Head: head})
		if !errors.Is(err, lifecycle.ErrForeignCommit) || !errors.Is(err, ErrForeignHead) {
			t.Errorf("Propose with the Lease's head %q over a human's commit: %v; want ErrForeignCommit", head, err)
		}
		if got := e.s.BranchSHA(owner, repoName, branch); got != human {
			t.Fatalf("the branch head moved from the human's %s to %s", human, got)
		}
	}
	if own, err := w.OwnCommit(ctx, key, human); err != nil || own {
		t.Errorf("OwnCommit(a human's amend with Kustos's message) = %v, %v; want false", own, err)
	}
	if own, err := w.OwnCommit(ctx, lifecycle.NewKey("quota", "team-b", "compute"), second); err != nil || own {
		t.Errorf("OwnCommit(Kustos's commit, another key) = %v, %v; want false", own, err)
	}
}

// TestProposeKeepsACommitPushedDuringTheRebuild: a person pushes onto the open PR's branch after
// Propose checked that its head is Kustos's own and before the rebuild moves the branch (here:
// as the client reads the branch right before the update). The update is refused with
// ErrForeignHead and the person's commit stays the head: GitHub's REST API would have
// overwritten it, as a force-update has no compare-and-set.
func TestProposeKeepsACommitPushedDuringTheRebuild(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{})
	if _, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{}); err != nil {
		t.Fatal(err)
	}
	first := e.s.BranchSHA(owner, repoName, branch)
	var human string
	e.lossy.armBefore(http.MethodGet, "/git/ref/heads/"+branch, func() {
		human = e.s.PushBaseCommit(owner, repoName, branch, "a person's fix", map[string]string{"NOTES.md": "keep me\n"})
	})
	_, err := w.Propose(ctx, quotaChange("10", "14"), ProposeOptions{Head: first})
	if !errors.Is(err, ErrForeignHead) || !strings.Contains(err.Error(), "moved while Kustos rebuilt it") {
		t.Fatalf("Propose = %v; want ErrForeignHead from the guarded update", err)
	}
	if human == "" {
		t.Fatal("the branch was not read before its update; the test proves nothing")
	}
	if got := e.s.BranchSHA(owner, repoName, branch); got != human {
		t.Errorf("branch head %s, want the person's commit %s", got, human)
	}
}

// TestProposeKeepsTheCommitsOfAClosedPR: a person pushed onto Kustos's PR branch, and the PR was
// closed; a later proposal of the same key reuses the branch, but keeps the person's commit on
// KeptBranch first. A branch whose head is Kustos's own is reused as it is, with no kept branch.
func TestProposeKeepsTheCommitsOfAClosedPR(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	w := e.writer(Config{})
	res, err := w.Propose(ctx, quotaChange("10", "12"), ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	human := e.s.PushBaseCommit(owner, repoName, branch, "a person's note", map[string]string{"NOTES.md": "mine\n"})
	e.s.ClosePR(owner, repoName, res.Number)
	res, err = NewWriter(e.gh, e.repo, w.cfg).Propose(ctx, quotaChange("10", "14"), ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.KeptBranch != KeptBranch(branch, human) {
		t.Fatalf("Propose over a closed PR's branch = %+v; want a new PR and the person's commit kept", res)
	}
	if got := e.s.BranchSHA(owner, repoName, KeptBranch(branch, human)); got != human {
		t.Errorf("%s at %q, want the person's commit %s", KeptBranch(branch, human), got, human)
	}
	if got := e.s.BranchSHA(owner, repoName, branch); got == human || got != res.HeadSHA {
		t.Errorf("branch at %s, want Kustos's new commit %s", got, res.HeadSHA)
	}

	// Closed again with Kustos's own head: reused with nothing kept.
	e.s.ClosePR(owner, repoName, res.Number)
	res, err = NewWriter(e.gh, e.repo, w.cfg).Propose(ctx, quotaChange("10", "16"), ProposeOptions{})
	if err != nil || !res.Created || res.KeptBranch != "" {
		t.Errorf("Propose over a closed PR's branch with Kustos's own head = %+v, %v; want a new PR, nothing kept", res, err)
	}
}
