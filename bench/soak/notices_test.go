package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// TestCheckerNotices: invariant 4 and the extension links, a recorded history a case, a broken
// one for each rule.
func TestCheckerNotices(t *testing.T) {
	branch := expiryBranch("t-001", "p-001")
	to := ownerOf("p-001")
	subject := "Deployment p-001 expires at " + at(30).Format(time.RFC3339)
	id := warningMessageID("t-001", "p-001", at(30))
	warn := func(mailID, msgID string, s int) Mail {
		return Mail{ID: mailID, MessageID: msgID, To: to, Subject: subject, Created: at(s)}
	}
	merged := func(c *Checker, s int, body string) {
		p := pr(1, branch, "open", false, at(25))
		p.Body = body
		c.ObservePRs(at(s-1), []githubtest.PullRequest{p}, nil)
		p.State, p.Merged = "closed", true
		c.ObservePRs(at(s), []githubtest.PullRequest{p}, nil)
	}
	for _, h := range []history{
		{name: "warned, then removed after the interval", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(21), []Mail{warn("m1", id, 20)})
			merged(c, 31, "### What\n\nDeletes `x`")
			c.ObserveMail(at(33), []Mail{warn("m1", id, 20), {ID: "m2", MessageID: "other", To: to, Subject: "Deployment p-001 expired and was removed", Created: at(32)}})
		}},
		{name: "a warning sent again after a crash, as the same notice", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(21), []Mail{warn("m1", id, 20), warn("m2", "<"+id+">", 21)})
		}},
		{name: "a warning delivered three times", want: invNotice, detail: "delivered 3 times", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(21), []Mail{warn("m1", id, 20), warn("m2", id, 21)})
			c.ObserveMail(at(23), []Mail{warn("m1", id, 20), warn("m2", id, 21), warn("m3", id, 22)})
		}},
		{name: "a warning under two Message-IDs", want: invNotice, detail: "came under 2 Message-IDs", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(22), []Mail{warn("m1", id, 20), warn("m2", "e2@kustos", 21)})
		}},
		{name: "a Message-ID not its notice id's", want: invNotice, detail: "carries Message-ID x@kustos", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(22), []Mail{warn("m1", "x@kustos", 20)})
		}},
		{name: "removed less than the interval after the warning", want: invNotice, detail: "less than the notification interval", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(29), []Mail{warn("m1", id, 29)})
			merged(c, 31, "")
			c.ObserveMail(at(33), nil)
		}},
		{name: "removed after an extension, warned only about the old deadline", want: invNotice, detail: "no warning was delivered about its deadline 10:01:00", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(21), []Mail{warn("m1", id, 20)})
			c.Deadline("t-001", "p-001", at(60), at(22))
			merged(c, 61, "")
			c.ObserveMail(at(63), nil)
		}},
		{name: "removed with no warning delivered", want: invNotice, detail: "no warning was delivered", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			merged(c, 31, "")
			c.ObserveMail(at(31), nil) // the mailbox read with the merge: not judged yet
			if len(c.Violations()) > 0 {
				t.Errorf("judged before the mailbox was read after the merge: %+v", c.Violations())
			}
			c.ObserveMail(at(33), nil)
		}},
		{name: "an extension written back is no removal", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(21), []Mail{warn("m1", id, 20)})
			c.Deadline("t-001", "p-001", at(90), at(22)) // through a link
			merged(c, 40, "### What\n\nEdits `x`")
			c.ObserveMail(at(42), nil)
		}},
		{name: "removal merged after a link's extension", want: invExtended, detail: "PR #1 removing t-001/p-001", feed: func(c *Checker) {
			c.Deadline("t-001", "p-001", at(30), at(0))
			c.ObserveMail(at(21), []Mail{warn("m1", id, 20)})
			c.Deadline("t-001", "p-001", at(90), at(26)) // through a link, the removal PR open
			merged(c, 40, "### What\n\nDeletes `x`")
			c.ObserveMail(at(42), nil)
		}},
		{name: "a used link refused", feed: func(c *Checker) { c.LinkReplayed("t-001", "p-001", 409, at(1)) }},
		{name: "a used link honoured again", want: invReplay, detail: "answered 200 to a second POST", feed: func(c *Checker) {
			c.LinkReplayed("t-001", "p-001", 200, at(1))
		}},
	} {
		t.Run(h.name, func(t *testing.T) {
			c := NewChecker(42, 5*time.Second, parents{}.isAncestor, func(string, ...any) {})
			c.WatchMail(5*time.Second, 2*time.Second)
			h.feed(c)
			h.check(t, c)
		})
	}
}

func TestCheckerUnwarned(t *testing.T) {
	c := NewChecker(42, 5*time.Second, parents{}.isAncestor, func(string, ...any) {})
	c.WatchMail(5*time.Second, 2*time.Second)
	c.Deadline("t-001", "p-001", at(30), at(0))
	c.Deadline("t-001", "p-002", at(30), at(0))
	c.ObserveMail(at(21), []Mail{{ID: "m1", MessageID: warningMessageID("t-001", "p-001", at(30)), To: ownerOf("p-001"),
		Subject: "Deployment p-001 expires at " + at(30).Format(time.RFC3339), Created: at(20)}})
	c.ObservePRs(at(36), []githubtest.PullRequest{
		pr(1, expiryBranch("t-001", "p-001"), "open", false, at(35)),
		pr(2, expiryBranch("t-001", "p-002"), "open", false, at(35)),
	}, nil)
	want := "preview t-001/p-002 due 10:00:30: no warning delivered about it"
	if got := c.Due(at(100), 60*time.Second, nil); strings.Join(got, "\n") != want {
		t.Errorf("due: %q, want %q", got, want)
	}
	// Extended while its removal PR is open; the human pushes onto that PR, then closes it:
	// Kustos leaves the PR, and then the preview, alone.
	c.Deadline("t-001", "p-002", at(80), at(50))
	c.HumanPushed(expiryBranch("t-001", "p-002"), "h", at(60))
	for _, d := range c.Due(at(150), 60*time.Second, nil) {
		if strings.Contains(d, "no warning") {
			t.Errorf("due after the human took the PR: %q, want no warning due", d)
		}
	}
}
