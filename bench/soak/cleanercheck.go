package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// Invariants of the Cleaners, besides deleted-via-pr and liveness, which they extend.
const (
	invCleanerOnce = "cleaner-once" // a Cleaner's cleanup is proposed by one PR, never again after its merge
)

// ephClass is how a Cleaner's target may go.
type ephClass string

const (
	// ephGit: a manifest in Git defines it; it goes only through a merged PR (the GitOps tool
	// prunes it) or with its namespace.
	ephGit ephClass = "git"
	// ephDirect: only in the cluster, of a kind --allow lets Cleaners delete: Kustos deletes it
	// directly once its Cleaner falls due, never before.
	ephDirect ephClass = "direct"
	// ephRefused: only in the cluster, of a kind --allow does not name: it never goes but with
	// its namespace.
	ephRefused ephClass = "refused"
)

// ephObject is one target of a Cleaner the workload made.
type ephObject struct {
	kind, ns, name string
	class          ephClass
	cleaner        string // ns/name
	gone           bool
	goneAt         time.Time
}

// soakCleaner is what the checker knows of one Cleaner the workload made.
type soakCleaner struct {
	ns, name string
	created  time.Time // before the create request: its creationTimestamp is no earlier
	due      time.Time // created plus its TTL
	objects  []string  // ephKey of each target
	// From the Cleaners listed (ObserveCleaners): seen in a list, in the last one, and with a
	// due evaluation in its status.
	seen, present, dueInStatus bool
	blocked                    bool // the last list's ActionsDone: False, CleanupBlocked
}

// CleanerStatus is what ObserveCleaners reads of one Cleaner in the cluster.
type CleanerStatus struct {
	Namespace, Name string
	// Due: status.lastEvaluation says the cleanup is due (recorded before anything is acted on).
	Due bool
	// Blocked: ActionsDone is False with reason CleanupBlocked (a target decided on stays).
	Blocked bool
}

// cleanerState is the checker's record of the Cleaners (under Checker.mu).
type cleanerState struct {
	cleaners map[string]*soakCleaner // ns/name
	objects  map[string]*ephObject   // ephKey
}

func ephKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// cleanerBranch is the head branch of a Cleaner's one PR (grouped by Cleaner whatever
// --group-by says).
func cleanerBranch(ns, name string) string {
	return "kustos/" + clusterName + "/ephemeral/group-cleaner/" + ns + "/" + name
}

func (c *Checker) cleanersLocked() *cleanerState {
	if c.cl.cleaners == nil {
		c.cl = cleanerState{cleaners: map[string]*soakCleaner{}, objects: map[string]*ephObject{}}
	}
	return &c.cl
}

// CleanerTarget records, before the object is created, that kind ns/name is a target of the
// Cleaner ns/cleaner, to go as class says.
func (c *Checker) CleanerTarget(kind, ns, name, cleaner string, class ephClass) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cleanersLocked()
	k := ephKey(kind, ns, name)
	s.objects[k] = &ephObject{kind: kind, ns: ns, name: name, class: class, cleaner: ns + "/" + cleaner}
}

// Cleaner records, before it is created at created, the Cleaner ns/name with its ttl and its
// targets (recorded with CleanerTarget).
func (c *Checker) Cleaner(ns, name string, created time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cleanersLocked()
	cl := &soakCleaner{ns: ns, name: name, created: created, due: created.Add(ttl)}
	for k, o := range s.objects {
		if o.cleaner == ns+"/"+name {
			cl.objects = append(cl.objects, k)
		}
	}
	sort.Strings(cl.objects)
	s.cleaners[ns+"/"+name] = cl
}

// DeletedObject is a Cleaner target's deletion as the API server's watch reports it: the
// Cleaners' part of deleted-via-pr. An object Git defines goes only after the GitOps tool saw
// its manifest removed by a merged PR (ExpectDeleteObject); one only in the cluster of an
// allowed kind, only once its Cleaner fell due; one of a kind --allow does not name, never;
// each with its namespace, always.
func (c *Checker) DeletedObject(kind, ns, name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cleanersLocked()
	k := ephKey(kind, ns, name)
	o := s.objects[k]
	if o != nil && !o.gone {
		o.gone, o.goneAt = true, at
	}
	if c.nsGone[ns] || c.expectDel[k] {
		return
	}
	if o == nil {
		c.violateLocked(at, invDeleted, "%s %s/%s was deleted, which no Cleaner of the workload names", kind, ns, name)
		return
	}
	switch o.class {
	case ephGit:
		c.violateLocked(at, invDeleted, "%s %s/%s (defined in Git, target of Cleaner %s) was deleted without a merged PR removing its manifest",
			kind, ns, name, o.cleaner)
	case ephRefused:
		c.violateLocked(at, invDeleted, "%s %s/%s (target of Cleaner %s) was deleted, although --allow does not let Cleaners delete %s",
			kind, ns, name, o.cleaner, kind)
	case ephDirect:
		// A second of slack: creationTimestamp has whole seconds.
		if cl := s.cleaners[o.cleaner]; cl == nil || at.Before(cl.due.Add(-time.Second)) {
			due := "never"
			if cl != nil {
				due = cl.due.Format("15:04:05")
			}
			c.violateLocked(at, invDeleted, "%s %s/%s (target of Cleaner %s) was deleted at %s, before its Cleaner fell due (%s)",
				kind, ns, name, o.cleaner, at.Format("15:04:05"), due)
		}
	}
}

