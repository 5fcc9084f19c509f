package main

import (
	"io"
	"strings"
	"testing"
	"time"

	prw "github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// history is a recorded run fed to the checker, one step a second.
type history struct {
	name string
	feed func(c *Checker)
	want string // the invariant that must be reported; "" for none
	// detail must be in the violation's text.
	detail string
}

// check asserts what h wants of the violations c found: none, or exactly one of h.want
// whose detail holds h.detail.
func (h history) check(t *testing.T, c *Checker) {
	t.Helper()
	vs := c.Violations()
	if h.want == "" {
		if len(vs) > 0 {
			t.Fatalf("violations %+v, want none", vs)
		}
		return
	}
	if len(vs) != 1 || vs[0].Invariant != h.want || !strings.Contains(vs[0].Detail, h.detail) {
		t.Fatalf("violations %+v, want one %s with %q", vs, h.want, h.detail)
	}
}

func pr(n int, head, state string, merged bool, created time.Time) githubtest.PullRequest {
	return githubtest.PullRequest{Number: n, Head: head, State: state, Merged: merged, Created: created}
}

// parents is a commit graph for isAncestor: commit → parents.
type parents map[string][]string

func (p parents) isAncestor(a, b string) bool {
	if a == b {
		return true
	}
	for _, q := range p[b] {
		if p.isAncestor(a, q) {
			return true
		}
	}
	return false
}

func TestChecker(t *testing.T) {
	branch := expiryBranch("t-001", "p-001")
	cb := cleanerBranch("t-001", "c-001")
	graph := parents{"kustos1": {"base"}, "human1": {"kustos1"}, "human2": {"human1"}, "kustos2": {"human1"}, "rebuilt": {"base"}}
	for _, h := range []history{
		{name: "quiet run", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObservePRs(at(31), []githubtest.PullRequest{pr(1, branch, "open", false, at(31))}, nil)
			c.ObservePRs(at(40), []githubtest.PullRequest{pr(1, branch, "closed", true, at(31))}, nil)
			c.ExpectDelete("t-001", "p-001")
			c.Deleted("t-001", "p-001", at(42))
		}},
		{name: "two open PRs for one key", want: invOnePR, detail: "2 open PRs for " + branch + ": [3 4]", feed: func(c *Checker) {
			c.ObservePRs(at(1), []githubtest.PullRequest{pr(4, branch, "open", false, at(1)), pr(3, branch, "open", false, at(0))}, nil)
		}},
		{name: "a deletion no merged PR explains", want: invDeleted, detail: "t-001/p-001 was deleted", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.Deleted("t-001", "p-001", at(31))
		}},
		{name: "deletion with the namespace", feed: func(c *Checker) {
			c.ExpectNamespaceGone("t-001")
			c.Deleted("t-001", "web", at(31))
		}},
		{name: "removal merged after an extension", want: invExtended, detail: "PR #1 removing t-001/p-001", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObservePRs(at(31), []githubtest.PullRequest{pr(1, branch, "open", false, at(31))}, nil)
			c.Deadline("t-001", "p-001", at(90), at(32))
			c.ObservePRs(at(45), []githubtest.PullRequest{pr(1, branch, "open", false, at(31))}, nil)
			c.ObservePRs(at(46), []githubtest.PullRequest{pr(1, branch, "closed", true, at(31))}, nil)
		}},
		{name: "an extension racing the merge, inside the grace", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObservePRs(at(40), []githubtest.PullRequest{pr(1, branch, "open", false, at(31))}, nil)
			c.Deadline("t-001", "p-001", at(90), at(38))
			c.ObservePRs(at(41), []githubtest.PullRequest{pr(1, branch, "closed", true, at(31))}, nil)
		}},
		{name: "removal merged after an opt-out", want: invExtended, detail: "opted out of expiry at 10:00:32", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObservePRs(at(31), []githubtest.PullRequest{pr(1, branch, "open", false, at(31))}, nil)
			c.OptOut("t-001", "p-001", at(32))
			c.ObservePRs(at(45), []githubtest.PullRequest{pr(1, branch, "open", false, at(31))}, nil)
			c.ObservePRs(at(46), []githubtest.PullRequest{pr(1, branch, "closed", true, at(31))}, nil)
		}},
		{name: "an opt-out racing the merge, inside the grace", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObservePRs(at(40), []githubtest.PullRequest{pr(1, branch, "open", false, at(31))}, nil)
			c.OptOut("t-001", "p-001", at(38))
			c.ObservePRs(at(41), []githubtest.PullRequest{pr(1, branch, "closed", true, at(31))}, nil)
		}},
		{name: "a human's commit kept under Kustos's", feed: func(c *Checker) {
			c.HumanPushed(branch, "human1", at(10))
			c.ObservePRs(at(11), nil, map[string]string{branch: "human1"})
			c.ObservePRs(at(12), nil, map[string]string{branch: "kustos2"})
			c.ObservePRs(at(13), nil, map[string]string{branch: ""})
		}},
		{name: "a human's commit kept aside before the branch is reused", feed: func(c *Checker) {
			c.HumanPushed(branch, "human1", at(10))
			c.HumanPushed(branch, "human2", at(11))
			c.ObservePRs(at(12), nil, map[string]string{branch: "human2"})
			c.ObservePRs(at(13), nil, map[string]string{branch: "rebuilt", prw.KeptBranch(branch, "human2"): "human2"})
		}},
		{name: "a human's commit force-pushed over", want: invForeign, detail: "the human's commit human1 on " + branch, feed: func(c *Checker) {
			c.HumanPushed(branch, "human1", at(10))
			c.ObservePRs(at(11), nil, map[string]string{branch: "human1"})
			c.ObservePRs(at(12), nil, map[string]string{branch: "rebuilt"})
		}},
		{name: "a Cleaner's cleanup as it goes", feed: func(c *Checker) {
			cleanerHistory(c)
			c.DeletedObject("ConfigMap", "t-001", "c-001-scratch", at(31))
			c.ObservePRs(at(32), []githubtest.PullRequest{pr(1, cb, "open", false, at(32))}, nil)
			c.ObservePRs(at(40), []githubtest.PullRequest{pr(1, cb, "closed", true, at(32))}, nil)
			c.ExpectDeleteObject("ConfigMap", "t-001", "c-001-git")
			c.DeletedObject("ConfigMap", "t-001", "c-001-git", at(42))
			c.ExpectNamespaceGone("t-001")
			c.DeletedObject("Secret", "t-001", "c-001-keep", at(50))
		}},
		{name: "a Cleaner's target defined in Git deleted directly", want: invDeleted, detail: "c-001-git (defined in Git", feed: func(c *Checker) {
			cleanerHistory(c)
			c.DeletedObject("ConfigMap", "t-001", "c-001-git", at(31))
		}},
		{name: "a Cleaner's target of a kind not allowed deleted", want: invDeleted, detail: "--allow does not let Cleaners delete Secret", feed: func(c *Checker) {
			cleanerHistory(c)
			c.DeletedObject("Secret", "t-001", "c-001-keep", at(31))
		}},
		{name: "a Cleaner's target deleted before the Cleaner fell due", want: invDeleted, detail: "before its Cleaner fell due (10:00:30)", feed: func(c *Checker) {
			cleanerHistory(c)
			c.DeletedObject("ConfigMap", "t-001", "c-001-scratch", at(20))
		}},
		{name: "a Cleaner's cleanup proposed again after its merge", want: invCleanerOnce, detail: "PR #2 for Cleaner t-001/c-001 opened after its PR #1", feed: func(c *Checker) {
			cleanerHistory(c)
			c.ObservePRs(at(40), []githubtest.PullRequest{pr(1, cb, "closed", true, at(32))}, nil)
			c.ObservePRs(at(50), []githubtest.PullRequest{pr(1, cb, "closed", true, at(32)), pr(2, cb, "open", false, at(49))}, nil)
		}},
	} {
		t.Run(h.name, func(t *testing.T) {
			c := NewChecker(42, 5*time.Second, graph.isAncestor, func(string, ...any) {})
			h.feed(c)
			h.check(t, c)
		})
	}
}

