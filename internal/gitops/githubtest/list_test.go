package githubtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
)

// TestListPullsOrderAndPages: the pull request list sorts by created (the default) or updated,
// in GitHub's default direction for each (created: newest first; updated: oldest first), and
// answers a page that is not the last with a Link header that go-github follows.
func TestListPullsOrderAndPages(t *testing.T) {
	clk := &manualClock{now: time.Unix(1_800_000_000, 0)}
	s := New(t, Options{Now: clk.Now})
	s.SeedRepo(owner, name, "main", map[string]string{"a.yaml": "a: 1\n"})
	gh, err := github.NewClient(nil).WithAuthToken(s.Token()).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, _, err := gh.Git.GetRef(ctx, owner, name, "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := gh.Git.GetCommit(ctx, owner, name, ref.GetObject().GetSHA())
	if err != nil {
		t.Fatal(err)
	}
	open := func(i int, content string) {
		tree, _, err := gh.Git.CreateTree(ctx, owner, name, base.GetTree().GetSHA(), []*github.TreeEntry{
			{Path: github.String("a.yaml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String(content)}})
		if err != nil {
			t.Fatal(err)
		}
		cm, _, err := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("c"), Tree: tree, Parents: []*github.Commit{{SHA: base.SHA}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := fmt.Sprintf("b%d", i)
		if _, _, err := gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/" + b), Object: &github.GitObject{SHA: cm.SHA}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := gh.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String(b), Head: github.String(b), Base: github.String("main")}); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Minute)
	}
	for i := 1; i <= 3; i++ {
		open(i, fmt.Sprintf("a: %d\n", i+1))
	}
	// #1 is updated last: its head moves.
	tree, _, _ := gh.Git.CreateTree(ctx, owner, name, base.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("a.yaml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("a: 9\n")}})
	cm, _, _ := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("again"), Tree: tree, Parents: []*github.Commit{{SHA: base.SHA}}}, nil)
	if _, _, err := gh.Git.UpdateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/b1"), Object: &github.GitObject{SHA: cm.SHA}}, true); err != nil {
		t.Fatal(err)
	}

	list := func(o *github.PullRequestListOptions) ([]int, *github.Response) {
		t.Helper()
		prs, resp, err := gh.PullRequests.List(ctx, owner, name, o)
		if err != nil {
			t.Fatal(err)
		}
		var ns []int
		for _, p := range prs {
			ns = append(ns, p.GetNumber())
		}
		return ns, resp
	}
	tests := []struct {
		opts      github.PullRequestListOptions
		want      string
		next, pre int
	}{
		{github.PullRequestListOptions{}, "[3 2 1]", 0, 0},
		{github.PullRequestListOptions{Sort: "created", Direction: "asc"}, "[1 2 3]", 0, 0},
		{github.PullRequestListOptions{Sort: "updated"}, "[2 3 1]", 0, 0},
		{github.PullRequestListOptions{Sort: "updated", Direction: "desc"}, "[1 3 2]", 0, 0},
		{github.PullRequestListOptions{ListOptions: github.ListOptions{PerPage: 2}}, "[3 2]", 2, 0},
		{github.PullRequestListOptions{ListOptions: github.ListOptions{PerPage: 2, Page: 2}}, "[1]", 0, 1},
		{github.PullRequestListOptions{Sort: "created", Direction: "asc", State: "all", ListOptions: github.ListOptions{PerPage: 1, Page: 2}}, "[2]", 3, 1},
	}
	for _, tt := range tests {
		got, resp := list(&tt.opts)
		if fmt.Sprint(got) != tt.want || resp.NextPage != tt.next || resp.PrevPage != tt.pre {
			t.Errorf("%+v: %v next %d prev %d, want %s next %d prev %d", tt.opts, got, resp.NextPage, resp.PrevPage, tt.want, tt.next, tt.pre)
		}
	}
	// The Link keeps the query: the next page of an ascending list is ascending too.
	_, resp := list(&github.PullRequestListOptions{Direction: "asc", ListOptions: github.ListOptions{PerPage: 1}})
	if link := resp.Header.Get("Link"); !strings.Contains(link, "direction=asc") || !strings.Contains(link, `rel="last"`) {
		t.Errorf("Link %q", link)
	}
}
