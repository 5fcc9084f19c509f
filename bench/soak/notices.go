package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/notify"
)

// Invariant 4 and the extension links, as the report and each violation name them.
const (
	invNotice = "notice-once"    // (4) each warning delivered at most twice, as one notice, before its removal
	invReplay = "link-used-once" // a used extension link answers 409
)

// Mail is one message Mailpit received, as its API lists it.
type Mail struct {
	ID        string // Mailpit's own
	MessageID string
	To        string
	Subject   string
	Created   time.Time // when Mailpit received it
}

// warning is what the checker knows of one expiry warning: a preview's deadline.
type warning struct {
	key       string // ns/name
	deadline  time.Time
	msgIDs    []string  // distinct Message-IDs, in the order seen
	mails     []string  // Mailpit IDs
	delivered time.Time // the first delivery
}

// pendingMerge is a merged removal waiting for the mailbox to have been read after it.
type pendingMerge struct {
	number int
	key    string
	at     time.Time
	// deadline is the one in force at the merge: its own warning must have come first (zero:
	// none set long enough before; any warning of the preview's counts).
	deadline time.Time
}

// ownerOf is the owner address of preview name: one address a preview, so that each message
// holds one preview's notices however Kustos batches an owner's mail.
func ownerOf(name string) string { return "soak+" + name + "@example.com" }

// previewOfOwner is the preview name an owner address belongs to ("" for none).
func previewOfOwner(addr string) string {
	addr = strings.ToLower(strings.TrimSpace(addr))
	name, ok := strings.CutPrefix(addr, "soak+")
	if !ok {
		return ""
	}
	name, ok = strings.CutSuffix(name, "@example.com")
	if !ok {
		return ""
	}
	return name
}

// warningDeadline is the deadline an expiry warning's subject names ("Deployment p-001 expires
// at 2026-11-29T10:00:30Z"); ok is false for any other message (the removal's notice).
func warningDeadline(subject string) (time.Time, bool) {
	i := strings.LastIndex(subject, " expires at ")
	if i < 0 {
		return time.Time{}, false
	}
	d, err := time.Parse(time.RFC3339, strings.TrimSpace(subject[i+len(" expires at "):]))
	return d, err == nil
}

// warningMessageID is the Message-ID Kustos gives the warning about ns/name's deadline: one
// derived from the notice's id, the same at every attempt.
func warningMessageID(ns, name string, deadline time.Time) string {
	key := lifecycle.KeyFor("expiry", lifecycle.Target{Kind: "Deployment", Group: "apps", Namespace: ns, Name: name})
	return notify.MessageID("expiry-warning|" + string(key) + "|" + deadline.UTC().Format(time.RFC3339))
}

// isRemoval tells a preview's removal PR from the PR that writes an extension made through a
// link back into Git (same branch, an edit of the manifest): by what its body says it does.
func isRemoval(p githubtest.PullRequest) bool {
	return !strings.Contains(p.Body, "### What\n\nEdits ")
}

