package githubtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-github/v60/github"
)

const (
	owner = "acme"
	name  = "gitops"
)

var quotaYAML = `# team-a compute quota
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  namespace: team-a
spec:
  hard:
    requests.cpu: "10" # raised in March
    requests.memory: 20Gi
`

func newServer(t *testing.T) (*Server, *github.Client) {
	t.Helper()
	s := New(t, Options{})
	s.SeedRepo(owner, name, "main", map[string]string{
		"clusters/prod/team-a/quota.yaml":         quotaYAML,
		"clusters/prod/team-a/kustomization.yaml": "namespace: team-a\nresources:\n- quota.yaml\n",
		"README.md": "# gitops\n",
	})
	gh, err := github.NewClient(nil).WithAuthToken(s.Token()).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return s, gh
}

func TestContractLoad(t *testing.T) {
	c, err := LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %s in %v", c.Path(), c.LoadDuration)
}

func TestCloneOverSmartHTTP(t *testing.T) {
	s, _ := newServer(t)
	ctx := context.Background()

	_, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{URL: s.GitURL(owner, name), Depth: 1})
	if !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Fatalf("clone without token: got %v, want %v", err, transport.ErrAuthenticationRequired)
	}
	_, err = git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{URL: s.GitURL(owner, name), Depth: 1,
		Auth: &githttp.BasicAuth{Username: "x-access-token", Password: "ghs_wrong"}})
	if err == nil {
		t.Fatal("clone with a wrong token succeeded")
	}

	start := time.Now()
	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{
		URL: s.GitURL(owner, name), Depth: 1, SingleBranch: true, ReferenceName: plumbing.NewBranchReferenceName("main"),
		Auth: &githttp.BasicAuth{Username: "x-access-token", Password: s.Token()},
	})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	t.Logf("shallow clone took %v", time.Since(start))
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := head.Hash().String(), s.BranchSHA(owner, name, "main"); got != want {
		t.Fatalf("HEAD %s, want %s", got, want)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	f, err := commit.File("clusters/prod/team-a/quota.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if content, _ := f.Contents(); content != quotaYAML {
		t.Fatalf("quota.yaml = %q", content)
	}
}

