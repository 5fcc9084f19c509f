package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// The inactivity detector's invariants, as the report and each violation name them.
const (
	invPauseUsed  = "no-pause-used"  // no pause merged of a lab used within its timeout before the merge
	invPauseViaPR = "paused-via-pr"  // a lab's replicas go to 0 only when a merged pause is synced
	labEarlySlack = 3 * time.Second  // Kustos may see a use's end up to a scrape and a step early
	labLateSlack  = 10 * time.Second // a use this young at the merge may lose the race honestly
)

// lab is what the checker knows of one lab environment the workload made.
type lab struct {
	ns, name string
	timeout  time.Duration
	// uses are the periods it was used, oldest first; to is zero while it still is. Its
	// creation and its resume count as uses of no length and from then on, as for Kustos.
	uses   []span
	keeps  []span // its owner's keeps through an alert's link: the POST, and the keep's end
	paused bool   // the GitOps tool applied replicas 0 from Git, and nothing since
	expect bool   // the GitOps tool is about to set replicas 0
}

type span struct{ from, to time.Time }

// labState is the checker's record of the labs and of Prometheus's faults.
type labState struct {
	labs   map[string]*lab // ns/name
	faults []span          // when Prometheus could not answer wholly; to zero while it lasts
}

func (c *Checker) labLocked(ns, name string) *lab {
	if c.lab.labs == nil {
		c.lab.labs = map[string]*lab{}
	}
	l := c.lab.labs[ns+"/"+name]
	if l == nil {
		l = &lab{ns: ns, name: name}
		c.lab.labs[ns+"/"+name] = l
	}
	return l
}

// LabCreated records a lab made at at, with its kustos.io/inactivity-timeout.
func (c *Checker) LabCreated(ns, name string, timeout time.Duration, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.labLocked(ns, name)
	l.timeout = timeout
	l.uses = append(l.uses, span{at, at})
}

// LabUsed records that the lab is used from at on (its activity counter rises).
func (c *Checker) LabUsed(ns, name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.labLocked(ns, name)
	if n := len(l.uses); n > 0 && l.uses[n-1].to.IsZero() {
		return
	}
	l.uses = append(l.uses, span{from: at})
}

// LabIdle records that the lab's use ended at at.
func (c *Checker) LabIdle(ns, name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.labLocked(ns, name)
	if n := len(l.uses); n > 0 && l.uses[n-1].to.IsZero() {
		l.uses[n-1].to = at
	}
}

// LabKept records that the lab's owner kept it through an alert's link, the POST sent at at,
// until until.
func (c *Checker) LabKept(ns, name string, at, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.labLocked(ns, name)
	l.keeps = append(l.keeps, span{at, until})
}

// LabIdleSince is when the lab's last use ended; ok is false while it is used.
func (c *Checker) LabIdleSince(ns, name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lab.labs[ns+"/"+name]
	if l == nil || len(l.uses) == 0 || l.uses[len(l.uses)-1].to.IsZero() {
		return time.Time{}, false
	}
	return l.uses[len(l.uses)-1].to, true
}

// LabSynced records the GitOps tool applying the lab's replicas from Git: paused (0) or
// running again (a resume its owner pushed). A resume counts as a use of no length.
func (c *Checker) LabSynced(ns, name string, paused bool, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.labLocked(ns, name)
	l.expect, l.paused = paused, paused
	if n := len(l.uses); !paused && (n == 0 || !l.uses[n-1].to.IsZero()) {
		l.uses = append(l.uses, span{at, at})
	}
}

// LabReplicas is a lab Deployment's spec.replicas as the API server's watch reports it, when
// it changed: 0 only after the GitOps tool applied a merged pause.
func (c *Checker) LabReplicas(ns, name string, replicas int32, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lab.labs[ns+"/"+name]
	if l == nil || replicas != 0 || l.expect {
		return
	}
	c.violateLocked(at, invPauseViaPR, "lab %s/%s was scaled to 0 replicas, but no merged pause PR was synced", ns, name)
}

// PromFault records a Prometheus fault (unreachable, or answering in part) from from; to is
// zero when it starts and set when it ends.
func (c *Checker) PromFault(kind string, from, to time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.lab.faults {
		if c.lab.faults[i].from.Equal(from) {
			c.lab.faults[i].to = to
			return
		}
	}
	c.lab.faults = append(c.lab.faults, span{from, to})
}

// coveredLocked: every moment of [from, to] fell in a Prometheus fault, so that no whole
// answer could have told Kustos of a use in it.
func (c *Checker) coveredLocked(from, to time.Time) bool {
	fs := append([]span(nil), c.lab.faults...)
	sort.Slice(fs, func(i, j int) bool { return fs[i].from.Before(fs[j].from) })
	at := from
	for _, f := range fs {
		if f.from.After(at) {
			break
		}
		if f.to.IsZero() {
			return true
		}
		if f.to.After(at) {
			at = f.to
		}
	}
	return !at.Before(to)
}