// ObserveMail checks the messages Mailpit holds, listed at now: invariant 4. Each expiry warning
// (a preview's deadline) arrives at most twice (a crash between the send and its record sends
// it again once), every time under the one Message-ID its notice id gives; and every removal
// merged before now had a warning delivered at least the notification interval (less the
// tolerance of Kustos's send: the batch window and the SMTP exchange) before the merge.
func (c *Checker) ObserveMail(now time.Time, ms []Mail) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range ms {
		if c.mailSeen[m.ID] {
			continue
		}
		c.mailSeen[m.ID] = true
		name := previewOfOwner(m.To)
		key := c.byName[name]
		d, ok := warningDeadline(m.Subject)
		if key == "" || !ok {
			continue
		}
		wk := key + "@" + d.UTC().Format(time.RFC3339)
		w := c.warnings[wk]
		if w == nil {
			w = &warning{key: key, deadline: d, delivered: m.Created}
			c.warnings[wk] = w
		}
		w.mails = append(w.mails, m.ID)
		if m.Created.Before(w.delivered) {
			w.delivered = m.Created
		}
		msgID := strings.Trim(strings.TrimSpace(m.MessageID), "<>")
		if !contains(w.msgIDs, msgID) {
			w.msgIDs = append(w.msgIDs, msgID)
		}
		// The first delivery names the notice; later ones must carry the same Message-ID.
		pv := c.previews[key]
		if want := warningMessageID(pv.ns, pv.name, d); len(w.mails) == 1 && msgID != want {
			c.violateLocked(now, invNotice, "the warning about %s's deadline %s carries Message-ID %s, not %s (its notice id's)",
				key, d.Format("15:04:05"), msgID, want)
		}
		if len(w.mails) > 2 {
			c.violateLocked(now, invNotice, "the warning about %s's deadline %s was delivered %d times", key, d.Format("15:04:05"), len(w.mails))
		}
		if len(w.msgIDs) > 1 {
			c.violateLocked(now, invNotice, "the warning about %s's deadline %s came under %d Message-IDs: %v", key, d.Format("15:04:05"), len(w.msgIDs), w.msgIDs)
		}
	}
	// A merge is judged once the mailbox was read after it, so a warning delivered just before
	// is not missed.
	var keep []pendingMerge
	for _, pm := range c.pending {
		if !pm.at.Before(now.Add(-time.Second)) {
			keep = append(keep, pm)
			continue
		}
		var first time.Time
		for _, w := range c.warnings {
			if w.key == pm.key && (pm.deadline.IsZero() || w.deadline.Equal(pm.deadline)) && (first.IsZero() || w.delivered.Before(first)) {
				first = w.delivered
			}
		}
		switch {
		case pm.deadline.After(pm.at.Add(time.Second)):
			// Merged before the deadline in force: no-merge-extended reports it.
		case first.IsZero() && !pm.deadline.IsZero():
			c.violateLocked(now, invNotice, "PR #%d removing %s merged by %s, but no warning was delivered about its deadline %s",
				pm.number, pm.key, pm.at.Format("15:04:05"), pm.deadline.Format("15:04:05"))
		case first.IsZero():
			c.violateLocked(now, invNotice, "PR #%d removing %s merged by %s, but no warning was delivered", pm.number, pm.key, pm.at.Format("15:04:05"))
		case pm.at.Sub(first) < c.notifyInterval-c.sendSlack:
			c.violateLocked(now, invNotice, "PR #%d removing %s merged by %s, %s after its warning was delivered (%s), less than the notification interval %s",
				pm.number, pm.key, pm.at.Format("15:04:05"), pm.at.Sub(first).Round(100*time.Millisecond), first.Format("15:04:05.000"), c.notifyInterval)
		}
	}
	c.pending = keep
}

// LinkReplayed records the answer to a POST of an extension link already used with success:
// anything but 409 is a violation.
func (c *Checker) LinkReplayed(ns, name string, status int, at time.Time) {
	if status == 409 {
		return
	}
	c.Violate(at, invReplay, "the used extension link of %s/%s answered %d to a second POST, not 409", ns, name, status)
}

// WarningMail is the Mailpit ID of a warning about ns/name's deadline d, once one arrived.
func (c *Checker) WarningMail(ns, name string, d time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.warnings[ns+"/"+name+"@"+d.UTC().Format(time.RFC3339)]
	if w == nil {
		return "", false
	}
	return w.mails[0], true
}

// CurrentDeadline is ns/name's last deadline.
func (c *Checker) CurrentDeadline(ns, name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pv := c.previews[ns+"/"+name]
	if pv == nil || len(pv.deadlines) == 0 {
		return time.Time{}, false
	}
	return pv.deadlines[len(pv.deadlines)-1].expiresAt, true
}

// unwarnedLocked are the previews whose last deadline passed more than slack ago without a
// warning about it delivered: liveness, whatever the mail server went through. A preview whose
// removal PR the human closed or pushed onto since that deadline was set is left out: Kustos
// leaves the PR alone and, once it is closed, the preview too, unwarned.
func (c *Checker) unwarnedLocked(now time.Time, slack time.Duration) []string {
	if !c.mailOn {
		return nil
	}
	var out []string
	for k, pv := range c.previews {
		if pv.gone || c.nsGone[pv.ns] || len(pv.deadlines) == 0 || !pv.optedOut.IsZero() {
			continue
		}
		last := pv.deadlines[len(pv.deadlines)-1]
		if now.Before(last.expiresAt.Add(slack)) || c.humanTouchedLocked(c.removalBranchLocked(pv.ns, pv.name), last.set) {
			continue
		}
		if c.warnings[k+"@"+last.expiresAt.UTC().Format(time.RFC3339)] == nil {
			out = append(out, fmt.Sprintf("preview %s due %s: no warning delivered about it", k, last.expiresAt.Format("15:04:05")))
		}
	}
	sort.Strings(out)
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
