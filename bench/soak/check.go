package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	prw "github.com/kustos-dev/kustos/internal/actuate/pr"
	"github.com/kustos-dev/kustos/internal/gitops/githubtest"
)

// Invariants, as the report and each violation name them.
const (
	invOnePR     = "one-open-pr"         // (1) never two open PRs for one branch key
	invExtended  = "no-merge-extended"   // (2) no removal merged of a preview that was extended
	invDeleted   = "deleted-via-pr"      // (3) nothing deleted except through a merged Kustos PR
	invLiveness  = "liveness"            // (5) every due action proposed or done after the faults
	invForeign   = "foreign-commit-kept" // (6) no commit of someone else's on a PR branch overwritten
	invHeap      = "heap-flat"           // (7) heap after GC flat over a replica's life
	invContract  = "github-contract"     // the GitHub-compatible server's own checks
	invExitEarly = "replica-exited"      // a replica exited without being killed
)

// Violation is one broken invariant, seen at At.
type Violation struct {
	At        time.Time
	Invariant string
	Detail    string
}

// preview is what the checker knows of one expiring Deployment the workload made.
type preview struct {
	ns, name string
	// deadlines are the kustos.io/expires-at values the preview had, each with when it was set
	// (in Git and the cluster), oldest first.
	deadlines []deadline
	gone      bool
	// optedOut is when the preview was opted out of expiry (zero: never): from then on it
	// must never be removed.
	optedOut time.Time
}

type deadline struct {
	set, expiresAt time.Time
}

// humanCommit is a commit the fake human pushed onto a Kustos PR's branch.
type humanCommit struct {
	branch, sha string
	at          time.Time
	resolved    bool // the branch was merged or deleted: nothing left to overwrite
}

// Checker holds what the run observed and checks the invariants against it. The run feeds it
// from outside Kustos: the GitHub-compatible server's pull requests and branches, the API
// server's watch of Deployments, and the workload's own actions. It does no I/O itself, so a
// recorded history can be fed to it in a unit test.
type Checker struct {
	seed uint64
	// grace is how long before a merge an extension must have been made to count against it:
	// Kustos sees the cluster through its informers and re-checks an open PR every
	// --pr-poll-interval, so an extension made in that window may lose the race honestly.
	grace time.Duration
	// isAncestor reports whether commit a is reachable from commit b.
	isAncestor func(a, b string) bool
	logf       func(format string, a ...any)

	mu         sync.Mutex
	prevPoll   time.Time
	prs        map[int]githubtest.PullRequest // the last snapshot of each PR
	merged     map[int]time.Time              // when each PR was first seen merged
	closed     map[int]time.Time              // when each PR was first seen closed
	closes     []humanCommit                  // PRs the fake human closed: branch and time
	previews   map[string]*preview            // ns/name
	expectDel  map[string]bool                // ns/name the soak deletes itself (a merged PR synced)
	nsGone     map[string]bool                // namespaces the soak deletes (tenant teardown)
	human      []*humanCommit
	violations []Violation
	reported   map[string]bool // invariant+detail already reported once

	// Which previews a PR removes, once ReadRemovals turned it on: read from its commits
	// (a merged PR removed the manifests its merge commit deleted; an open one proposes
	// removing those its head lacks), so that a group's PR, one branch for a tenant's previews,
	// is judged preview by preview. Without it, a removal PR is the one of the preview's own
	// branch (--group-by=none) whose body does not say it edits.
	groupBy     string                          // expiry's --group-by: none or namespace
	fileAt      func(sha, path string) bool     // the file exists at commit sha
	firstParent func(sha string) (string, bool) // a commit's first parent

	// Invariant 4, once WatchMail turned it on.
	mailOn                    bool
	notifyInterval, sendSlack time.Duration
	byName                    map[string]string   // preview name → ns/name
	mailSeen                  map[string]bool     // Mailpit IDs
	warnings                  map[string]*warning // ns/name@deadline
	pending                   []pendingMerge

	cl  cleanerState // the Cleaners (cleanercheck.go)
	lab labState     // the labs and Prometheus's faults (labcheck.go)
}