// inactivityBranch is the head branch of a lab's pause PR (--group-by=none).
func inactivityBranch(ns, name string) string {
	return "kustos/" + clusterName + "/inactivity/" + ns + "/" + name
}

// checkPauseLocked: no-pause-used. The lab's pause PR p was merged between the previous look
// and now. It must not have been used within its timeout before the merge (less
// labEarlySlack: Kustos sees the last scrape of a use, up to a scrape interval and a query step
// before its end), except by a use that began less than labLateSlack before the previous look
// (a scrape, a check, the query and the withdrawal racing a merge in flight); a use in a
// Prometheus fault counts too, since Kustos holds its merges while an answer is not whole and
// the first whole one shows the use. Nor merged while Prometheus could not answer in full from
// labLateSlack before the previous look until this one, which saw it merged (Kustos merges a
// pause only on a whole answer; a merge seen after a fault ended may have come after it).
func (c *Checker) checkPauseLocked(now time.Time, p githubtest.PullRequest) {
	for _, l := range c.lab.labs {
		if p.Head != inactivityBranch(l.ns, l.name) {
			continue
		}
		late := c.prevPoll.Add(-labLateSlack)
		for _, k := range l.keeps {
			if k.from.Before(late) && now.Before(k.to) {
				c.violateLocked(now, invPauseUsed, "PR #%d pausing lab %s/%s merged by %s, but its owner kept it at %s until %s",
					p.Number, l.ns, l.name, now.Format("15:04:05"), k.from.Format("15:04:05"), k.to.Format("15:04:05"))
				return
			}
		}
		for _, u := range l.uses {
			end := u.to
			if end.IsZero() {
				end = now
			}
			if !end.After(now.Add(-l.timeout+labEarlySlack)) || !u.from.Before(late) {
				continue
			}
			used := "until " + end.Format("15:04:05")
			if u.to.IsZero() {
				used = "and still is"
			}
			c.violateLocked(now, invPauseUsed, "PR #%d pausing lab %s/%s merged by %s, but the lab was used from %s %s (timeout %s)",
				p.Number, l.ns, l.name, now.Format("15:04:05"), u.from.Format("15:04:05"), used, l.timeout)
			return
		}
		if c.coveredLocked(late, now) {
			c.violateLocked(now, invPauseUsed, "PR #%d pausing lab %s/%s merged by %s, while Prometheus could not answer in full (from %s at least)",
				p.Number, l.ns, l.name, now.Format("15:04:05"), late.Format("15:04:05"))
			return
		}
	}
}

// labsDueLocked: the labs' liveness. A lab idle (not paused) for its timeout, one alert's
// interval and slack has a pause PR opened since its last use, unless the human closed or
// pushed onto its PR since; a lab used for slack has no pause PR still open that the human
// left alone.
func (c *Checker) labsDueLocked(now time.Time, slack time.Duration) []string {
	var due []string
	for _, l := range c.lab.labs {
		if c.nsGone[l.ns] || len(l.uses) == 0 {
			continue
		}
		branch := inactivityBranch(l.ns, l.name)
		last := l.uses[len(l.uses)-1]
		if last.to.IsZero() {
			for _, p := range c.prs {
				if p.Head != branch || p.State != "open" || c.humanTouchedLocked(branch, p.Created) {
					continue
				}
				if since := maxTime(last.from, p.Created); now.Sub(since) > slack {
					due = append(due, fmt.Sprintf("lab %s/%s used since %s: its pause PR #%d (opened %s) is still open",
						l.ns, l.name, last.from.Format("15:04:05"), p.Number, p.Created.Format("15:04:05")))
				}
			}
			continue
		}
		dueAt := last.to.Add(l.timeout)
		for _, k := range l.keeps {
			if k.from.After(last.to) {
				dueAt = maxTime(dueAt, k.to)
				for _, p := range c.prs {
					// A keep withdraws the pause proposed before it.
					if p.Head == branch && p.State == "open" && p.Created.Before(k.from) && now.Before(k.to) && now.Sub(k.from) > slack &&
						!c.humanTouchedLocked(branch, p.Created) {
						due = append(due, fmt.Sprintf("lab %s/%s kept at %s: its pause PR #%d (opened %s) is still open",
							l.ns, l.name, k.from.Format("15:04:05"), p.Number, p.Created.Format("15:04:05")))
					}
				}
			}
		}
		if l.paused || now.Before(dueAt.Add(notifyInterval+slack)) || c.humanTouchedLocked(branch, last.to) {
			continue
		}
		if !c.proposedLocked(func(head string) bool { return head == branch }, last.to) {
			due = append(due, fmt.Sprintf("lab %s/%s idle since %s (timeout %s): no pause PR", l.ns, l.name, last.to.Format("15:04:05"), l.timeout))
		}
	}
	return due
}