// TestPullRequestFlow walks the path Kustos takes: tree with base_tree, commit, ref, PR,
// duplicate PR, mergeability, required checks, merge.
func TestPullRequestFlow(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()
	s.SetRequiredChecks(owner, name, "ci/validate")

	repo, _, err := gh.Repositories.Get(ctx, owner, name)
	if err != nil {
		t.Fatal(err)
	}
	base := repo.GetDefaultBranch()
	if base != "main" {
		t.Fatalf("default branch %q", base)
	}
	baseRef, _, err := gh.Git.GetRef(ctx, owner, name, "heads/"+base)
	if err != nil {
		t.Fatal(err)
	}
	baseCommit, _, err := gh.Git.GetCommit(ctx, owner, name, baseRef.GetObject().GetSHA())
	if err != nil {
		t.Fatal(err)
	}
	file, _, _, err := gh.Repositories.GetContents(ctx, owner, name, "clusters/prod/team-a/quota.yaml", &github.RepositoryContentGetOptions{Ref: base})
	if err != nil {
		t.Fatal(err)
	}
	old, err := file.GetContent()
	if err != nil || old != quotaYAML {
		t.Fatalf("contents: %q, %v", old, err)
	}

	_, dir, _, err := gh.Repositories.GetContents(ctx, owner, name, "clusters/prod/team-a", &github.RepositoryContentGetOptions{Ref: base})
	if err != nil || len(dir) != 2 || dir[0].GetName() != "kustomization.yaml" || dir[1].GetType() != "file" {
		t.Fatalf("directory contents: %v %v", dir, err)
	}
	rawBlob, _, err := gh.Git.GetBlobRaw(ctx, owner, name, file.GetSHA())
	if err != nil || string(rawBlob) != quotaYAML {
		t.Fatalf("raw blob: %q %v", rawBlob, err)
	}
	blob, _, err := gh.Git.GetBlob(ctx, owner, name, file.GetSHA())
	if err != nil || blob.GetSize() != len(quotaYAML) {
		t.Fatalf("blob: %v", err)
	}
	edited := strings.Replace(quotaYAML, `requests.cpu: "10"`, `requests.cpu: "12"`, 1)
	tree, _, err := gh.Git.CreateTree(ctx, owner, name, baseCommit.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("clusters/prod/team-a/quota.yaml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String(edited)},
		{Path: github.String("clusters/prod/team-a/notes/new.md"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("nested\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	commit, _, err := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{
		Message: github.String("quota(team-a/compute): raise requests.cpu 10 → 12"),
		Tree:    &github.Tree{SHA: tree.SHA},
		Parents: []*github.Commit{{SHA: baseCommit.SHA}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !commit.GetVerification().GetVerified() {
		t.Errorf("API commit not verified: %+v", commit.GetVerification())
	}
	branch := "kustos/quota/team-a/compute"
	if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}}); err != nil {
		t.Fatal(err)
	}
	// Creating it again is a 422.
	_, resp, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}})
	if err == nil || resp.StatusCode != 422 {
		t.Fatalf("duplicate ref: %v", err)
	}

	newPR := &github.NewPullRequest{Title: github.String("quota(team-a/compute): raise requests.cpu 10 → 12"), Head: github.String(branch), Base: github.String(base), Body: github.String("body\n<!-- kustos-key: quota/team-a/compute -->")}
	pr, _, err := gh.PullRequests.Create(ctx, owner, name, newPR)
	if err != nil {
		t.Fatal(err)
	}
	_, resp, err = gh.PullRequests.Create(ctx, owner, name, newPR)
	var er *github.ErrorResponse
	if !errors.As(err, &er) || resp.StatusCode != 422 || len(er.Errors) != 1 || er.Errors[0].Message != "A pull request already exists for acme:"+branch+"." {
		t.Fatalf("duplicate PR: %v", err)
	}
	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, owner, name, pr.GetNumber(), []string{"kustos", "quota"}); err != nil {
		t.Fatal(err)
	}
	list, _, err := gh.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{State: "open", Head: owner + ":" + branch, Base: base})
	if err != nil || len(list) != 1 || list[0].GetNumber() != pr.GetNumber() {
		t.Fatalf("list by head: %v %v", len(list), err)
	}

	// mergeable: null first, then computed; blocked until the required check is green.
	got, _, err := gh.PullRequests.Get(ctx, owner, name, pr.GetNumber())
	if err != nil {
		t.Fatal(err)
	}
	if got.Mergeable != nil || got.GetMergeableState() != "unknown" {
		t.Fatalf("first read: mergeable %v state %q, want null/unknown", got.Mergeable, got.GetMergeableState())
	}
	got, _, err = gh.PullRequests.Get(ctx, owner, name, pr.GetNumber())
	if err != nil {
		t.Fatal(err)
	}
	if !got.GetMergeable() || got.GetMergeableState() != "blocked" {
		t.Fatalf("second read: mergeable %v state %q, want true/blocked", got.Mergeable, got.GetMergeableState())
	}
	_, resp, err = gh.PullRequests.Merge(ctx, owner, name, pr.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "squash", SHA: got.GetHead().GetSHA()})
	if err == nil || resp.StatusCode != 405 {
		t.Fatalf("merge while blocked: %v", err)
	}
	s.SetCheck(owner, name, got.GetHead().GetSHA(), "ci/validate", "success")
	s.SetStatus(owner, name, got.GetHead().GetSHA(), "ci/lint", "pending")
	combined, _, err := gh.Repositories.GetCombinedStatus(ctx, owner, name, branch, nil)
	if err != nil || combined.GetState() != "pending" || combined.GetTotalCount() != 1 || combined.Statuses[0].GetContext() != "ci/lint" {
		t.Fatalf("combined status: %v", err)
	}
	status, _, err := gh.Checks.ListCheckRunsForRef(ctx, owner, name, got.GetHead().GetSHA(), nil)
	if err != nil || status.GetTotal() != 1 || status.CheckRuns[0].GetConclusion() != "success" {
		t.Fatalf("check runs: %v", err)
	}
	got, _, err = gh.PullRequests.Get(ctx, owner, name, pr.GetNumber())
	if err != nil {
		t.Fatal(err)
	}
	if !got.GetMergeable() || got.GetMergeableState() != "clean" {
		t.Fatalf("after check: mergeable %v state %q, want true/clean", got.Mergeable, got.GetMergeableState())
	}

	_, resp, err = gh.PullRequests.Merge(ctx, owner, name, pr.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "squash", SHA: baseCommit.GetSHA()})
	if !errors.As(err, &er) || resp.StatusCode != 409 || er.Message != "Head branch was modified. Review and try the merge again." {
		t.Fatalf("merge with wrong sha: %v", err)
	}
	res, _, err := gh.PullRequests.Merge(ctx, owner, name, pr.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "squash", SHA: got.GetHead().GetSHA()})
	if err != nil || !res.GetMerged() {
		t.Fatalf("merge: %v", err)
	}
	mainSHA := s.BranchSHA(owner, name, "main")
	if mainSHA != res.GetSHA() {
		t.Fatalf("main at %s, merge commit %s", mainSHA, res.GetSHA())
	}
	if ps := s.CommitParents(owner, name, mainSHA); len(ps) != 1 || ps[0] != baseCommit.GetSHA() {
		t.Fatalf("squash commit parents %v", ps)
	}
	if content, _ := s.FileAt(owner, name, "main", "clusters/prod/team-a/quota.yaml"); content != edited {
		t.Fatalf("main has %q", content)
	}
	if content, _ := s.FileAt(owner, name, "main", "clusters/prod/team-a/notes/new.md"); content != "nested\n" {
		t.Fatalf("nested file: %q", content)
	}
	snap, _ := s.PR(owner, name, pr.GetNumber())
	if !snap.Merged || snap.State != "closed" || snap.MergeCommitSHA != mainSHA || len(snap.Labels) != 2 {
		t.Fatalf("snapshot %+v", snap)
	}
	final, _, err := gh.PullRequests.Get(ctx, owner, name, pr.GetNumber())
	if err != nil || !final.GetMerged() || final.GetMergeCommitSHA() != mainSHA {
		t.Fatalf("merged PR: %v", err)
	}
	if n := s.CountRequests("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"); n != 4 {
		t.Errorf("%d GETs of the pull request logged, want 4", n)
	}
	if n := s.CountRequests("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"); n != 3 {
		t.Errorf("%d merge calls logged, want 3", n)
	}
	t.Logf("REST calls: %d", s.CountRequests("", ""))
}

