package github

import (
	"context"
	"errors"
	"reflect"
	"testing"

	gh "github.com/google/go-github/v60/github"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// serverClient returns a token-file Client for acme/gitops on the GitHub-compatible server,
// seeded with quota.yaml and other.yaml on main.
func serverClient(t *testing.T) (*Client, *githubtest.Server) {
	t.Helper()
	s := githubtest.New(t, githubtest.Options{})
	s.SeedRepo("acme", "gitops", "main", map[string]string{"quota.yaml": "cpu: 10\n", "other.yaml": "x: 1\n"})
	c, err := NewClient(Config{APIURL: s.URL(), TokenFile: writeFile(t, "token", s.Token()), Repository: "acme/gitops"},
		WithMutationInterval(0), WithClock(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// proposeBranch commits quota.yaml = content on a new branch from main and opens a PR.
func proposeBranch(t *testing.T, c *Client, branch, content string) *gh.PullRequest {
	t.Helper()
	ctx := context.Background()
	ref, err := c.GetRef(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	base := ref.GetObject().GetSHA()
	cm, err := c.GetCommit(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.CreateTree(ctx, cm.GetTree().GetSHA(), []*gh.TreeEntry{{Path: gh.String("quota.yaml"), Mode: gh.String("100644"), Type: gh.String("blob"), Content: gh.String(content)}})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := c.CreateCommit(ctx, "raise quota", tree.GetSHA(), []string{base})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateRef(ctx, branch, nc.GetSHA()); err != nil && !errors.Is(err, ErrAlreadyExists) {
		t.Fatal(err)
	} else if err != nil {
		if _, err := c.UpdateRef(ctx, branch, nc.GetSHA(), true); err != nil {
			t.Fatal(err)
		}
	}
	pr, _, err := c.CreatePR(ctx, NewPR{Title: "raise " + branch, Body: "b", Head: branch, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// settledPR reads a pull request until GitHub has computed its mergeability.
func settledPR(t *testing.T, c *Client, n int) *gh.PullRequest {
	t.Helper()
	for range 20 {
		pr, _, err := c.GetPR(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if pr.GetMergeableState() != "unknown" && pr.GetMergeableState() != "" {
			return pr
		}
	}
	t.Fatalf("pull request #%d: mergeability never computed", n)
	return nil
}

func prNumbers(prs []*gh.PullRequest) []int {
	out := []int{}
	for _, p := range prs {
		out = append(out, p.GetNumber())
	}
	return out
}

// TestFindPRs: the closed PRs of a branch, newest first, so a caller learns that a person
// closed the branch's PR.
func TestFindPRs(t *testing.T) {
	c, s := serverClient(t)
	ctx := context.Background()
	first := proposeBranch(t, c, "kustos/quota/a/compute", "cpu: 12\n")
	proposeBranch(t, c, "kustos/quota/b/compute", "cpu: 14\n")
	if prs, err := c.FindPRs(ctx, "kustos/quota/a/compute", "closed"); err != nil || len(prs) != 0 {
		t.Fatalf("closed before any close: %v, %v", prNumbers(prs), err)
	}
	s.ClosePR("acme", "gitops", first.GetNumber()) // a person closes it
	again := proposeBranch(t, c, "kustos/quota/a/compute", "cpu: 13\n")
	tests := []struct {
		head, state string
		want        []int
	}{
		{"kustos/quota/a/compute", "closed", []int{first.GetNumber()}},
		{"kustos/quota/a/compute", "open", []int{again.GetNumber()}},
		{"kustos/quota/a/compute", "all", []int{again.GetNumber(), first.GetNumber()}},
		{"kustos/quota/b/compute", "closed", []int{}},
		{"kustos/quota/none", "all", []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.head+" "+tt.state, func(t *testing.T) {
			prs, err := c.FindPRs(ctx, tt.head, tt.state)
			if err != nil || !reflect.DeepEqual(prNumbers(prs), tt.want) {
				t.Fatalf("FindPRs = %v, %v; want %v", prNumbers(prs), err, tt.want)
			}
			for _, p := range prs {
				if p.GetState() == "closed" && (p.GetMerged() || p.MergedAt != nil || p.ClosedAt == nil) {
					t.Errorf("#%d: merged=%v merged_at=%v closed_at=%v, want closed unmerged", p.GetNumber(), p.GetMerged(), p.MergedAt, p.ClosedAt)
				}
			}
		})
	}
	if _, err := c.FindPRs(ctx, "x", "merged"); !errors.Is(err, ErrValidation) {
		t.Errorf("state merged: err = %v, want ErrValidation", err)
	}
}

// TestUpdateBranch: under "require branches to be up to date", a PR whose base moved is
// "behind" and not merged; UpdateBranch merges the base into it (pinned to the head it
// expects), after which it merges.
func TestUpdateBranch(t *testing.T) {
	c, s := serverClient(t)
	ctx := context.Background()
	s.SetRequireUpToDate("acme", "gitops", true)
	pr := proposeBranch(t, c, "kustos/quota/a/compute", "cpu: 12\n")
	n := pr.GetNumber()
	if st := settledPR(t, c, n).GetMergeableState(); st != "clean" {
		t.Fatalf("mergeable_state before the base moved = %q, want clean", st)
	}
	base := s.PushBaseCommit("acme", "gitops", "main", "unrelated", map[string]string{"other.yaml": "x: 2\n"})
	cur := settledPR(t, c, n)
	if cur.GetMergeableState() != "behind" {
		t.Fatalf("mergeable_state after the base moved = %q, want behind", cur.GetMergeableState())
	}
	oldHead := cur.GetHead().GetSHA()
	if _, err := c.MergePR(ctx, n, oldHead, true, "t", "m"); !errors.Is(err, ErrNotMergeable) {
		t.Fatalf("merging a behind PR: err = %v, want ErrNotMergeable", err)
	}
	if err := c.UpdateBranch(ctx, n, "0000000000000000000000000000000000000000"); !errors.Is(err, ErrConflict) {
		t.Fatalf("UpdateBranch with a stale head: err = %v, want ErrConflict", err)
	}
	if err := c.UpdateBranch(ctx, n, oldHead); err != nil {
		t.Fatal(err)
	}
	cur = settledPR(t, c, n)
	newHead := cur.GetHead().GetSHA()
	if newHead == oldHead || cur.GetMergeableState() != "clean" {
		t.Fatalf("after UpdateBranch: head %s (was %s), mergeable_state %q; want a new head, clean", newHead, oldHead, cur.GetMergeableState())
	}
	if got := s.CommitParents("acme", "gitops", newHead); !reflect.DeepEqual(got, []string{oldHead, base}) {
		t.Errorf("parents of the updated head = %v, want [head base] = [%s %s]", got, oldHead, base)
	}
	if err := c.UpdateBranch(ctx, n, newHead); err != nil {
		t.Errorf("UpdateBranch of an up-to-date PR: %v, want nil", err)
	}
	if _, err := c.MergePR(ctx, n, newHead, true, "t", "m"); err != nil {
		t.Fatalf("merge after UpdateBranch: %v", err)
	}

	// A base change to the same line cannot be merged into the head: rebuild instead.
	pr2 := proposeBranch(t, c, "kustos/quota/b/compute", "cpu: 20\n")
	s.PushBaseCommit("acme", "gitops", "main", "conflicting", map[string]string{"quota.yaml": "cpu: 30\n"})
	head2 := settledPR(t, c, pr2.GetNumber()).GetHead().GetSHA()
	if err := c.UpdateBranch(ctx, pr2.GetNumber(), head2); !errors.Is(err, ErrNotMergeable) {
		t.Errorf("UpdateBranch with a conflict: err = %v, want ErrNotMergeable", err)
	}
}

// TestClosePRWithComment: ClosePR says why, closes, and does nothing the second time.
func TestClosePRWithComment(t *testing.T) {
	c, s := serverClient(t)
	ctx := context.Background()
	n := proposeBranch(t, c, "kustos/quota/gone/compute", "cpu: 12\n").GetNumber()
	const why = `Kustos closes this pull request because namespace "gone" no longer exists.`
	for range 2 {
		if err := c.ClosePR(ctx, n, why); err != nil {
			t.Fatal(err)
		}
	}
	pr, _ := s.PR("acme", "gitops", n)
	if pr.State != "closed" || pr.Merged || !reflect.DeepEqual(pr.Comments, []string{why}) {
		t.Fatalf("after ClosePR twice: state %s merged %v comments %q; want closed, unmerged, one comment", pr.State, pr.Merged, pr.Comments)
	}
	if err := c.ClosePR(ctx, 999, why); !errors.Is(err, ErrNotFound) {
		t.Errorf("ClosePR of a missing PR: err = %v, want ErrNotFound", err)
	}
}