// ExpectDeleteObject records that the soak itself deletes kind ns/name: the GitOps tool
// prunes what a merged PR removed from Git.
func (c *Checker) ExpectDeleteObject(kind, ns, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expectDel[ephKey(kind, ns, name)] = true
}

// ObserveCleaners records the Cleaners listed in the cluster at now (every one there): for
// liveness, a Cleaner due reports it in its status, and one whose cleanup is done goes.
func (c *Checker) ObserveCleaners(now time.Time, list []CleanerStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cleanersLocked()
	for _, cl := range s.cleaners {
		cl.present = false
	}
	for _, st := range list {
		cl := s.cleaners[st.Namespace+"/"+st.Name]
		if cl == nil {
			continue
		}
		cl.seen, cl.present, cl.blocked = true, true, st.Blocked
		cl.dueInStatus = cl.dueInStatus || st.Due
	}
}

// checkCleanerPRsLocked: cleaner-once. A Cleaner's PR opened after another of its PRs was
// merged would propose its cleanup a second time.
func (c *Checker) checkCleanerPRsLocked(now time.Time, prs []githubtest.PullRequest) {
	s := c.cleanersLocked()
	for _, cl := range s.cleaners {
		b := cleanerBranch(cl.ns, cl.name)
		var merged []int
		for _, p := range prs {
			if p.Head == b && p.Merged {
				merged = append(merged, p.Number)
			}
		}
		for _, p := range prs {
			if p.Head != b {
				continue
			}
			for _, m := range merged {
				if p.Number > m {
					c.violateLocked(now, invCleanerOnce, "PR #%d for Cleaner %s/%s opened after its PR #%d was merged", p.Number, cl.ns, cl.name, m)
				}
			}
		}
	}
}

// cleanersDueLocked: the Cleaners' part of liveness. A Cleaner due for longer than slack
// (its namespace still there) has proposed the removal of what Git defines of its targets (a
// PR for it opened since it was created, whatever became of it: the human may have closed it)
// and deleted what it may delete directly.
func (c *Checker) cleanersDueLocked(now time.Time, slack time.Duration) []string {
	s := c.cleanersLocked()
	var due []string
	for _, cl := range s.cleaners {
		if c.nsGone[cl.ns] || now.Before(cl.due.Add(slack)) {
			continue
		}
		var inGit, left []string
		refused := false
		var lastGone time.Time
		for _, k := range cl.objects {
			o := s.objects[k]
			if o.class == ephRefused {
				refused = true
			}
			switch {
			case o.gone:
				lastGone = maxTime(lastGone, o.goneAt)
			case o.class == ephGit:
				inGit = append(inGit, o.name)
			case o.class == ephDirect:
				left = append(left, o.name)
			}
		}
		b := cleanerBranch(cl.ns, cl.name)
		if len(inGit) > 0 && !c.proposedLocked(func(head string) bool { return head == b }, cl.created) {
			due = append(due, fmt.Sprintf("Cleaner %s/%s due %s: no PR removing %v", cl.ns, cl.name, cl.due.Format("15:04:05"), inGit))
		}
		if len(left) > 0 {
			due = append(due, fmt.Sprintf("Cleaner %s/%s due %s: %v not deleted", cl.ns, cl.name, cl.due.Format("15:04:05"), left))
		}
		if !cl.seen {
			continue // not listed yet: nothing known of its status
		}
		// Its PR closed unmerged (the human declined it) with a target Git defines still there:
		// the cleanup cannot finish, and the Cleaner says so.
		if cl.present && len(inGit) > 0 && !cl.blocked {
			if n, ok := c.declinedLocked(b); ok {
				due = append(due, fmt.Sprintf("Cleaner %s/%s: its PR #%d was closed unmerged, its status does not say CleanupBlocked", cl.ns, cl.name, n))
			}
		}
		if cl.present && !cl.dueInStatus {
			due = append(due, fmt.Sprintf("Cleaner %s/%s due %s: its status has no due evaluation", cl.ns, cl.name, cl.due.Format("15:04:05")))
		}
		// Every target gone (none of a kind it may not delete): the Cleaner goes too.
		if cl.present && !refused && len(inGit) == 0 && len(left) == 0 && !now.Before(lastGone.Add(slack)) {
			due = append(due, fmt.Sprintf("Cleaner %s/%s: every target gone by %s, the Cleaner still there", cl.ns, cl.name, lastGone.Format("15:04:05")))
		}
	}
	return due
}

// declinedLocked: the last PR of branch was closed unmerged; n is its number.
func (c *Checker) declinedLocked(branch string) (n int, ok bool) {
	for num, p := range c.prs {
		if p.Head == branch && num > n {
			n = num
		}
	}
	if n == 0 {
		return 0, false
	}
	p := c.prs[n]
	return n, p.State == "closed" && !p.Merged
}

// CleanerCounts are, for the report, the Cleaners made and their targets by class.
func (c *Checker) CleanerCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cleanersLocked()
	out := map[string]int{"cleaners": len(s.cleaners)}
	for _, o := range s.objects {
		out["targets "+string(o.class)]++
		if o.gone {
			out["targets "+string(o.class)+" gone"]++
		}
	}
	return out
}