func TestTreeDeletionsAndRefs(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()
	mainSHA := s.BranchSHA(owner, name, "main")
	c, _, err := gh.Git.GetCommit(ctx, owner, name, mainSHA)
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, owner, name, c.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("README.md"), Mode: github.String("100644"), Type: github.String("blob")}, // sha: null
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tree.Entries {
		if e.GetPath() == "README.md" {
			t.Fatal("README.md not deleted")
		}
	}
	commit, _, err := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("rm"), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: c.SHA}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// An unrelated commit on a side branch, then a non-fast-forward update.
	side, _, err := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("side"), Tree: c.Tree, Parents: []*github.Commit{{SHA: c.SHA}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/x"), Object: &github.GitObject{SHA: commit.SHA}}); err != nil {
		t.Fatal(err)
	}
	_, resp, err := gh.Git.UpdateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/x"), Object: &github.GitObject{SHA: side.SHA}}, false)
	if err == nil || resp.StatusCode != 422 {
		t.Fatalf("non-fast-forward without force: %v", err)
	}
	if _, _, err := gh.Git.UpdateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/x"), Object: &github.GitObject{SHA: side.SHA}}, true); err != nil {
		t.Fatalf("forced update: %v", err)
	}
	if got := s.BranchSHA(owner, name, "x"); got != side.GetSHA() {
		t.Fatalf("x at %s", got)
	}
	if _, err := gh.Git.DeleteRef(ctx, owner, name, "heads/x"); err != nil {
		t.Fatal(err)
	}
	if _, resp, err := gh.Git.GetRef(ctx, owner, name, "heads/x"); err == nil || resp.StatusCode != 404 {
		t.Fatalf("deleted ref: %v", err)
	}
}

func TestConflictAndHumanClose(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()
	mainSHA := s.BranchSHA(owner, name, "main")
	c, _, _ := gh.Git.GetCommit(ctx, owner, name, mainSHA)
	tree, _, err := gh.Git.CreateTree(ctx, owner, name, c.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("clusters/prod/team-a/quota.yaml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String(strings.Replace(quotaYAML, `"10"`, `"12"`, 1))},
	})
	if err != nil {
		t.Fatal(err)
	}
	commit, _, _ := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("edit"), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: c.SHA}}}, nil)
	if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/b"), Object: &github.GitObject{SHA: commit.SHA}}); err != nil {
		t.Fatal(err)
	}
	pr, _, err := gh.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String("t"), Head: github.String("b"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	s.PushBaseCommit(owner, name, "main", "human edit", map[string]string{"clusters/prod/team-a/quota.yaml": strings.Replace(quotaYAML, `"10"`, `"16"`, 1)})
	if _, _, err := gh.PullRequests.Get(ctx, owner, name, pr.GetNumber()); err != nil { // starts computing mergeability
		t.Fatal(err)
	}
	got, _, err := gh.PullRequests.Get(ctx, owner, name, pr.GetNumber())
	if err != nil || got.Mergeable == nil || got.GetMergeable() || got.GetMergeableState() != "dirty" {
		t.Fatalf("after conflicting base push: %v %v %q", err, got.Mergeable, got.GetMergeableState())
	}
	_, resp, err := gh.PullRequests.Merge(ctx, owner, name, pr.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "squash", SHA: got.GetHead().GetSHA()})
	if err == nil || resp.StatusCode != 405 {
		t.Fatalf("merge of dirty PR: %v", err)
	}
	s.ClosePR(owner, name, pr.GetNumber())
	list, _, _ := gh.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{State: "closed", Head: owner + ":b"})
	if len(list) != 1 || list[0].GetState() != "closed" || list[0].MergedAt != nil {
		t.Fatalf("closed list: %+v", list)
	}
	// Update title/body/state through PATCH.
	upd, _, err := gh.PullRequests.Edit(ctx, owner, name, pr.GetNumber(), &github.PullRequest{Title: github.String("t2"), State: github.String("open")})
	if err != nil || upd.GetTitle() != "t2" || upd.GetState() != "open" {
		t.Fatalf("edit: %v", err)
	}
	// Retarget onto a branch without the conflicting human edit: mergeable again.
	if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/release"), Object: &github.GitObject{SHA: c.SHA}}); err != nil {
		t.Fatal(err)
	}
	upd, _, err = gh.PullRequests.Edit(ctx, owner, name, pr.GetNumber(), &github.PullRequest{Base: &github.PullRequestBranch{Ref: github.String("release")}})
	if err != nil || upd.GetBase().GetRef() != "release" || upd.Mergeable != nil {
		t.Fatalf("retarget: %v", err)
	}
	if _, _, err := gh.PullRequests.Get(ctx, owner, name, pr.GetNumber()); err != nil { // starts computing mergeability
		t.Fatal(err)
	}
	got, _, _ = gh.PullRequests.Get(ctx, owner, name, pr.GetNumber())
	if got.GetMergeableState() != "clean" {
		t.Fatalf("after retarget: %q", got.GetMergeableState())
	}
}

