package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// TestCheckerLabs feeds the checker recorded lab histories: the inactivity detector's
// invariants, a broken history for each, and the honest races they allow.
func TestCheckerLabs(t *testing.T) {
	branch := inactivityBranch("lab-a", "vm-001")
	created := func(c *Checker) { c.LabCreated("lab-a", "vm-001", 15*time.Second, at(0)) }
	// merge observes the pause PR open at open, then merged at the look at merged (the look
	// before it a second earlier).
	merge := func(c *Checker, open, merged int) {
		c.ObservePRs(at(open), []githubtest.PullRequest{pr(1, branch, "open", false, at(open))}, nil)
		c.ObservePRs(at(merged-1), []githubtest.PullRequest{pr(1, branch, "open", false, at(open))}, nil)
		c.ObservePRs(at(merged), []githubtest.PullRequest{pr(1, branch, "closed", true, at(open))}, nil)
	}
	for _, h := range []history{
		{name: "idle lab paused through its merged PR", feed: func(c *Checker) {
			created(c)
			c.LabUsed("lab-a", "vm-001", at(1))
			c.LabIdle("lab-a", "vm-001", at(10))
			merge(c, 31, 40)
			c.LabSynced("lab-a", "vm-001", true, at(41))
			c.LabReplicas("lab-a", "vm-001", 0, at(41))
		}},
		{name: "pause merged while the lab was in use", want: invPauseUsed, detail: "PR #1 pausing lab lab-a/vm-001 merged by 10:00:40, but the lab was used from 10:00:20 and still is", feed: func(c *Checker) {
			created(c)
			c.LabUsed("lab-a", "vm-001", at(20))
			merge(c, 16, 40)
		}},
		{name: "pause merged less than the timeout after a use ended", want: invPauseUsed, detail: "used from 10:00:05 until 10:00:30", feed: func(c *Checker) {
			created(c)
			c.LabUsed("lab-a", "vm-001", at(5))
			c.LabIdle("lab-a", "vm-001", at(30))
			merge(c, 35, 40)
		}},
		{name: "pause merged within the timeout of the lab's creation", want: invPauseUsed, detail: "used from 10:00:00 until 10:00:00 (timeout 1m0s)", feed: func(c *Checker) {
			c.LabCreated("lab-a", "vm-001", time.Minute, at(0))
			merge(c, 20, 30)
		}},
		{name: "a use racing the merge, inside the late slack", feed: func(c *Checker) {
			created(c)
			c.LabUsed("lab-a", "vm-001", at(34))
			merge(c, 31, 40)
		}},
		{name: "a use ending within the scrape slack of the timeout", feed: func(c *Checker) {
			created(c)
			c.LabUsed("lab-a", "vm-001", at(5))
			c.LabIdle("lab-a", "vm-001", at(27))
			merge(c, 35, 40)
		}},
		{name: "a use in a Prometheus outage, the pause merged in it", want: invPauseUsed, detail: "used from 10:00:26", feed: func(c *Checker) {
			created(c)
			c.PromFault(faultPromDown, at(25), time.Time{})
			c.LabUsed("lab-a", "vm-001", at(26))
			merge(c, 24, 45)
			c.PromFault(faultPromDown, at(25), at(46))
		}},
		{name: "a pause merged in a Prometheus outage", want: invPauseUsed, detail: "while Prometheus could not answer in full", feed: func(c *Checker) {
			created(c)
			c.LabIdle("lab-a", "vm-001", at(1))
			c.PromFault(faultPromDown, at(70), time.Time{})
			merge(c, 65, 90)
			c.PromFault(faultPromDown, at(70), at(95))
		}},
		{name: "a pause merged as an outage ended (seen merged after its end)", feed: func(c *Checker) {
			created(c)
			c.LabIdle("lab-a", "vm-001", at(1))
			c.PromFault(faultPromPartial, at(60), time.Time{})
			c.PromFault(faultPromPartial, at(60), at(89))
			merge(c, 65, 90)
		}},
		{name: "a pause merged as an outage began, inside the late slack", feed: func(c *Checker) {
			created(c)
			c.LabIdle("lab-a", "vm-001", at(1))
			c.PromFault(faultPromDown, at(85), time.Time{})
			merge(c, 65, 90)
			c.PromFault(faultPromDown, at(85), at(95))
		}},
		{name: "a use hidden by a partial answer (taken for idleness)", want: invPauseUsed, feed: func(c *Checker) {
			created(c)
			c.LabUsed("lab-a", "vm-001", at(5))
			c.PromFault(faultPromPartial, at(10), at(40))
			merge(c, 30, 40)
		}},
		{name: "pause merged while its owner kept the lab", want: invPauseUsed, detail: "but its owner kept it at 10:00:25 until 10:01:10", feed: func(c *Checker) {
			created(c)
			c.LabKept("lab-a", "vm-001", at(25), at(70))
			merge(c, 22, 45)
		}},
		{name: "a keep racing the merge, inside the late slack", feed: func(c *Checker) {
			created(c)
			c.LabKept("lab-a", "vm-001", at(38), at(83))
			merge(c, 22, 45)
		}},
		{name: "paused after the keep ended", feed: func(c *Checker) {
			created(c)
			c.LabKept("lab-a", "vm-001", at(25), at(70))
			merge(c, 72, 80)
		}},
		{name: "replicas to 0 without a merged pause", want: invPauseViaPR, detail: "lab lab-a/vm-001 was scaled to 0 replicas", feed: func(c *Checker) {
			created(c)
			c.LabReplicas("lab-a", "vm-001", 0, at(30))
		}},
		{name: "resumed and paused again through Git", feed: func(c *Checker) {
			created(c)
			c.LabSynced("lab-a", "vm-001", true, at(30))
			c.LabReplicas("lab-a", "vm-001", 0, at(30))
			c.LabUsed("lab-a", "vm-001", at(40))
			c.LabSynced("lab-a", "vm-001", false, at(41))
			c.LabReplicas("lab-a", "vm-001", 1, at(41))
			c.LabSynced("lab-a", "vm-001", true, at(90))
			c.LabReplicas("lab-a", "vm-001", 0, at(90))
		}},
	} {
		t.Run(h.name, func(t *testing.T) {
			c := NewChecker(42, 5*time.Second, parents{}.isAncestor, func(string, ...any) {})
			h.feed(c)
			h.check(t, c)
		})
	}
}