// NewChecker returns a Checker; violations are logged with the run's RNG seed as they are found.
func NewChecker(seed uint64, grace time.Duration, isAncestor func(a, b string) bool, logf func(string, ...any)) *Checker {
	return &Checker{seed: seed, grace: grace, isAncestor: isAncestor, logf: logf,
		prs: map[int]githubtest.PullRequest{}, merged: map[int]time.Time{}, closed: map[int]time.Time{}, previews: map[string]*preview{},
		expectDel: map[string]bool{}, nsGone: map[string]bool{}, reported: map[string]bool{},
		byName: map[string]string{}, mailSeen: map[string]bool{}, warnings: map[string]*warning{}}
}

// WatchMail turns invariant 4 on: Kustos acts no less than interval after a warning was
// delivered (less slack, what its send may take after it decided), and a warning is due by the
// deadline it names.
func (c *Checker) WatchMail(interval, slack time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mailOn, c.notifyInterval, c.sendSlack = true, interval, slack
}

func (c *Checker) violateLocked(at time.Time, inv, format string, a ...any) {
	d := fmt.Sprintf(format, a...)
	if c.reported[inv+d] {
		return
	}
	c.reported[inv+d] = true
	c.violations = append(c.violations, Violation{At: at, Invariant: inv, Detail: d})
	c.logf("VIOLATION %s (seed %d, %s): %s", inv, c.seed, at.Format("15:04:05.000"), d)
}

// Violate records a violation found outside the checker (the server's contract checks, a
// replica that exited on its own, the heap rule).
func (c *Checker) Violate(at time.Time, inv, format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violateLocked(at, inv, format, a...)
}

// Violations returns what was found so far.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Violation(nil), c.violations...)
}

// Deadline records that the preview ns/name expires at expiresAt from at on: created, or
// extended.
func (c *Checker) Deadline(ns, name string, expiresAt, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := ns + "/" + name
	p := c.previews[k]
	if p == nil {
		p = &preview{ns: ns, name: name}
		c.previews[k] = p
		c.byName[name] = k
	}
	p.deadlines = append(p.deadlines, deadline{set: at, expiresAt: expiresAt})
}

// OptOut records that preview ns/name is opted out of expiry from at on.
func (c *Checker) OptOut(ns, name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.previews[ns+"/"+name]; p != nil && p.optedOut.IsZero() {
		p.optedOut = at
	}
}

// IsOptedOut reports whether preview ns/name was opted out of expiry.
func (c *Checker) IsOptedOut(ns, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.previews[ns+"/"+name]
	return p != nil && !p.optedOut.IsZero()
}

// RemovalStates are the previews still in the cluster and not opted out, with their
// deadline in force and whether an open PR proposes removing them.
func (c *Checker) RemovalStates() []removalState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []removalState
	for _, pv := range c.previews {
		if pv.gone || c.nsGone[pv.ns] || len(pv.deadlines) == 0 || !pv.optedOut.IsZero() {
			continue
		}
		out = append(out, removalState{ns: pv.ns, name: pv.name, deadline: pv.deadlines[len(pv.deadlines)-1].expiresAt,
			proposed: c.anyPRLocked(func(p githubtest.PullRequest) bool { return c.proposesRemovalLocked(p, pv) })})
	}
	return out
}

// ExpectDelete records that the soak itself deletes ns/name: the fake GitOps tool prunes what
// a merged PR removed from Git.
func (c *Checker) ExpectDelete(ns, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expectDel[ns+"/"+name] = true
}

// ExpectNamespaceGone records that the soak deletes namespace ns (and so everything in it).
func (c *Checker) ExpectNamespaceGone(ns string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nsGone[ns] = true
}

// Deleted is a Deployment's deletion as the API server's watch reports it: invariant 3.
func (c *Checker) Deleted(ns, name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.previews[ns+"/"+name]; p != nil {
		p.gone = true
	}
	if c.expectDel[ns+"/"+name] || c.nsGone[ns] {
		return
	}
	c.violateLocked(at, invDeleted, "Deployment %s/%s was deleted, neither by the GitOps sync of a merged PR nor with its namespace", ns, name)
}

// HumanPushed records a commit the fake human pushed onto branch: invariant 6 follows it.
func (c *Checker) HumanPushed(branch, sha string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.human = append(c.human, &humanCommit{branch: branch, sha: sha, at: at})
}