func TestETagNotModified(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()
	s.PushBaseCommit(owner, name, "main", "x", nil) // no-op commit so that a branch can differ
	c, _, _ := gh.Git.GetCommit(ctx, owner, name, s.BranchSHA(owner, name, "main"))
	tree, _, _ := gh.Git.CreateTree(ctx, owner, name, c.GetTree().GetSHA(), []*github.TreeEntry{{Path: github.String("a.txt"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("a")}})
	commit, _, _ := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("a"), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: c.SHA}}}, nil)
	if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/a"), Object: &github.GitObject{SHA: commit.SHA}}); err != nil {
		t.Fatal(err)
	}
	pr, _, err := gh.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String("a"), Head: github.String("a"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	url := s.URL() + fmt.Sprintf("repos/%s/%s/pulls/%d", owner, name, pr.GetNumber())
	type answer struct {
		StatusCode    int
		Header        http.Header
		ContentLength int64
	}
	get := func(etag string) answer {
		req, _ := http.NewRequest("GET", url, http.NoBody)
		req.Header.Set("Authorization", "token "+s.Token())
		req.Header.Set("Accept", "application/vnd.github+json")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return answer{resp.StatusCode, resp.Header, resp.ContentLength}
	}
	get("")                             // null, starts computing
	first := get("")                    // computed
	time.Sleep(1100 * time.Millisecond) // no wall-clock time may leak into an unchanged body
	second := get(first.Header.Get("ETag"))
	if second.StatusCode != http.StatusNotModified || second.ContentLength > 0 {
		t.Fatalf("If-None-Match: status %d", second.StatusCode)
	}
	if r1, r2 := first.Header.Get("X-RateLimit-Remaining"), second.Header.Get("X-RateLimit-Remaining"); r1 != r2 {
		t.Fatalf("304 consumed rate limit: %s → %s", r1, r2)
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Reset", "X-RateLimit-Used", "X-RateLimit-Resource"} {
		if second.Header.Get(h) == "" {
			t.Errorf("304 without %s", h)
		}
	}
	// go-github surfaces the 304 as an error with the response.
	req, _ := gh.NewRequest("GET", fmt.Sprintf("repos/%s/%s/pulls/%d", owner, name, pr.GetNumber()), nil)
	req.Header.Set("If-None-Match", first.Header.Get("ETag"))
	resp, err := gh.Do(ctx, req, nil)
	if resp == nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("go-github conditional request: %v", err)
	}
	// A change invalidates the ETag.
	if _, _, err := gh.PullRequests.Edit(ctx, owner, name, pr.GetNumber(), &github.PullRequest{Body: github.String("new body")}); err != nil {
		t.Fatal(err)
	}
	if third := get(first.Header.Get("ETag")); third.StatusCode != 200 {
		t.Fatalf("after edit: %d", third.StatusCode)
	}
}

func TestFaultInjection(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()

	s.Inject(FaultSpec{Method: "GET", PathPattern: "/repos/{owner}/{repo}", Status: 503})
	_, resp, err := gh.Repositories.Get(ctx, owner, name)
	if err == nil || resp.StatusCode != 503 {
		t.Fatalf("503: %v", err)
	}
	if _, _, err := gh.Repositories.Get(ctx, owner, name); err != nil {
		t.Fatalf("fault not used up: %v", err)
	}

	s.Inject(FaultSpec{PathPattern: "/repos/acme/gitops/pulls", Status: 403, RetryAfter: 30 * time.Second})
	_, _, err = gh.PullRequests.List(ctx, owner, name, nil)
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 30*time.Second || !strings.HasPrefix(abuse.Message, "You have exceeded a secondary rate limit") {
		t.Fatalf("secondary rate limit: %T %v", err, err)
	}

	// go-github remembers the secondary limit and refuses further calls until it passes: use a
	// fresh client.
	gh, _ = github.NewClient(nil).WithAuthToken(s.Token()).WithEnterpriseURLs(s.URL(), s.URL())
	s.Inject(FaultSpec{Method: "GET", PathPattern: "/repos/{owner}/{repo}/pulls", Status: 429, RetryAfter: 2 * time.Second, Times: 2})
	for i := 0; i < 2; i++ {
		_, resp, err = gh.PullRequests.List(ctx, owner, name, nil)
		if err == nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
			t.Fatalf("429 #%d: %v", i, err)
		}
	}
	if _, _, err := gh.PullRequests.List(ctx, owner, name, nil); err != nil {
		t.Fatalf("after 429s: %v", err)
	}

	s.Inject(FaultSpec{Method: "GET", PathPattern: "/repos/{owner}/{repo}", Delay: 200 * time.Millisecond})
	start := time.Now()
	if _, _, err := gh.Repositories.Get(ctx, owner, name); err != nil || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("slow response: %v after %v", err, time.Since(start))
	}
	s.Inject(FaultSpec{Status: 500, Times: -1})
	for i := 0; i < 3; i++ {
		if _, resp, err := gh.Git.GetRef(ctx, owner, name, "heads/main"); err == nil || resp.StatusCode != 500 {
			t.Fatalf("500 #%d: %v", i, err)
		}
	}
	s.ClearFaults()

	s.SetRateLimitRemaining(0)
	_, _, err = gh.Repositories.Get(ctx, owner, name)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("primary rate limit: %T %v", err, err)
	}
	s.SetRateLimitRemaining(10)

	n := 0
	for _, r := range s.Requests() {
		if r.Faulted {
			n++
		}
	}
	if n != 7 {
		t.Fatalf("%d faulted requests logged, want 7", n)
	}
}