func TestCheckerLiveness(t *testing.T) {
	c := NewChecker(42, 5*time.Second, parents{}.isAncestor, func(string, ...any) {})
	c.Deadline("t-001", "p-001", at(30), at(0))
	c.Deadline("t-001", "p-002", at(30), at(0))
	c.Deadline("t-001", "p-003", at(30), at(0))
	c.Deadline("t-001", "p-003", at(60), at(40)) // extended after its first PR
	over := map[string]time.Time{"t-002": at(0), "t-003": at(0)}
	c.ObservePRs(at(45), []githubtest.PullRequest{
		pr(1, expiryBranch("t-001", "p-001"), "open", false, at(35)),
		pr(2, expiryBranch("t-001", "p-003"), "closed", false, at(35)),
		pr(3, quotaBranchPrefix("t-002")+"compute", "closed", true, at(20)),
		pr(4, "kustos/soak/quota/t-0030/compute", "open", false, at(20)),
	}, nil)
	want := []string{
		"preview t-001/p-002 due 10:00:30 (deadline set 10:00:00): no removal PR",
		"preview t-001/p-003 due 10:01:00 (deadline set 10:00:40): no removal PR",
		"tenant t-003 over quota since 10:00:00: no quota PR",
	}
	if got := c.Due(at(130), 60*time.Second, over); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("due:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// p-003 not yet due: the slack after its new deadline has not passed.
	if got := c.Due(at(95), 60*time.Second, map[string]time.Time{}); len(got) != 1 {
		t.Errorf("due at 95s: %q, want only p-002", got)
	}
	c.HumanPushed(expiryBranch("t-001", "p-001"), "h", at(50))
	if got := c.Stalled(at(130), 60*time.Second); len(got) != 1 || !strings.HasPrefix(got[0], "#4 ") {
		t.Errorf("stalled %q, want #4 only (#1 carries a human's commit)", got)
	}
}

func TestParseFlags(t *testing.T) {
	k := t.TempDir() + "/kustos"
	if err := writeExecutable(k); err != nil {
		t.Fatal(err)
	}
	t.Setenv(breakEnv, "")
	o, err := parseFlags([]string{"-kustos", k, "-seed", "7"}, io.Discard)
	// 15 minutes of workload: 140 actions 6.4 s apart, within GitHub's hourly content limit.
	if err != nil || o.duration != 20*time.Minute || o.settle != 5*time.Minute || o.seed != 7 || o.replicas != 2 || o.tick != 9600*time.Millisecond {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	if o, err := parseFlags([]string{"-kustos", k, "-duration", "3m"}, io.Discard); err != nil || o.settle != 90*time.Second || o.seed == 0 || o.tick != 3*time.Second {
		t.Errorf("-duration 3m: settle %s, seed %d, %v", o.settle, o.seed, err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-kustos", k, "-duration", "30s"}, "", "-duration must be at least 1m"},
		{[]string{"-kustos", k, "-duration", "2m", "-settle", "2m"}, "", "-settle"},
		{[]string{"-kustos", k, "-replicas", "0"}, "", "-replicas"},
		{[]string{"-kustos", k}, "everything", breakEnv},
	} {
		t.Setenv(breakEnv, tc.env)
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %s: %v, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// cleanerHistory: the Cleaner t-001/c-001, due 30 s after its creation, over a ConfigMap Git
// defines, one only in the cluster and a Secret (a kind --allow does not name).
func cleanerHistory(c *Checker) {
	c.CleanerTarget("ConfigMap", "t-001", "c-001-git", "c-001", ephGit)
	c.CleanerTarget("ConfigMap", "t-001", "c-001-scratch", "c-001", ephDirect)
	c.CleanerTarget("Secret", "t-001", "c-001-keep", "c-001", ephRefused)
	c.Cleaner("t-001", "c-001", at(0), 30*time.Second)
}

func TestCheckerCleanerLiveness(t *testing.T) {
	c := NewChecker(42, 5*time.Second, parents{}.isAncestor, func(string, ...any) {})
	cleanerHistory(c)
	// t-001/c-002: its PR was opened and closed by the human; its cluster-only target is gone.
	c.CleanerTarget("ConfigMap", "t-001", "c-002-git", "c-002", ephGit)
	c.CleanerTarget("ConfigMap", "t-001", "c-002-scratch", "c-002", ephDirect)
	c.Cleaner("t-001", "c-002", at(0), 30*time.Second)
	c.DeletedObject("ConfigMap", "t-001", "c-002-scratch", at(31))
	c.ObservePRs(at(40), []githubtest.PullRequest{pr(1, cleanerBranch("t-001", "c-002"), "closed", false, at(33))}, nil)
	want := []string{
		"Cleaner t-001/c-001 due 10:00:30: [c-001-scratch] not deleted",
		"Cleaner t-001/c-001 due 10:00:30: no PR removing [c-001-git]",
	}
	if got := c.Due(at(100), 60*time.Second, nil); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("due:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := c.Due(at(80), 60*time.Second, nil); len(got) != 0 {
		t.Errorf("due within the slack: %q, want nothing", got)
	}
	// The Cleaners' statuses: c-001 never recorded its due evaluation; c-002 did, and, its
	// Git-defined target left by the human's close, stays rightly, but must say it is blocked.
	// t-001/c-003's only target went at 31 s, but the Cleaner stays.
	c.CleanerTarget("ConfigMap", "t-001", "c-003-scratch", "c-003", ephDirect)
	c.Cleaner("t-001", "c-003", at(0), 30*time.Second)
	c.DeletedObject("ConfigMap", "t-001", "c-003-scratch", at(31))
	c.ObserveCleaners(at(99), []CleanerStatus{{"t-001", "c-001", false, false}, {"t-001", "c-002", true, false}, {"t-001", "c-003", true, false}})
	want = []string{
		"Cleaner t-001/c-001 due 10:00:30: [c-001-scratch] not deleted",
		"Cleaner t-001/c-001 due 10:00:30: its status has no due evaluation",
		"Cleaner t-001/c-001 due 10:00:30: no PR removing [c-001-git]",
		"Cleaner t-001/c-002: its PR #1 was closed unmerged, its status does not say CleanupBlocked",
		"Cleaner t-001/c-003: every target gone by 10:00:31, the Cleaner still there",
	}
	if got := c.Due(at(100), 60*time.Second, nil); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("due with the statuses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c.ObserveCleaners(at(100), []CleanerStatus{{"t-001", "c-001", true, false}, {"t-001", "c-002", true, true}})
	if got := c.Due(at(100), 60*time.Second, nil); len(got) != 2 {
		t.Errorf("due once c-001 reported its evaluation, c-002 its block and c-003 went: %q, want c-001's targets only", got)
	}
	c.ExpectNamespaceGone("t-001")
	if got := c.Due(at(100), 60*time.Second, nil); len(got) != 0 {
		t.Errorf("due with the namespace gone: %q, want nothing", got)
	}
	if got := c.Violations(); len(got) != 0 {
		t.Errorf("violations %+v, want none", got)
	}
}
