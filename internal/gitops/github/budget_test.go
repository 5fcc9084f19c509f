package github

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// limitedServerClient returns a Client for acme/gitops and the GitHub-compatible server with
// GitHub's secondary limits, both on one fake clock (the client's sleeps move it), and the SHA
// of a commit one ahead of main that pull requests can be opened from.
func limitedServerClient(t *testing.T, opts ...Option) (*Client, *githubtest.Server, *fakeClock, string) {
	t.Helper()
	clk := newFakeClock()
	s := githubtest.New(t, githubtest.Options{Now: clk.Now})
	s.SeedRepo("acme", "gitops", "main", map[string]string{"quota.yaml": "cpu: 10\n"})
	c, err := NewClient(Config{APIURL: s.URL(), TokenFile: writeFile(t, "token", s.Token()), Repository: "acme/gitops"},
		append([]Option{WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, err := c.GetRef(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	base, err := c.GetCommit(ctx, ref.GetObject().GetSHA())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.CreateTree(ctx, base.GetTree().GetSHA(), []*gh.TreeEntry{{Path: gh.String("quota.yaml"), Mode: gh.String("100644"), Type: gh.String("blob"), Content: gh.String("cpu: 12\n")}})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := c.CreateCommit(ctx, "raise quota", tree.GetSHA(), []string{base.GetSHA()})
	if err != nil {
		t.Fatal(err)
	}
	return c, s, clk, cm.GetSHA()
}

// openPRs opens a pull request from each branch (two writes each: the branch, the PR).
func openPRs(t *testing.T, c *Client, sha string, branches ...string) {
	t.Helper()
	ctx := context.Background()
	for _, b := range branches {
		if _, err := c.CreateRef(ctx, b, sha); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.CreatePR(ctx, NewPR{Title: b, Body: "b", Head: b, Base: "main"}); err != nil {
			t.Fatal(err)
		}
	}
}

func branches(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// TestDefaultPacingMeetsNoSecondaryLimit: with its default pacing, the client makes over 300
// writes against a server enforcing GitHub's secondary limits without a single secondary-limit
// answer, on the shared fake clock.
func TestDefaultPacingMeetsNoSecondaryLimit(t *testing.T) {
	c, s, clk, sha := limitedServerClient(t)
	start := clk.Now()
	openPRs(t, c, sha, branches("kustos/expiry/team-%03d", 150)...)
	if got := s.CountRequests("POST", ""); got != 302 {
		t.Errorf("%d writes, want 302", got)
	}
	if got := s.SecondaryLimited(); got != 0 {
		t.Errorf("the paced client met %d secondary limits (%v), want 0", got, s.SecondaryLimitedBy())
	}
	t.Logf("302 writes took %v of the fake clock", clk.Now().Sub(start))
}

// TestUnpacedClientMeetsTheSecondaryLimit is the control: without pacing the same client
// meets the limit of 80 writes a minute, and obeys the answer (waits Retry-After) rather than
// failing.
func TestUnpacedClientMeetsTheSecondaryLimit(t *testing.T) {
	c, s, _, sha := limitedServerClient(t, WithWriteRate(0, 0), WithMutationInterval(0))
	openPRs(t, c, sha, branches("kustos/expiry/team-%03d", 50)...)
	if got := s.SecondaryLimitedBy()[githubtest.LimitContentPerMinute]; got == 0 {
		t.Errorf("an unpaced client met no secondary limit (%v): the server does not enforce it", s.SecondaryLimitedBy())
	}
	if got := len(s.PRs("acme", "gitops")); got != 50 {
		t.Errorf("%d pull requests, want all 50 after the waits", got)
	}
}

// TestListingKustosPullRequests: OpenPullRequests returns every open pull request whose head
// starts with the prefix over more than one page, oldest first; PullRequestsCreatedSince
// counts those created at or after a time in any state, reading no further back than needed.
func TestListingKustosPullRequests(t *testing.T) {
	c, s, _, sha := limitedServerClient(t, WithMutationInterval(0))
	ctx := context.Background()
	openPRs(t, c, sha, branches("kustos/quota/a-%03d", 120)...)
	openPRs(t, c, sha, "feature/one", "feature/two", "kustos-not-ours/x")
	openPRs(t, c, sha, branches("kustos/expiry/b-%03d", 30)...)
	for n := 1; n <= 10; n++ {
		s.ClosePR("acme", "gitops", n) // a person closed them: not open, still created
	}
	s.ClosePR("acme", "gitops", 125) // one of the later ones

	before := s.CountRequests("GET", "/repos/{owner}/{repo}/pulls")
	open, err := c.OpenPullRequests(ctx, "kustos/")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CountRequests("GET", "/repos/{owner}/{repo}/pulls") - before; got != 2 {
		t.Errorf("read %d pages, want 2 (142 open pull requests, 100 a page)", got)
	}
	want := []int{}
	for n := 11; n <= 120; n++ {
		want = append(want, n)
	}
	for n := 124; n <= 153; n++ {
		if n != 125 {
			want = append(want, n)
		}
	}
	if got := prNumbers(open); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("open = %v\nwant %v", got, want)
	}

	// Unchanged: the pages are answered from the ETag cache (304s).
	again, err := c.OpenPullRequests(ctx, "kustos/")
	if err != nil || len(again) != len(open) {
		t.Fatalf("again: %d, %v", len(again), err)
	}
	reqs := s.Requests()
	for _, r := range reqs[len(reqs)-2:] {
		if r.Path != "/repos/{owner}/{repo}/pulls" || r.Status != 304 {
			t.Errorf("unchanged list read as %s %s → %d, want 304", r.Method, r.URL, r.Status)
		}
	}

	first, _ := s.PR("acme", "gitops", 124) // the first kustos/expiry/ one
	tests := []struct {
		name      string
		prefix    string
		since     time.Time
		want      int
		wantPages int
	}{
		{"the last 30, one closed", "kustos/", first.Created, 30, 1},
		{"a moment later", "kustos/", first.Created.Add(time.Nanosecond), 29, 1},
		{"one prefix", "kustos/expiry/", time.Time{}, 30, 2},
		{"every one, over two pages", "kustos/", time.Time{}, 150, 2},
		{"the future", "kustos/", first.Created.Add(time.Hour), 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.CountRequests("GET", "/repos/{owner}/{repo}/pulls")
			n, err := c.PullRequestsCreatedSince(ctx, tt.prefix, tt.since)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.want {
				t.Errorf("PullRequestsCreatedSince(%q, %v) = %d, want %d", tt.prefix, tt.since, n, tt.want)
			}
			if got := s.CountRequests("GET", "/repos/{owner}/{repo}/pulls") - before; got != tt.wantPages {
				t.Errorf("read %d pages, want %d", got, tt.wantPages)
			}
		})
	}
}

// TestWriteBudgetIsARetryTime: a Client call the hourly write budget holds back is
// ErrRateLimited with the time to try again (the pipeline requeues until then), sent nowhere.
func TestWriteBudgetIsARetryTime(t *testing.T) {
	c, s, clk, sha := limitedServerClient(t, WithWriteRate(0, 4), WithMutationInterval(0))
	first := clk.Now() // the tree and the commit of limitedServerClient were written now
	ctx := context.Background()
	for _, b := range []string{"kustos/a", "kustos/b"} {
		if _, err := c.CreateRef(ctx, b, sha); err != nil {
			t.Fatal(err)
		}
	}
	writes := s.CountRequests("POST", "")
	_, err := c.CreateRef(ctx, "kustos/c", sha)
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("5th write: %v, want ErrRateLimited", err)
	}
	if at, ok := RetryAt(err); !ok || !at.Equal(first.Add(time.Hour)) {
		t.Errorf("RetryAt = %v, %v; want %v (an hour after the first write)", at, ok, first.Add(time.Hour))
	}
	if got := s.CountRequests("POST", ""); got != writes {
		t.Errorf("the held-back write reached GitHub")
	}
}