func TestInstallationTokenExchange(t *testing.T) {
	key, pemKey := NewAppKey(t)
	s := New(t, Options{AppID: 77, InstallationID: 88, AppKey: &key.PublicKey})
	s.SeedRepo(owner, name, "main", map[string]string{"a.yaml": "a: 1\n"})

	tr, err := ghinstallation.New(http.DefaultTransport, 77, 88, pemKey)
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = s.APIURL()
	gh, err := github.NewClient(&http.Client{Transport: tr}).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := gh.Repositories.Get(context.Background(), owner, name)
	if err != nil || r.GetFullName() != "acme/gitops" {
		t.Fatalf("get repo through the App: %v", err)
	}
	tok, err := tr.Token(context.Background())
	if err != nil || !s.validToken(tok) {
		t.Fatalf("installation token %q: %v", tok, err)
	}
	if _, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: s.GitURL(owner, name), Auth: &githttp.BasicAuth{Username: "x-access-token", Password: tok}}); err != nil {
		t.Fatalf("clone with installation token: %v", err)
	}

	// A JWT signed with another key is refused.
	other, otherPEM := NewAppKey(t)
	_ = other
	bad, _ := ghinstallation.New(http.DefaultTransport, 77, 88, otherPEM)
	bad.BaseURL = s.APIURL()
	if _, err := bad.Token(context.Background()); err == nil {
		t.Fatal("token with a foreign key")
	}
	// No token at all: 401.
	anon, _ := github.NewClient(nil).WithEnterpriseURLs(s.URL(), s.URL())
	if _, resp, err := anon.Repositories.Get(context.Background(), owner, name); err == nil || resp.StatusCode != 401 {
		t.Fatalf("anonymous: %v", err)
	}
}

// fakeT collects contract violations.
type fakeT struct {
	mu   sync.Mutex
	errs []string
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func TestContractCatchesMalformedResponse(t *testing.T) {
	c, err := LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "/repos/acme/gitops/git/ref/heads/main", http.NoBody)
	params := map[string]string{"owner": "acme", "repo": "gitops", "ref": "heads/main"}
	hdr := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	good := `{"ref":"refs/heads/main","node_id":"x","url":"u","object":{"type":"commit","sha":"` + strings.Repeat("a", 40) + `","url":"u"}}`
	if err := c.CheckResponse(req, "/repos/{owner}/{repo}/git/ref/{ref}", params, 200, hdr, []byte(good)); err != nil {
		t.Fatalf("good response rejected: %v", err)
	}
	for name, tc := range map[string]struct {
		status int
		body   string
	}{
		"missing object":    {200, `{"ref":"refs/heads/main","node_id":"x","url":"u"}`},
		"wrong type":        {200, strings.Replace(good, `"ref":"refs/heads/main"`, `"ref":42`, 1)},
		"undeclared status": {201, good},
	} {
		if err := c.CheckResponse(req, "/repos/{owner}/{repo}/git/ref/{ref}", params, tc.status, hdr, []byte(tc.body)); err == nil {
			t.Errorf("%s: not caught", name)
		} else {
			t.Logf("%s: %s", name, shortErr(err))
		}
	}

	// And wired into the server: a corrupted pull request is reported for the operation.
	ft := &fakeT{}
	s := New(t, Options{ContractErrorf: ft.Errorf})
	s.SeedRepo(owner, name, "main", map[string]string{"a": "a\n"})
	s.mutateResponse = func(template string, status int, body []byte) (int, []byte) {
		if template == "/repos/{owner}/{repo}" {
			return status, []byte(strings.Replace(string(body), `"private":true`, `"private":"yes"`, 1))
		}
		return status, body
	}
	gh, _ := github.NewClient(nil).WithAuthToken(s.Token()).WithEnterpriseURLs(s.URL(), s.URL())
	// The mutated answer does not decode (private is a string); the checker's report counts.
	_, _, _ = gh.Repositories.Get(context.Background(), owner, name)
	// A request Kustos should never send: a pull request without a head.
	if _, _, err := gh.PullRequests.Create(context.Background(), owner, name, &github.NewPullRequest{Title: github.String("x"), Base: github.String("main")}); err == nil {
		t.Error("a pull request without a head was created")
	}
	if len(ft.errs) != 2 || !strings.Contains(ft.errs[0], "GET /repos/{owner}/{repo} status 200") || !strings.Contains(ft.errs[0], "private") ||
		!strings.Contains(ft.errs[1], "request POST /repos/{owner}/{repo}/pulls") {
		t.Fatalf("contract errors: %q", ft.errs)
	}
}