// HumanClosed records that the fake human closed the PR of branch at at.
func (c *Checker) HumanClosed(branch string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closes = append(c.closes, humanCommit{branch: branch, at: at})
}

// humanTouchedLocked reports whether the fake human closed, or pushed onto, a PR of branch
// that was open at since or opened later: Kustos leaves such a PR alone, and takes a close as
// the owner's team declining the removal.
func (c *Checker) humanTouchedLocked(branch string, since time.Time) bool {
	for _, h := range c.closes {
		if h.branch == branch && !h.at.Before(since) {
			return true
		}
	}
	for _, h := range c.human {
		if h.branch != branch {
			continue
		}
		if !h.at.Before(since) {
			return true
		}
		for n, p := range c.prs {
			closed, ok := c.closed[n]
			if p.Head == branch && !p.Created.After(h.at) && (!ok || !closed.Before(since)) {
				return true
			}
		}
	}
	return false
}

// Touched reports whether the fake human pushed onto branch.
func (c *Checker) Touched(branch string) bool {
	_, ok := c.TouchedAt(branch)
	return ok
}

// humanBranches are the branches with a human's commit still followed.
func (c *Checker) humanBranches() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, h := range c.human {
		if !h.resolved && !seen[h.branch] {
			seen[h.branch] = true
			out = append(out, h.branch)
		}
	}
	return out
}

// TouchedAt is when the fake human last pushed onto branch.
func (c *Checker) TouchedAt(branch string) (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.human {
		if h.branch == branch && h.at.After(at) {
			at, ok = h.at, true
		}
	}
	return at, ok
}

