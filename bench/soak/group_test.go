package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// tree is a commit graph with files, for ReadRemovals: commit → its first parent and the
// previews ("ns/name") whose manifests it holds.
type tree map[string]struct {
	parent   string
	previews []string
}

func (tr tree) fileAt(sha, path string) bool {
	for _, k := range tr[sha].previews {
		ns, name, _ := strings.Cut(k, "/")
		if previewPath(ns, name) == path {
			return true
		}
	}
	return false
}

func (tr tree) firstParent(sha string) (string, bool) {
	c, ok := tr[sha]
	return c.parent, ok && c.parent != ""
}

func groupPR(n int, state string, merged bool, head, merge string, created time.Time) githubtest.PullRequest {
	return githubtest.PullRequest{Number: n, Head: expiryGroupBranch("t-001"), State: state, Merged: merged, HeadSHA: head, MergeCommitSHA: merge, Created: created}
}

// TestCheckerGrouped: with expiry grouped by namespace, one PR removes a tenant's previews, and
// the checker reads which from the commits: the merge commit against its first parent for
// invariant 2, the head of the open PR for liveness.
func TestCheckerGrouped(t *testing.T) {
	// base holds p-001..p-003; head1 removes p-001 and p-002; head2 (a rebuild after p-002's
	// extension) removes p-001 only; merge1/merge2 merge head1/head2 into base.
	tr := tree{
		"base":   {previews: []string{"t-001/p-001", "t-001/p-002", "t-001/p-003"}},
		"head1":  {parent: "base", previews: []string{"t-001/p-003"}},
		"head2":  {parent: "base", previews: []string{"t-001/p-002", "t-001/p-003"}},
		"merge1": {parent: "base", previews: []string{"t-001/p-003"}},
		"merge2": {parent: "base", previews: []string{"t-001/p-002", "t-001/p-003"}},
	}
	deadlines := func(c *Checker) {
		c.Deadline("t-001", "p-001", at(30), at(0))
		c.Deadline("t-001", "p-002", at(30), at(0))
		c.Deadline("t-001", "p-003", at(300), at(0))
	}
	for _, h := range []history{
		{name: "the group's PR merged, removing the two previews due", feed: func(c *Checker) {
			deadlines(c)
			c.ObservePRs(at(31), []githubtest.PullRequest{groupPR(1, "open", false, "head1", "", at(31))}, nil)
			c.ObservePRs(at(40), []githubtest.PullRequest{groupPR(1, "closed", true, "head1", "merge1", at(31))}, nil)
		}},
		{name: "a preview extended, then merged away in the group's PR", want: invExtended, detail: "removing t-001/p-002", feed: func(c *Checker) {
			deadlines(c)
			c.ObservePRs(at(31), []githubtest.PullRequest{groupPR(1, "open", false, "head1", "", at(31))}, nil)
			c.Deadline("t-001", "p-002", at(200), at(32))
			c.ObservePRs(at(40), []githubtest.PullRequest{groupPR(1, "open", false, "head1", "", at(31))}, nil)
			c.ObservePRs(at(50), []githubtest.PullRequest{groupPR(1, "closed", true, "head1", "merge1", at(31))}, nil)
		}},
		{name: "a preview extended and taken out of the group's PR before its merge", feed: func(c *Checker) {
			deadlines(c)
			c.ObservePRs(at(31), []githubtest.PullRequest{groupPR(1, "open", false, "head1", "", at(31))}, nil)
			c.Deadline("t-001", "p-002", at(200), at(32))
			c.ObservePRs(at(40), []githubtest.PullRequest{groupPR(1, "open", false, "head2", "", at(31))}, nil)
			c.ObservePRs(at(50), []githubtest.PullRequest{groupPR(1, "closed", true, "head2", "merge2", at(31))}, nil)
		}},
	} {
		t.Run(h.name, func(t *testing.T) {
			c := NewChecker(1, 5*time.Second, func(a, b string) bool { return a == b }, func(string, ...any) {})
			c.ReadRemovals("namespace", tr.fileAt, tr.firstParent)
			h.feed(c)
			h.check(t, c)
		})
	}
}

// TestDueGrouped: a preview past its deadline is proposed when the open PR of its tenant's
// group lacks its manifest, whenever that PR opened; not when the open PR leaves it in; a
// person's close of the group's PR since the deadline was set declines it.
func TestDueGrouped(t *testing.T) {
	tr := tree{
		"base":  {previews: []string{"t-001/p-001", "t-001/p-002"}},
		"head1": {parent: "base", previews: []string{"t-001/p-002"}},
	}
	for _, c := range []struct {
		name string
		feed func(c *Checker)
		want []string
	}{
		{"in the open PR, which opened before the deadline was set", func(c *Checker) {
			c.ObservePRs(at(5), []githubtest.PullRequest{groupPR(1, "open", false, "head1", "", at(5))}, nil)
			c.Deadline("t-001", "p-001", at(30), at(10))
		}, nil},
		{"left in by the open PR", func(c *Checker) {
			c.Deadline("t-001", "p-002", at(30), at(10))
			c.ObservePRs(at(31), []githubtest.PullRequest{groupPR(1, "open", false, "head1", "", at(31))}, nil)
		}, []string{"preview t-001/p-002 due"}},
		{"no PR", func(c *Checker) { c.Deadline("t-001", "p-001", at(30), at(10)) }, []string{"preview t-001/p-001 due"}},
		{"opted out: never due", func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(10))
			c.OptOut("t-001", "p-001", at(20))
		}, nil},
		{"the group's PR closed by a person since", func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(10))
			c.ObservePRs(at(31), []githubtest.PullRequest{groupPR(1, "open", false, "head1", "", at(31))}, nil)
			c.HumanClosed(expiryGroupBranch("t-001"), at(35))
			c.ObservePRs(at(36), []githubtest.PullRequest{groupPR(1, "closed", false, "head1", "", at(31))}, nil)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := NewChecker(1, 5*time.Second, func(a, b string) bool { return a == b }, func(string, ...any) {})
			ch.ReadRemovals("namespace", tr.fileAt, tr.firstParent)
			c.feed(ch)
			due := ch.Due(at(100), 15*time.Second, nil)
			if len(due) != len(c.want) {
				t.Fatalf("due %q; want %q", due, c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(due[i], w) {
					t.Errorf("due %q; want %q", due[i], w)
				}
			}
		})
	}
}