func TestPushOverSmartHTTP(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()
	auth := &githttp.BasicAuth{Username: "x-access-token", Password: s.Token()}
	fs := memfs.New()
	repo, err := git.CloneContext(ctx, memory.NewStorage(), fs, &git.CloneOptions{URL: s.GitURL(owner, name), Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("pushed"), Create: true}); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("pushed.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("pushed\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := wt.Add("pushed.txt"); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}
	h, err := wt.Commit("push", &git.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	err = repo.PushContext(ctx, &git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{"refs/heads/pushed:refs/heads/pushed"}})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	ref, _, err := gh.Git.GetRef(ctx, owner, name, "heads/pushed")
	if err != nil || ref.GetObject().GetSHA() != h.String() {
		t.Fatalf("pushed ref: %v", err)
	}
	if err := repo.PushContext(ctx, &git.PushOptions{Auth: &githttp.BasicAuth{Username: "x-access-token", Password: "nope"}}); err == nil {
		t.Fatal("push with a bad token succeeded")
	}
}

func TestMissingSpecFailsWithHint(t *testing.T) {
	_, err := loadContract(t.TempDir() + "/nope.json")
	if err == nil || !strings.Contains(err.Error(), "run make testbin") {
		t.Fatalf("error %v", err)
	}
}

func TestUnimplementedEndpointIsReported(t *testing.T) {
	ft := &fakeT{}
	s := New(t, Options{ContractErrorf: ft.Errorf})
	s.SeedRepo(owner, name, "main", map[string]string{"a": "a\n"})
	gh, _ := github.NewClient(nil).WithAuthToken(s.Token()).WithEnterpriseURLs(s.URL(), s.URL())
	if _, _, err := gh.Repositories.GetBranch(context.Background(), owner, name, "main", 0); err == nil {
		t.Error("an unimplemented endpoint answered")
	}
	if len(ft.errs) != 1 || !strings.Contains(ft.errs[0], "not implemented") {
		t.Fatalf("errors %q", ft.errs)
	}
}