// ReadRemovals makes the checker read which previews a PR removes from its commits, with
// expiry grouped by groupBy (none or namespace): fileAt tells whether a file exists at a
// commit, firstParent gives a commit's first parent.
func (c *Checker) ReadRemovals(groupBy string, fileAt func(sha, path string) bool, firstParent func(sha string) (string, bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groupBy, c.fileAt, c.firstParent = groupBy, fileAt, firstParent
}

// branchKey is the key invariant 1 allows one open PR for: the head branch, which Kustos
// derives from the target (kustos/<cluster>/<detector>/<namespace>/<name>) or from its group
// (kustos/<cluster>/<detector>/group-<by>/<value>).
func branchKey(head string) string { return head }

// expiryBranch is the head branch of a preview's removal PR (--group-by=none).
func expiryBranch(ns, name string) string {
	return "kustos/" + clusterName + "/expiry/" + ns + "/" + name
}

// expiryGroupBranch is the head branch of the removal PR of a tenant's previews
// (--group-by=namespace).
func expiryGroupBranch(ns string) string {
	return "kustos/" + clusterName + "/expiry/group-namespace/" + ns
}

// removalBranchLocked is the branch the removal of preview ns/name is proposed on.
func (c *Checker) removalBranchLocked(ns, name string) string {
	if c.groupBy == "namespace" {
		return expiryGroupBranch(ns)
	}
	return expiryBranch(ns, name)
}

// mergeRemovedLocked reports whether merged PR p removed preview pv: its merge commit deleted
// the manifest its first parent (the base right before the merge) held; or, without
// ReadRemovals, p is of the preview's own branch and its body does not say it edits.
func (c *Checker) mergeRemovedLocked(p githubtest.PullRequest, pv *preview) bool {
	if p.Head != c.removalBranchLocked(pv.ns, pv.name) {
		return false
	}
	if c.fileAt == nil {
		return isRemoval(p)
	}
	if p.MergeCommitSHA == "" {
		return false
	}
	path := previewPath(pv.ns, pv.name)
	parent, ok := c.firstParent(p.MergeCommitSHA)
	return ok && c.fileAt(parent, path) && !c.fileAt(p.MergeCommitSHA, path)
}

// proposesRemovalLocked reports whether open PR p proposes removing preview pv (its head lacks
// the manifest), with ReadRemovals on.
func (c *Checker) proposesRemovalLocked(p githubtest.PullRequest, pv *preview) bool {
	return c.fileAt != nil && p.State == "open" && p.Head == c.removalBranchLocked(pv.ns, pv.name) &&
		p.HeadSHA != "" && !c.fileAt(p.HeadSHA, previewPath(pv.ns, pv.name))
}

// quotaBranchPrefix starts the head branch of a tenant's quota PRs.
func quotaBranchPrefix(ns string) string { return "kustos/" + clusterName + "/quota/" + ns + "/" }

// ObservePRs checks one snapshot of every pull request and of the branches the fake human
// pushed to (heads: branch → head commit, "" when deleted), taken at now: invariants 1, 2
// and 6.
func (c *Checker) ObservePRs(now time.Time, prs []githubtest.PullRequest, heads map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	open := map[string][]int{}
	for _, p := range prs {
		if p.State == "open" {
			k := branchKey(p.Head)
			open[k] = append(open[k], p.Number)
		}
		if p.Merged {
			if _, seen := c.merged[p.Number]; !seen {
				c.merged[p.Number] = now
				c.checkMergeLocked(now, p)
				c.checkPauseLocked(now, p)
			}
		}
		if _, seen := c.closed[p.Number]; !seen && p.State == "closed" {
			c.closed[p.Number] = now
		}
		c.prs[p.Number] = p
	}
	for k, ns := range open {
		if len(ns) > 1 {
			sort.Ints(ns)
			c.violateLocked(now, invOnePR, "%d open PRs for %s: %v", len(ns), k, ns)
		}
	}
	c.checkCleanerPRsLocked(now, prs)
	for _, h := range c.human {
		if h.resolved {
			continue
		}
		if c.branchMergedLocked(h.branch) {
			h.resolved = true
			continue
		}
		head, ok := heads[h.branch]
		if !ok {
			continue
		}
		if head == "" {
			h.resolved = true
			continue
		}
		if head != h.sha && !c.isAncestor(h.sha, head) && !c.keptLocked(h, heads) {
			h.resolved = true
			c.violateLocked(now, invForeign, "the human's commit %s on %s (pushed %s) is no longer on the branch (head %s)",
				short(h.sha), h.branch, h.at.Format("15:04:05"), short(head))
		}
	}
	c.prevPoll = now
}

// keptLocked: h's commit is on the branch where Kustos keeps a person's commits before it
// reuses the branch of a closed pull request (pr.KeptBranch, named after the head it kept: one
// of the human's commits on that branch). Kept, it is not lost.
func (c *Checker) keptLocked(h *humanCommit, heads map[string]string) bool {
	for _, o := range c.human {
		if o.branch != h.branch {
			continue
		}
		if k := heads[prw.KeptBranch(h.branch, o.sha)]; k != "" && (k == h.sha || c.isAncestor(h.sha, k)) {
			return true
		}
	}
	return false
}

// KeptBranches are the branches where Kustos would keep the human's commits of branch
// (prw.KeptBranch of each): ObservePRs wants their heads too.
func (c *Checker) KeptBranches(branch string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, h := range c.human {
		if h.branch == branch {
			out = append(out, prw.KeptBranch(branch, h.sha))
		}
	}
	return out
}

func (c *Checker) branchMergedLocked(branch string) bool {
	for n := range c.merged {
		if c.prs[n].Head == branch {
			return true
		}
	}
	return false
}

// checkMergeLocked: invariant 2. A preview's removal merged (between the previous snapshot
// and now) while a deadline set more than grace before the previous snapshot was still ahead.
func (c *Checker) checkMergeLocked(now time.Time, p githubtest.PullRequest) {
	for k, pv := range c.previews {
		if !c.mergeRemovedLocked(p, pv) {
			continue // another preview's, or an extension written back: nothing removed
		}
		var inForce *deadline
		for i := range pv.deadlines {
			if d := &pv.deadlines[i]; d.set.Before(c.prevPoll.Add(-c.grace)) {
				inForce = d
			}
		}
		if c.mailOn {
			pm := pendingMerge{number: p.Number, key: k, at: now}
			if inForce != nil {
				pm.deadline = inForce.expiresAt
			}
			c.pending = append(c.pending, pm)
		}
		if !pv.optedOut.IsZero() && pv.optedOut.Before(c.prevPoll.Add(-c.grace)) {
			c.violateLocked(now, invExtended, "PR #%d removing %s/%s merged by %s, but it was opted out of expiry at %s",
				p.Number, pv.ns, pv.name, now.Format("15:04:05"), pv.optedOut.Format("15:04:05"))
		}
		if inForce != nil && inForce.expiresAt.After(now.Add(time.Second)) {
			c.violateLocked(now, invExtended, "PR #%d removing %s/%s merged by %s, but its deadline is %s (set %s)",
				p.Number, pv.ns, pv.name, now.Format("15:04:05"), inForce.expiresAt.Format("15:04:05"), inForce.set.Format("15:04:05"))
		}
	}
}

// Due are the actions due at now that no pull request has proposed or done yet: previews
// still in the cluster past their deadline by more than slack with no PR opened since their
// last extension, and tenants over quota since before now-slack (overSince) with no quota PR.
func (c *Checker) Due(now time.Time, slack time.Duration, overSince map[string]time.Time) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var due []string
	for _, pv := range c.previews {
		if pv.gone || c.nsGone[pv.ns] || len(pv.deadlines) == 0 || !pv.optedOut.IsZero() {
			continue
		}
		last := pv.deadlines[len(pv.deadlines)-1]
		if now.Before(last.expiresAt.Add(slack)) {
			continue
		}
		branch := c.removalBranchLocked(pv.ns, pv.name)
		if c.groupBy == "namespace" {
			// A group's PR is not opened for each preview: it is the one open PR of the
			// branch that proposes the removal, whenever it opened. A person who closed or
			// pushed onto the group's PR since the deadline was set declined it, for every
			// preview of the tenant then due (the checker does not tell which were in it).
			if c.humanTouchedLocked(branch, last.set) || c.anyPRLocked(func(p githubtest.PullRequest) bool { return c.proposesRemovalLocked(p, pv) }) {
				continue
			}
			due = append(due, fmt.Sprintf("preview %s/%s due %s (deadline set %s): no open removal PR of %s proposes it", pv.ns, pv.name,
				last.expiresAt.Format("15:04:05"), last.set.Format("15:04:05"), branch))
			continue
		}
		if !c.proposedLocked(func(head string) bool { return head == branch }, last.set) {
			due = append(due, fmt.Sprintf("preview %s/%s due %s (deadline set %s): no removal PR", pv.ns, pv.name,
				last.expiresAt.Format("15:04:05"), last.set.Format("15:04:05")))
		}
	}
	for ns, since := range overSince {
		if c.nsGone[ns] || now.Before(since.Add(slack)) {
			continue
		}
		if !c.proposedLocked(func(head string) bool { return strings.HasPrefix(head, quotaBranchPrefix(ns)) }, time.Time{}) {
			due = append(due, fmt.Sprintf("tenant %s over quota since %s: no quota PR", ns, since.Format("15:04:05")))
		}
	}
	due = append(due, c.unwarnedLocked(now, slack)...)
	due = append(due, c.cleanersDueLocked(now, slack)...)
	due = append(due, c.labsDueLocked(now, slack)...)
	sort.Strings(due)
	return due
}