// TestCheckerLabsDue: the labs' liveness. An idle lab gets a pause PR; a lab used again has
// its pause PR withdrawn; one whose PR the human closed is left alone.
func TestCheckerLabsDue(t *testing.T) {
	for _, tc := range []struct {
		name string
		feed func(c *Checker)
		now  int
		want string // "" for nothing due
	}{
		{name: "idle, no pause PR", now: 100, want: "lab lab-a/vm-001 idle since 10:00:10 (timeout 15s): no pause PR", feed: func(c *Checker) {
			c.LabUsed("lab-a", "vm-001", at(1))
			c.LabIdle("lab-a", "vm-001", at(10))
		}},
		{name: "idle, not for long enough yet", now: 40, feed: func(c *Checker) {
			c.LabUsed("lab-a", "vm-001", at(1))
			c.LabIdle("lab-a", "vm-001", at(10))
		}},
		{name: "idle, pause PR opened", now: 100, feed: func(c *Checker) {
			c.LabUsed("lab-a", "vm-001", at(1))
			c.LabIdle("lab-a", "vm-001", at(10))
			c.ObservePRs(at(31), []githubtest.PullRequest{pr(1, inactivityBranch("lab-a", "vm-001"), "open", false, at(31))}, nil)
		}},
		{name: "idle, its pause PR opened before its last use", now: 100, want: "no pause PR", feed: func(c *Checker) {
			c.ObservePRs(at(3), []githubtest.PullRequest{pr(1, inactivityBranch("lab-a", "vm-001"), "open", false, at(3))}, nil)
			c.LabUsed("lab-a", "vm-001", at(5))
			c.ObservePRs(at(9), []githubtest.PullRequest{pr(1, inactivityBranch("lab-a", "vm-001"), "closed", false, at(3))}, nil)
			c.LabIdle("lab-a", "vm-001", at(10))
		}},
		{name: "idle, the human closed its pause PR", now: 100, feed: func(c *Checker) {
			c.LabUsed("lab-a", "vm-001", at(1))
			c.LabIdle("lab-a", "vm-001", at(10))
			c.ObservePRs(at(31), []githubtest.PullRequest{pr(1, inactivityBranch("lab-a", "vm-001"), "closed", false, at(31))}, nil)
			c.HumanClosed(inactivityBranch("lab-a", "vm-001"), at(32))
		}},
		{name: "kept: not due before the keep ends", now: 100, feed: func(c *Checker) {
			c.LabUsed("lab-a", "vm-001", at(1))
			c.LabIdle("lab-a", "vm-001", at(10))
			c.LabKept("lab-a", "vm-001", at(30), at(75))
		}},
		{name: "kept, then idle past the keep with no pause PR", now: 150, want: "lab lab-a/vm-001 idle since 10:00:10 (timeout 15s): no pause PR", feed: func(c *Checker) {
			c.LabUsed("lab-a", "vm-001", at(1))
			c.LabIdle("lab-a", "vm-001", at(10))
			c.LabKept("lab-a", "vm-001", at(30), at(75))
		}},
		{name: "kept, its pause PR left open", now: 100, want: "lab lab-a/vm-001 kept at 10:00:32: its pause PR #1 (opened 10:00:31) is still open", feed: func(c *Checker) {
			c.LabUsed("lab-a", "vm-001", at(1))
			c.LabIdle("lab-a", "vm-001", at(10))
			c.ObservePRs(at(31), []githubtest.PullRequest{pr(1, inactivityBranch("lab-a", "vm-001"), "open", false, at(31))}, nil)
			c.LabKept("lab-a", "vm-001", at(32), at(200))
		}},
		{name: "paused", now: 100, feed: func(c *Checker) {
			c.LabCreated("lab-a", "vm-001", 15*time.Second, at(0))
			c.LabSynced("lab-a", "vm-001", true, at(30))
		}},
		{name: "used again, its pause PR left open", now: 100, want: "lab lab-a/vm-001 used since 10:00:35: its pause PR #1 (opened 10:00:31) is still open", feed: func(c *Checker) {
			c.LabCreated("lab-a", "vm-001", 15*time.Second, at(0))
			c.ObservePRs(at(31), []githubtest.PullRequest{pr(1, inactivityBranch("lab-a", "vm-001"), "open", false, at(31))}, nil)
			c.LabUsed("lab-a", "vm-001", at(35))
		}},
		{name: "used again, its pause PR withdrawn", now: 100, feed: func(c *Checker) {
			c.LabCreated("lab-a", "vm-001", 15*time.Second, at(0))
			c.ObservePRs(at(31), []githubtest.PullRequest{pr(1, inactivityBranch("lab-a", "vm-001"), "open", false, at(31))}, nil)
			c.LabUsed("lab-a", "vm-001", at(35))
			c.ObservePRs(at(40), []githubtest.PullRequest{pr(1, inactivityBranch("lab-a", "vm-001"), "closed", false, at(31))}, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewChecker(42, 5*time.Second, parents{}.isAncestor, func(string, ...any) {})
			c.LabCreated("lab-a", "vm-001", 15*time.Second, at(0))
			tc.feed(c)
			got := strings.Join(c.Due(at(tc.now), 60*time.Second, nil), "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("due %q, want %q", got, tc.want)
			}
		})
	}
}