// BenchmarkCheckPullResponse measures validating one full pull-request response.
func BenchmarkCheckPullResponse(b *testing.B) {
	s := New(b, Options{})
	s.SeedRepo(owner, name, "main", map[string]string{"a": "a\n"})
	s.PushBaseCommit(owner, name, "side", "side", map[string]string{"b": "b\n"})
	r := s.repo(owner, name)
	r.pulls = append(r.pulls, &pull{number: 1, id: 1, title: "t", state: "open", head: "side", base: "main", created: time.Now(), updated: time.Now()})
	body, _ := json.Marshal(s.pullJSONLocked(r, r.pulls[0], true))
	req, _ := http.NewRequest("GET", "/repos/acme/gitops/pulls/1", http.NoBody)
	params := map[string]string{"owner": owner, "repo": name, "pull_number": "1"}
	hdr := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.contract.CheckResponse(req, "/repos/{owner}/{repo}/pulls/{pull_number}", params, 200, hdr, body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConcurrentCreateOnePR: two writers racing on the same branch and PR get one ref and one
// PR; the losers get GitHub's 422s.
func TestConcurrentCreateOnePR(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()
	mainSHA := s.BranchSHA(owner, name, "main")
	c, _, _ := gh.Git.GetCommit(ctx, owner, name, mainSHA)
	tree, _, _ := gh.Git.CreateTree(ctx, owner, name, c.GetTree().GetSHA(), []*github.TreeEntry{{Path: github.String("x.yaml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("x: 1\n")}})
	commit, _, _ := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("x"), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: c.SHA}}}, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	refs, prs := 0, 0
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/race"), Object: &github.GitObject{SHA: commit.SHA}}); err == nil {
				mu.Lock()
				refs++
				mu.Unlock()
			}
			if _, _, err := gh.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String("race"), Head: github.String("race"), Base: github.String("main")}); err == nil {
				mu.Lock()
				prs++
				mu.Unlock()
			}
			if _, _, err := gh.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{Head: owner + ":race"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if refs != 1 || prs != 1 || len(s.PRs(owner, name)) != 1 {
		t.Fatalf("refs %d, prs %d, stored %d", refs, prs, len(s.PRs(owner, name)))
	}
}

func TestLargeFileContents(t *testing.T) {
	s, gh := newServer(t)
	big := strings.Repeat("# padding\n", LargeFileLimit/10+10)
	s.PushBaseCommit(owner, name, "main", "big", map[string]string{"big.yaml": big})
	fc, _, _, err := gh.Repositories.GetContents(context.Background(), owner, name, "big.yaml", nil)
	if err != nil || fc.GetEncoding() != "none" {
		t.Fatalf("large file: %v %v", fc.GetEncoding(), err)
	}
	b, _, err := gh.Git.GetBlobRaw(context.Background(), owner, name, fc.GetSHA())
	if err != nil || string(b) != big {
		t.Fatalf("raw large blob: %v", err)
	}
}

// TestNarrowedTokens: the token exchange records what was asked for, and a token narrowed to
// one repository and a few permissions reaches nothing else, over REST and Git.
func TestNarrowedTokens(t *testing.T) {
	key, _ := NewAppKey(t)
	s := New(t, Options{AppID: 77, InstallationID: 88, AppKey: &key.PublicKey})
	s.SeedRepo(owner, name, "main", map[string]string{"a.yaml": "a: 1\n"})
	s.SeedRepo(owner, "other", "main", map[string]string{"b.yaml": "b: 1\n"})
	jwtTok, err := AppJWT(77, key)
	if err != nil {
		t.Fatal(err)
	}
	app, err := github.NewClient(nil).WithAuthToken(jwtTok).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok, _, err := app.Apps.CreateInstallationToken(ctx, 88, &github.InstallationTokenOptions{
		Repositories: []string{name},
		Permissions:  &github.InstallationPermissions{Contents: github.String("read"), PullRequests: github.String("write")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := TokenRequest{InstallationID: 88, Status: 201, Repositories: []string{name}, Permissions: map[string]string{"contents": "read", "pull_requests": "write"}}
	if reqs := s.TokenRequests(); len(reqs) != 1 || fmt.Sprint(reqs[0]) != fmt.Sprint(want) {
		t.Fatalf("token requests %+v, want [%+v]", reqs, want)
	}
	if len(tok.Repositories) != 1 || tok.GetPermissions().GetIssues() != "" || tok.GetPermissions().GetContents() != "read" {
		t.Errorf("token answer: %d repositories, permissions %+v", len(tok.Repositories), tok.GetPermissions())
	}
	gh, err := github.NewClient(nil).WithAuthToken(tok.GetToken()).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() (*github.Response, error)
		want int
	}{
		{"read its repository", func() (*github.Response, error) { _, r, err := gh.Repositories.Get(ctx, owner, name); return r, err }, 200},
		{"another repository is invisible", func() (*github.Response, error) { _, r, err := gh.Repositories.Get(ctx, owner, "other"); return r, err }, 404},
		{"contents: read cannot create a ref", func() (*github.Response, error) {
			_, r, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/x"), Object: &github.GitObject{SHA: github.String(s.BranchSHA(owner, name, "main"))}})
			return r, err
		}, 403},
		{"no issues permission: no labels", func() (*github.Response, error) {
			_, r, err := gh.Issues.AddLabelsToIssue(ctx, owner, name, 1, []string{"x"})
			return r, err
		}, 403},
		{"pull_requests: write lists pulls", func() (*github.Response, error) {
			_, r, err := gh.PullRequests.List(ctx, owner, name, nil)
			return r, err
		}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := tt.call()
			if resp == nil || resp.StatusCode != tt.want {
				t.Fatalf("status %v (err %v), want %d", resp, err, tt.want)
			}
		})
	}
	auth := &githttp.BasicAuth{Username: "x-access-token", Password: tok.GetToken()}
	if _, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{URL: s.GitURL(owner, "other"), Auth: auth}); err == nil {
		t.Error("cloned a repository outside the token's selection")
	}
	repo, err := git.CloneContext(ctx, memory.NewStorage(), memfs.New(), &git.CloneOptions{URL: s.GitURL(owner, name), Auth: auth})
	if err != nil {
		t.Fatalf("clone with contents: read: %v", err)
	}
	if err := repo.PushContext(ctx, &git.PushOptions{Auth: auth, RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/copy"}}); err == nil {
		t.Error("pushed with contents: read")
	}

	// Asking for more than the installation has, or a repository it lacks: GitHub's 422.
	for _, opts := range []*github.InstallationTokenOptions{
		{Permissions: &github.InstallationPermissions{Administration: github.String("write")}},
		{Repositories: []string{"missing"}},
	} {
		if _, resp, err := app.Apps.CreateInstallationToken(ctx, 88, opts); err == nil || resp.StatusCode != 422 {
			t.Errorf("token request %+v: err %v, want 422", opts, err)
		}
	}
}

// TestUpdateBranchAndComments: update-branch merges the base into the head (202) and clears
// "behind"; issue comments are recorded on the pull request.
func TestUpdateBranchAndComments(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()
	s.SetRequireUpToDate(owner, name, true)
	if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/feature"), Object: &github.GitObject{SHA: github.String(s.BranchSHA(owner, name, "main"))}}); err != nil {
		t.Fatal(err)
	}
	head := s.PushBaseCommit(owner, name, "feature", "feature", map[string]string{"feature.yaml": "f: 1\n"})
	s.PushBaseCommit(owner, name, "main", "base moves on", map[string]string{"README.md": "# moved\n"})
	pr, _, err := gh.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String("f"), Head: github.String("feature"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	n := pr.GetNumber()
	state := func() string {
		for range 10 {
			p, _, err := gh.PullRequests.Get(ctx, owner, name, n)
			if err != nil {
				t.Fatal(err)
			}
			if p.GetMergeableState() != "unknown" {
				return p.GetMergeableState()
			}
		}
		return "unknown"
	}
	if st := state(); st != "behind" {
		t.Fatalf("mergeable_state = %q, want behind (feature lacks main's commits)", st)
	}
	if _, _, err := gh.PullRequests.UpdateBranch(ctx, owner, name, n, &github.PullRequestBranchUpdateOptions{ExpectedHeadSHA: github.String("0000000000000000000000000000000000000000")}); err == nil {
		t.Fatal("update-branch with a stale expected_head_sha succeeded")
	}
	_, _, err = gh.PullRequests.UpdateBranch(ctx, owner, name, n, &github.PullRequestBranchUpdateOptions{ExpectedHeadSHA: github.String(head)})
	var accepted *github.AcceptedError
	if !errors.As(err, &accepted) {
		t.Fatalf("update-branch: %v, want 202", err)
	}
	if st := state(); st != "clean" {
		t.Fatalf("mergeable_state after update-branch = %q, want clean", st)
	}
	snap, _ := s.PR(owner, name, n)
	if parents := s.CommitParents(owner, name, snap.HeadSHA); len(parents) != 2 || parents[0] != head || parents[1] != s.BranchSHA(owner, name, "main") {
		t.Errorf("updated head's parents %v, want [%s main]", parents, head)
	}
	if _, _, err := gh.Issues.CreateComment(ctx, owner, name, n, &github.IssueComment{Body: github.String("why")}); err != nil {
		t.Fatal(err)
	}
	if snap, _ := s.PR(owner, name, n); fmt.Sprint(snap.Comments) != "[why]" {
		t.Errorf("comments %q", snap.Comments)
	}
}

// TestMergedPRKeepsItsBase: a PR merged while another request follows branch moves keeps the
// base it was merged onto. The base moving to the merge commit itself made the merged PR's diff
// (base..merge) empty: `make demo` then said "the PR does not change" a file it had just
// deleted.
func TestMergedPRKeepsItsBase(t *testing.T) {
	s, gh := newServer(t)
	ctx := context.Background()
	const n = 12
	for i := 1; i <= n; i++ {
		branch := fmt.Sprintf("change-%d", i)
		s.PushBaseCommit(owner, name, "main", "base for "+branch, nil) // keeps main moving
		mainSHA := s.BranchSHA(owner, name, "main")
		c, _, err := gh.Git.GetCommit(ctx, owner, name, mainSHA)
		if err != nil {
			t.Fatal(err)
		}
		tree, _, err := gh.Git.CreateTree(ctx, owner, name, c.GetTree().GetSHA(), []*github.TreeEntry{{Path: github.String(branch + ".yaml"),
			Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("x: 1\n")}})
		if err != nil {
			t.Fatal(err)
		}
		commit, _, err := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String(branch), Tree: &github.Tree{SHA: tree.SHA},
			Parents: []*github.Commit{{SHA: c.SHA}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := gh.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String(branch), Head: github.String(branch), Base: github.String("main")}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() { // a reader following branch moves all the time, as the demo's polls do
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					s.PRs(owner, name)
				}
			}
		}()
	}
	for i := 1; i <= n; i++ {
		for {
			_, resp, err := gh.PullRequests.Merge(ctx, owner, name, i, "", &github.PullRequestOptions{MergeMethod: "squash"})
			if err == nil {
				break
			}
			if resp == nil || (resp.StatusCode != 405 && resp.StatusCode != 409) {
				close(stop)
				t.Fatalf("merging #%d: %v", i, err)
			}
			time.Sleep(10 * time.Millisecond) // mergeability still computing
		}
	}
	close(stop)
	wg.Wait()
	for i := 1; i <= n; i++ {
		p, _ := s.PR(owner, name, i)
		if ps := s.CommitParents(owner, name, p.MergeCommitSHA); !p.Merged || len(ps) != 1 || p.BaseSHA != ps[0] {
			t.Errorf("#%d: merged %v, base %s, merge commit %s with parents %v; want the base it was merged onto", i, p.Merged, p.BaseSHA, p.MergeCommitSHA, ps)
		}
	}
}