func (c *Checker) anyPRLocked(f func(githubtest.PullRequest) bool) bool {
	for _, p := range c.prs {
		if f(p) {
			return true
		}
	}
	return false
}

func (c *Checker) proposedLocked(head func(string) bool, after time.Time) bool {
	for _, p := range c.prs {
		if head(p.Head) && !p.Created.Before(after.Add(-2*time.Second)) {
			return true
		}
	}
	return false
}

// Stalled are the open PRs older than age that nobody but Kustos touched since they opened: once the faults stop,
// each must be merged or withdrawn.
func (c *Checker) Stalled(now time.Time, age time.Duration) []string {
	c.mu.Lock()
	var out []string
	var heads []githubtest.PullRequest
	for _, p := range c.prs {
		if p.State == "open" && now.Sub(p.Created) > age {
			heads = append(heads, p)
		}
	}
	c.mu.Unlock()
	for _, p := range heads {
		if at, ok := c.TouchedAt(p.Head); !ok || at.Before(p.Created) {
			out = append(out, fmt.Sprintf("#%d %s (mergeable_state %s)", p.Number, p.Head, p.MergeableState))
		}
	}
	sort.Strings(out)
	return out
}

// MergeLatencies are, for each merged PR, the time from its creation to the look that first
// saw it merged.
func (c *Checker) MergeLatencies() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for n, at := range c.merged {
		out = append(out, at.Sub(c.prs[n].Created))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}
