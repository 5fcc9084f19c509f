package githubtest

import (
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// pull is a pull request; guarded by Server.mu.
type pull struct {
	number       int
	id           int64
	title, body  string
	state        string // open, closed
	head, base   string // branch names
	headSHA      string // last known head commit
	baseSHA      string
	draft        bool
	merged       bool
	mergeSHA     string
	mergedAt     *time.Time
	closedAt     *time.Time
	created      time.Time
	updated      time.Time
	labels       []string
	byAPI        bool
	maintainerOK bool

	// mergeability of (headSHA, baseSHA) = mergeKey
	mergeKey  string
	computing chan struct{}
	conflict  bool
	behind    bool // the base has commits the head lacks
	mergeTree string
}

// comment is an issue comment on a pull request; guarded by Server.mu.
type comment struct {
	id      int64
	number  int
	body    string
	created time.Time
}

// PullRequest is a snapshot of a pull request for assertions.
type PullRequest struct {
	Number         int
	Title, Body    string
	State          string // "open" or "closed"
	Head, Base     string // branch names
	HeadSHA        string
	BaseSHA        string
	Merged         bool
	MergeCommitSHA string
	Labels         []string
	// Comments are the bodies of the issue comments on the pull request, oldest first.
	Comments []string
	// Mergeable is nil until computed for the current head and base.
	Mergeable      *bool
	MergeableState string
	// Created is when it was opened, by the server's clock (Options.Now).
	Created time.Time
}

type commitStatus struct {
	id                   int64
	state, context, desc string
	created, updated     time.Time
}

type checkRun struct {
	id                 int64
	name               string
	status, conclusion string // status: queued, in_progress, completed
	started, completed time.Time
}

// SetRequireUpToDate sets branch protection's "require branches to be up to date before
// merging" on the repository: a pull request whose head lacks commits of its base then reports
// mergeable_state "behind" and is not merged until its branch is updated (update-branch or a
// rebuild).
func (s *Server) SetRequireUpToDate(owner, name string, on bool) {
	r := s.mustRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	r.upToDate = on
}

// ---- test controls -----------------------------------------------------------------------------

// SetRequiredChecks sets the status check contexts (commit statuses or check-run names) that
// branch protection requires before a pull request may merge (empty: none).
func (s *Server) SetRequiredChecks(owner, name string, contexts ...string) {
	r := s.mustRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	r.required = append([]string(nil), contexts...)
}

// SetCheck records a check run on sha: state "success", "failure", "neutral", "skipped",
// "cancelled", "timed_out", "action_required" (completed with that conclusion), or "queued" /
// "in_progress" / "pending" (not completed).
func (s *Server) SetCheck(owner, name, sha, checkName, state string) {
	r := s.mustRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.checks[sha] == nil {
		r.checks[sha] = map[string]*checkRun{}
	}
	now := s.now().UTC()
	cr := r.checks[sha][checkName]
	if cr == nil {
		s.nextID++
		cr = &checkRun{id: s.nextID, name: checkName, started: now}
		r.checks[sha][checkName] = cr
	}
	switch state {
	case "queued", "in_progress":
		cr.status, cr.conclusion = state, ""
	case "pending":
		cr.status, cr.conclusion = "in_progress", ""
	default:
		cr.status, cr.conclusion, cr.completed = "completed", state, now
	}
}

// SetStatus records a commit status (state: error, failure, pending, success) on sha.
func (s *Server) SetStatus(owner, name, sha, context, state string) {
	r := s.mustRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.statuses[sha] == nil {
		r.statuses[sha] = map[string]*commitStatus{}
	}
	now := s.now().UTC()
	st := r.statuses[sha][context]
	if st == nil {
		s.nextID++
		st = &commitStatus{id: s.nextID, context: context, created: now}
		r.statuses[sha][context] = st
	}
	st.state, st.updated, st.desc = state, now, "githubtest "+state
}

// ClosePR closes a pull request without merging it, as a human would in the web UI.
func (s *Server) ClosePR(owner, name string, number int) {
	r := s.mustRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := r.pull(number)
	if p == nil {
		s.t.Fatalf("githubtest: no pull request #%d in %s/%s", number, owner, name)
		return // not reached: Fatalf does not return (see TB)
	}
	if p.state == "open" {
		now := s.now().UTC()
		p.state, p.closedAt, p.updated = "closed", &now, now
	}
}

// PR returns a snapshot of a pull request; ok is false when it does not exist. Mergeability is
// reported as computed so far (taking a snapshot never triggers the computation).
func (s *Server) PR(owner, name string, number int) (PullRequest, bool) {
	r := s.mustRepo(owner, name)
	r.refreshPulls(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := r.pull(number)
	if p == nil {
		return PullRequest{}, false
	}
	m, st := s.mergeabilityLocked(r, p)
	var comments []string
	for _, c := range r.comments {
		if c.number == p.number {
			comments = append(comments, c.body)
		}
	}
	return PullRequest{
		Number: p.number, Title: p.title, Body: p.body, State: p.state, Head: p.head, Base: p.base,
		HeadSHA: p.headSHA, BaseSHA: p.baseSHA, Merged: p.merged, MergeCommitSHA: p.mergeSHA,
		Labels: append([]string(nil), p.labels...), Comments: comments, Mergeable: m, MergeableState: st,
		Created: p.created,
	}, true
}

// PRs returns snapshots of all pull requests of a repository, oldest first.
func (s *Server) PRs(owner, name string) []PullRequest {
	r := s.mustRepo(owner, name)
	s.mu.Lock()
	n := len(r.pulls)
	s.mu.Unlock()
	var out []PullRequest
	for i := 1; i <= n; i++ {
		if p, found := s.PR(owner, name, i); found {
			out = append(out, p)
		}
	}
	return out
}

// ---- mergeability ------------------------------------------------------------------------------

func (r *repo) pull(n int) *pull {
	if n < 1 || n > len(r.pulls) {
		return nil
	}
	return r.pulls[n-1]
}

// refreshPulls follows branch moves (pushes, ref updates) for open pull requests.
func (r *repo) refreshPulls(s *Server) {
	s.mu.Lock()
	var open []*pull
	for _, p := range r.pulls {
		if p.state == "open" {
			open = append(open, p)
		}
	}
	s.mu.Unlock()
	if len(open) == 0 {
		return
	}
	// One git process for every branch: a process per pull request made each call cost
	// O(open pull requests) processes, which a bench with hundreds of them cannot afford.
	heads := r.branchSHAs()
	for _, p := range open {
		s.mu.Lock()
		head, base := p.head, p.base
		s.mu.Unlock()
		hs, bs := heads[head], heads[base]
		s.mu.Lock()
		if p.state != "open" {
			// Merged or closed since it was listed (the lock was let go to read the branches):
			// its head and base are history now. Moving its base to the merge commit would
			// make the merged PR's diff (base..merge) empty.
			s.mu.Unlock()
			continue
		}
		if hs != "" && hs != p.headSHA {
			p.headSHA, p.updated = hs, s.now().UTC()
		}
		if bs != "" {
			p.baseSHA = bs
		}
		s.mu.Unlock()
	}
}

// checksGreenLocked reports whether every required context has a successful status or check
// run on sha.
func (s *Server) checksGreenLocked(r *repo, sha string) bool {
	for _, ctx := range r.required {
		okCtx := false
		if st := r.statuses[sha][ctx]; st != nil && st.state == "success" {
			okCtx = true
		}
		if cr := r.checks[sha][ctx]; cr != nil && cr.status == "completed" && (cr.conclusion == "success" || cr.conclusion == "neutral" || cr.conclusion == "skipped") {
			okCtx = true
		}
		if !okCtx {
			return false
		}
	}
	return true
}

// mergeabilityLocked reports (mergeable, mergeable_state) as known now.
func (s *Server) mergeabilityLocked(r *repo, p *pull) (*bool, string) {
	if p.merged {
		return nil, "unknown"
	}
	key := p.headSHA + ":" + p.baseSHA
	if p.mergeKey != key || p.computing != nil {
		return nil, "unknown"
	}
	t, f := true, false
	switch {
	case p.conflict:
		return &f, "dirty"
	case p.draft:
		return &t, "draft"
	case p.behind && r.upToDate:
		return &t, "behind"
	case !s.checksGreenLocked(r, p.headSHA):
		return &t, "blocked"
	default:
		return &t, "clean"
	}
}

// startMergeabilityLocked starts computing mergeability for the current head and base unless
// it is known or in progress; it returns the channel closed when the computation is done (nil
// when nothing is pending).
func (s *Server) startMergeabilityLocked(r *repo, p *pull) chan struct{} {
	key := p.headSHA + ":" + p.baseSHA
	if p.computing != nil {
		return p.computing
	}
	if p.mergeKey == key || p.merged {
		return nil
	}
	done := make(chan struct{})
	p.computing = done
	head, base := p.headSHA, p.baseSHA
	go func() {
		defer close(done)
		tree, conflict, err := r.mergeTree(base, head)
		// The head is behind when the base is not one of its ancestors (exit status 1).
		_, aerr := r.git(nil, "merge-base", "--is-ancestor", base, head)
		var ge *gitError
		behind := errors.As(aerr, &ge) && ge.exitCode() == 1
		s.mu.Lock()
		defer s.mu.Unlock()
		p.computing = nil
		if err != nil || (aerr != nil && !behind) {
			return // stays unknown; the next read retries
		}
		p.mergeKey, p.conflict, p.behind, p.mergeTree = head+":"+base, conflict, behind, tree
	}()
	return done
}

// ---- JSON --------------------------------------------------------------------------------------

func (s *Server) labelJSON(r *repo, name string) map[string]any {
	id := r.labels[name]
	return map[string]any{
		"id": id, "node_id": nodeID("L", id), "url": s.api() + "/repos/" + r.owner + "/" + r.name + "/labels/" + name,
		"name": name, "description": "", "color": "ededed", "default": false,
	}
}

// pullJSONLocked renders a pull-request (full) or pull-request-simple.
func (s *Server) pullJSONLocked(r *repo, p *pull, full bool) map[string]any {
	u := s.api() + "/repos/" + r.owner + "/" + r.name
	pu := u + "/pulls/" + strconv.Itoa(p.number)
	iu := u + "/issues/" + strconv.Itoa(p.number)
	html := s.web() + "/" + r.owner + "/" + r.name + "/pull/" + strconv.Itoa(p.number)
	labels := []any{}
	for _, l := range p.labels {
		labels = append(labels, s.labelJSON(r, l))
	}
	opt := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return ts(*t)
	}
	var mergeSHA any
	if p.mergeSHA != "" {
		mergeSHA = p.mergeSHA
	}
	user := s.humanJSON()
	if p.byAPI {
		user = s.botJSON()
	}
	branch := func(name, sha string) map[string]any {
		return map[string]any{"label": r.owner + ":" + name, "ref": name, "sha": sha, "user": s.ownerJSON(r), "repo": s.repoJSON(r, false)}
	}
	link := func(h string) map[string]any { return map[string]any{"href": h} }
	m := map[string]any{
		"url": pu, "id": p.id, "node_id": nodeID("PR", p.id), "html_url": html,
		"diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": iu,
		"commits_url": pu + "/commits", "review_comments_url": pu + "/comments",
		"review_comment_url": u + "/pulls/comments{/number}", "comments_url": iu + "/comments",
		"statuses_url": u + "/statuses/" + p.headSHA, "number": p.number, "state": p.state,
		"locked": false, "title": p.title, "user": user, "body": p.body, "labels": labels,
		"milestone": nil, "active_lock_reason": nil, "created_at": ts(p.created), "updated_at": ts(p.updated),
		"closed_at": opt(p.closedAt), "merged_at": opt(p.mergedAt), "merge_commit_sha": mergeSHA,
		"assignee": nil, "assignees": []any{}, "requested_reviewers": []any{}, "requested_teams": []any{},
		"head": branch(p.head, p.headSHA), "base": branch(p.base, p.baseSHA),
		"_links": map[string]any{
			"self": link(pu), "html": link(html), "issue": link(iu), "comments": link(iu + "/comments"),
			"review_comments": link(pu + "/comments"), "review_comment": link(u + "/pulls/comments{/number}"),
			"commits": link(pu + "/commits"), "statuses": link(u + "/statuses/" + p.headSHA),
		},
		"author_association": "NONE", "auto_merge": nil, "draft": p.draft,
	}
	if p.body == "" {
		m["body"] = nil
	}
	if full {
		mergeable, state := s.mergeabilityLocked(r, p)
		m["merged"] = p.merged
		if mergeable == nil {
			m["mergeable"] = nil
		} else {
			m["mergeable"] = *mergeable
		}
		m["rebaseable"] = m["mergeable"]
		m["mergeable_state"] = state
		if p.merged {
			m["merged_by"] = s.botJSON()
		} else {
			m["merged_by"] = nil
		}
		m["comments"], m["review_comments"], m["commits"] = 0, 0, 1
		m["additions"], m["deletions"], m["changed_files"] = 1, 1, 1
		m["maintainer_can_modify"] = p.maintainerOK
	}
	return m
}

// ---- endpoints ---------------------------------------------------------------------------------

func (c *call) listPulls() reply {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head, base := q.Get("head"), q.Get("base")
	c.repo.refreshPulls(c.s)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var ps []*pull
	for _, p := range c.repo.pulls {
		if state != "all" && p.state != state {
			continue
		}
		if head != "" {
			owner, branch, hasOwner := strings.Cut(head, ":")
			if !hasOwner {
				// GitHub requires user:ref; a bare branch name filters nothing out.
				branch = owner
				owner = c.repo.owner
			}
			if owner != c.repo.owner || p.head != branch {
				continue
			}
		}
		if base != "" && p.base != base {
			continue
		}
		ps = append(ps, p)
	}
	// sort: created (the default; pull request numbers follow creation) or updated; GitHub's
	// popularity and long-running need activity the fake does not keep, so they sort as
	// created. direction, as GitHub: desc by default for created, asc for the others.
	by, dir := q.Get("sort"), q.Get("direction")
	if dir == "" {
		dir = "asc"
		if by == "" || by == "created" {
			dir = "desc"
		}
	}
	less := func(a, b *pull) bool { return a.number < b.number }
	if by == "updated" {
		less = func(a, b *pull) bool { return a.updated.Before(b.updated) }
	}
	sort.SliceStable(ps, func(i, j int) bool {
		if dir == "desc" {
			return less(ps[j], ps[i])
		}
		return less(ps[i], ps[j])
	})
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	if perPage <= 0 || perPage > 100 {
		perPage = 30
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page < 1 {
		page = 1
	}
	lo := (page - 1) * perPage
	out := []any{}
	for i := lo; i < len(ps) && i < lo+perPage; i++ {
		out = append(out, c.s.pullJSONLocked(c.repo, ps[i], false))
	}
	if link := pageLinks(c.s.api()+"/repos/"+c.repo.owner+"/"+c.repo.name+"/pulls", q, page, (len(ps)+perPage-1)/perPage); link != "" {
		c.header.Set("Link", link)
	}
	return ok(200, out)
}

// pageLinks is GitHub's Link header for page of last pages at base with query q: next and
// last after a page that is not the last, first and prev after one that is not the first.
func pageLinks(base string, q url.Values, page, last int) string {
	at := func(n int) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = append([]string(nil), vs...)
		}
		v.Set("page", strconv.Itoa(n))
		return "<" + base + "?" + v.Encode() + ">"
	}
	var parts []string
	if page > 1 {
		parts = append(parts, at(page-1)+`; rel="prev"`)
	}
	if page < last {
		parts = append(parts, at(page+1)+`; rel="next"`, at(last)+`; rel="last"`)
	}
	if page > 1 {
		parts = append(parts, at(1)+`; rel="first"`)
	}
	return strings.Join(parts, ", ")
}

func (c *call) createPull() reply {
	const doc = docsBase + "/pulls/pulls#create-a-pull-request"
	var in struct {
		Title               string `json:"title"`
		Head                string `json:"head"`
		Base                string `json:"base"`
		Body                string `json:"body"`
		Draft               bool   `json:"draft"`
		MaintainerCanModify *bool  `json:"maintainer_can_modify"`
	}
	if err := c.decode(&in); err != nil {
		return badJSON(err)
	}
	headOwner, headBranch, hasOwner := strings.Cut(in.Head, ":")
	if !hasOwner {
		headBranch, headOwner = headOwner, c.repo.owner
	}
	if in.Title == "" {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "field": "title", "code": "missing_field"})
	}
	baseSHA := c.repo.branchSHA(in.Base)
	if baseSHA == "" {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "field": "base", "code": "invalid"})
	}
	headSHA := c.repo.branchSHA(headBranch)
	if headSHA == "" || headOwner != c.repo.owner {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "field": "head", "code": "invalid"})
	}
	if _, err := c.repo.git(nil, "merge-base", "--is-ancestor", headSHA, baseSHA); err == nil {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "No commits between " + in.Base + " and " + headBranch})
	}
	c.repo.refreshPulls(c.s)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	for _, p := range c.repo.pulls {
		if p.state == "open" && p.head == headBranch && p.base == in.Base {
			return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom",
				"message": "A pull request already exists for " + c.repo.owner + ":" + headBranch + "."})
		}
	}
	now := c.s.now().UTC()
	c.s.nextID++
	p := &pull{
		number: len(c.repo.pulls) + 1, id: c.s.nextID, title: in.Title, body: in.Body, state: "open",
		head: headBranch, base: in.Base, headSHA: headSHA, baseSHA: baseSHA, draft: in.Draft,
		created: now, updated: now, byAPI: true, maintainerOK: in.MaintainerCanModify == nil || *in.MaintainerCanModify,
	}
	c.repo.pulls = append(c.repo.pulls, p)
	c.header.Set("Location", c.s.api()+"/repos/"+c.repo.owner+"/"+c.repo.name+"/pulls/"+strconv.Itoa(p.number))
	return ok(201, c.s.pullJSONLocked(c.repo, p, true))
}

func (c *call) pullParam() (*pull, reply, bool) {
	n, err := strconv.Atoi(c.p["pull_number"])
	if err != nil {
		return nil, notFound(), false
	}
	c.repo.refreshPulls(c.s)
	c.s.mu.Lock()
	p := c.repo.pull(n)
	c.s.mu.Unlock()
	if p == nil {
		return nil, ghError(404, "Not Found", docsBase+"/pulls/pulls#get-a-pull-request"), false
	}
	return p, reply{}, true
}

// getPull: the first read after a change answers mergeable null and starts the computation;
// later reads wait for it (it takes milliseconds) and answer the result.
func (c *call) getPull() reply {
	p, res, found := c.pullParam()
	if !found {
		return res
	}
	c.s.mu.Lock()
	pending := p.computing
	c.s.mu.Unlock()
	if pending != nil {
		select {
		case <-pending:
		case <-time.After(5 * time.Second):
		}
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if pending == nil {
		c.s.startMergeabilityLocked(c.repo, p)
	}
	return ok(200, c.s.pullJSONLocked(c.repo, p, true))
}

func (c *call) updatePull() reply {
	const doc = docsBase + "/pulls/pulls#update-a-pull-request"
	p, res, found := c.pullParam()
	if !found {
		return res
	}
	var in struct {
		Title               *string `json:"title"`
		Body                *string `json:"body"`
		State               *string `json:"state"`
		Base                *string `json:"base"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	}
	if err := c.decode(&in); err != nil {
		return badJSON(err)
	}
	var baseSHA string
	if in.Base != nil {
		if baseSHA = c.repo.branchSHA(*in.Base); baseSHA == "" {
			return validationFailed(doc, map[string]any{"resource": "PullRequest", "field": "base", "code": "invalid"})
		}
	}
	headExists := c.repo.branchSHA(p.head) != ""
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if p.merged && (in.State != nil || in.Base != nil) {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "Cannot change a merged pull request"})
	}
	now := c.s.now().UTC()
	if in.Title != nil {
		p.title = *in.Title
	}
	if in.Body != nil {
		p.body = *in.Body
	}
	if in.MaintainerCanModify != nil {
		p.maintainerOK = *in.MaintainerCanModify
	}
	if in.Base != nil {
		p.base, p.baseSHA = *in.Base, baseSHA
	}
	if in.State != nil {
		switch *in.State {
		case "closed":
			if p.state == "open" {
				p.state, p.closedAt = "closed", &now
			}
		case "open":
			if p.state == "closed" {
				if !headExists {
					return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "state cannot be changed. The " + p.head + " branch has been deleted."})
				}
				for _, o := range c.repo.pulls {
					if o != p && o.state == "open" && o.head == p.head && o.base == p.base {
						return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + c.repo.owner + ":" + p.head + "."})
					}
				}
				p.state, p.closedAt = "open", nil
			}
		}
	}
	p.updated = now
	return ok(200, c.s.pullJSONLocked(c.repo, p, true))
}

func (c *call) mergePull() reply {
	const doc = docsBase + "/pulls/pulls#merge-a-pull-request"
	p, res, found := c.pullParam()
	if !found {
		return res
	}
	var in struct {
		CommitTitle   *string `json:"commit_title"`
		CommitMessage *string `json:"commit_message"`
		SHA           string  `json:"sha"`
		MergeMethod   string  `json:"merge_method"`
	}
	if len(c.body) > 0 {
		if err := c.decode(&in); err != nil {
			return badJSON(err)
		}
	}
	if in.MergeMethod == "" {
		in.MergeMethod = "merge"
	}
	c.repo.gitMu.Lock()
	defer c.repo.gitMu.Unlock()

	c.s.mu.Lock()
	if p.state != "open" {
		c.s.mu.Unlock()
		return ghError(405, "Pull Request is not mergeable", doc)
	}
	if in.SHA != "" && in.SHA != p.headSHA {
		c.s.mu.Unlock()
		return ghError(409, "Head branch was modified. Review and try the merge again.", doc)
	}
	done := c.s.startMergeabilityLocked(c.repo, p)
	c.s.mu.Unlock()
	if done != nil {
		<-done
	}
	c.s.mu.Lock()
	mergeable, state := c.s.mergeabilityLocked(c.repo, p)
	if mergeable == nil || !*mergeable || state == "draft" {
		c.s.mu.Unlock()
		return ghError(405, "Pull Request is not mergeable", doc)
	}
	if state == "behind" {
		c.s.mu.Unlock()
		return ghError(405, "Head branch is out of date. Review and try the merge again.", doc)
	}
	if state == "blocked" {
		missing := ""
		for _, ctx := range c.repo.required {
			if !c.s.checksGreenLocked(&repo{required: []string{ctx}, statuses: c.repo.statuses, checks: c.repo.checks}, p.headSHA) {
				missing = ctx
				break
			}
		}
		c.s.mu.Unlock()
		return ghError(405, "Required status check \""+missing+"\" is expected.", doc)
	}
	if in.MergeMethod != "squash" && in.MergeMethod != "merge" {
		c.s.mu.Unlock()
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "field": "merge_method", "code": "invalid"})
	}
	head, base, baseSHA, headSHA, tree, number, title := p.head, p.base, p.baseSHA, p.headSHA, p.mergeTree, p.number, p.title
	c.s.mu.Unlock()

	msgTitle := title + " (#" + strconv.Itoa(number) + ")"
	msgBody := ""
	if in.MergeMethod == "merge" {
		msgTitle = "Merge pull request #" + strconv.Itoa(number) + " from " + c.repo.owner + "/" + head
		msgBody = title
	} else {
		log, _ := c.repo.git(nil, "log", "--format=* %s", baseSHA+".."+headSHA)
		msgBody = strings.TrimSpace(log)
	}
	if in.CommitTitle != nil {
		msgTitle = *in.CommitTitle
	}
	if in.CommitMessage != nil {
		msgBody = *in.CommitMessage
	}
	message := msgTitle
	if msgBody != "" {
		message += "\n\n" + msgBody
	}
	parents := []string{baseSHA}
	if in.MergeMethod == "merge" {
		parents = append(parents, headSHA)
	}
	now := c.s.now().UTC()
	bot := ident{Name: c.s.opts.AppSlug + "[bot]", Email: "4242+" + c.s.opts.AppSlug + "[bot]@users.noreply.github.com", Date: ts(now)}
	sha, err := c.repo.commitTree(tree, parents, message, bot, ident{Name: "GitHub", Email: "noreply@github.com", Date: ts(now)})
	if err != nil {
		return ghError(500, err.Error(), "")
	}
	if err := c.repo.updateRef("refs/heads/"+base, sha, baseSHA); err != nil {
		// the base moved since mergeability was computed
		return ghError(409, "Base branch was modified. Review and try the merge again.", doc)
	}
	c.s.mu.Lock()
	c.repo.apiCommits[sha] = true
	p.merged, p.mergeSHA, p.mergedAt, p.closedAt, p.state, p.updated = true, sha, &now, &now, "closed", now
	// The base it was merged onto, even if a concurrent refreshPulls saw the base move to the
	// merge commit before the PR was marked closed.
	p.baseSHA, p.headSHA = baseSHA, headSHA
	c.s.mu.Unlock()
	return ok(200, map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}

func (c *call) addLabels() reply {
	n, err := strconv.Atoi(c.p["issue_number"])
	if err != nil {
		return notFound()
	}
	var names []string
	var asList []any
	var asObj struct {
		Labels []any `json:"labels"`
	}
	if err := c.decode(&asList); err != nil {
		if err := c.decode(&asObj); err != nil {
			return badJSON(err)
		}
		asList = asObj.Labels
	}
	for _, v := range asList {
		switch x := v.(type) {
		case string:
			names = append(names, x)
		case map[string]any:
			if s, isStr := x["name"].(string); isStr {
				names = append(names, s)
			}
		}
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	p := c.repo.pull(n)
	if p == nil {
		return ghError(404, "Not Found", docsBase+"/issues/labels#add-labels-to-an-issue")
	}
	for _, l := range names {
		if _, known := c.repo.labels[l]; !known {
			c.s.nextID++
			c.repo.labels[l] = c.s.nextID
		}
		dup := false
		for _, have := range p.labels {
			dup = dup || have == l
		}
		if !dup {
			p.labels = append(p.labels, l)
		}
	}
	out := []any{}
	for _, l := range p.labels {
		out = append(out, c.s.labelJSON(c.repo, l))
	}
	return ok(200, out)
}

func (c *call) combinedStatus() reply {
	sha := c.repo.resolve(c.p["ref"])
	if sha == "" {
		return ghError(404, "No commit found for SHA: "+c.p["ref"], docsBase+"/commits/statuses#get-the-combined-status-for-a-specific-reference")
	}
	u := c.s.api() + "/repos/" + c.repo.owner + "/" + c.repo.name
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var sts []*commitStatus
	for _, st := range c.repo.statuses[sha] {
		sts = append(sts, st)
	}
	sort.Slice(sts, func(i, j int) bool { return sts[i].id < sts[j].id })
	state := "success"
	if len(sts) == 0 {
		state = "pending"
	}
	items := []any{}
	for _, st := range sts {
		switch st.state {
		case "failure", "error":
			state = "failure"
		case "pending":
			if state != "failure" {
				state = "pending"
			}
		}
		items = append(items, map[string]any{
			"url": u + "/statuses/" + sha, "avatar_url": nil, "id": st.id, "node_id": nodeID("SC", st.id),
			"state": st.state, "description": st.desc, "target_url": nil, "context": st.context,
			"created_at": ts(st.created), "updated_at": ts(st.updated),
		})
	}
	return ok(200, map[string]any{
		"state": state, "statuses": items, "sha": sha, "total_count": len(items),
		"repository": c.s.repoJSON(c.repo, false), "commit_url": u + "/commits/" + sha, "url": u + "/commits/" + sha + "/status",
	})
}

func (c *call) listCheckRuns() reply {
	sha := c.repo.resolve(c.p["ref"])
	if sha == "" {
		return ghError(404, "No commit found for SHA: "+c.p["ref"], docsBase+"/checks/runs#list-check-runs-for-a-git-reference")
	}
	u := c.s.api() + "/repos/" + c.repo.owner + "/" + c.repo.name
	name := c.r.URL.Query().Get("check_name")
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	var crs []*checkRun
	for _, cr := range c.repo.checks[sha] {
		if name == "" || cr.name == name {
			crs = append(crs, cr)
		}
	}
	sort.Slice(crs, func(i, j int) bool { return crs[i].id < crs[j].id })
	items := []any{}
	for _, cr := range crs {
		var concl, completed any
		if cr.status == "completed" {
			concl, completed = cr.conclusion, ts(cr.completed)
		}
		html := c.s.web() + "/" + c.repo.owner + "/" + c.repo.name + "/runs/" + strconv.FormatInt(cr.id, 10)
		items = append(items, map[string]any{
			"id": cr.id, "node_id": nodeID("CR", cr.id), "head_sha": sha, "name": cr.name, "external_id": "",
			"url": u + "/check-runs/" + strconv.FormatInt(cr.id, 10), "html_url": html, "details_url": html,
			"status": cr.status, "conclusion": concl, "started_at": ts(cr.started), "completed_at": completed,
			"output":      map[string]any{"title": nil, "summary": nil, "text": nil, "annotations_count": 0, "annotations_url": u + "/check-runs/" + strconv.FormatInt(cr.id, 10) + "/annotations"},
			"check_suite": map[string]any{"id": cr.id + 1},
			"app":         nil, "pull_requests": []any{},
		})
	}
	return ok(200, map[string]any{"total_count": len(items), "check_runs": items})
}

// updateBranch merges the base branch into the head branch, as GitHub's "Update branch"
// button does (a merge commit with parents head and base). GitHub does it asynchronously and
// answers 202; the fake has moved the branch by the time it answers.
func (c *call) updateBranch() reply {
	const doc = docsBase + "/pulls/pulls#update-a-pull-request-branch"
	p, res, found := c.pullParam()
	if !found {
		return res
	}
	var in struct {
		ExpectedHeadSHA string `json:"expected_head_sha"`
	}
	if len(c.body) > 0 && strings.TrimSpace(string(c.body)) != "null" {
		if err := c.decode(&in); err != nil {
			return badJSON(err)
		}
	}
	c.repo.gitMu.Lock()
	defer c.repo.gitMu.Unlock()
	c.s.mu.Lock()
	open, head, base, headSHA, baseSHA, number := p.state == "open", p.head, p.base, p.headSHA, p.baseSHA, p.number
	c.s.mu.Unlock()
	if !open {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "Pull request is not open"})
	}
	if in.ExpectedHeadSHA != "" && in.ExpectedHeadSHA != headSHA {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "expected head sha didn't match current head ref."})
	}
	if _, err := c.repo.git(nil, "merge-base", "--is-ancestor", baseSHA, headSHA); err == nil {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "There are no new commits on the base branch."})
	}
	tree, conflict, err := c.repo.mergeTree(baseSHA, headSHA)
	if err != nil {
		return ghError(500, err.Error(), "")
	}
	if conflict {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "merge conflict between base and head"})
	}
	now := c.s.now().UTC()
	bot := ident{Name: c.s.opts.AppSlug + "[bot]", Email: "4242+" + c.s.opts.AppSlug + "[bot]@users.noreply.github.com", Date: ts(now)}
	sha, err := c.repo.commitTree(tree, []string{headSHA, baseSHA}, "Merge branch '"+base+"' into "+head, bot, ident{Name: "GitHub", Email: "noreply@github.com", Date: ts(now)})
	if err != nil {
		return ghError(500, err.Error(), "")
	}
	if err := c.repo.updateRef("refs/heads/"+head, sha, headSHA); err != nil {
		return validationFailed(doc, map[string]any{"resource": "PullRequest", "code": "custom", "message": "expected head sha didn't match current head ref."})
	}
	c.s.mu.Lock()
	c.repo.apiCommits[sha] = true
	p.headSHA, p.updated = sha, now
	c.s.mu.Unlock()
	return ok(202, map[string]any{"message": "Updating pull request branch.", "url": c.s.web() + "/" + c.repo.owner + "/" + c.repo.name + "/pull/" + strconv.Itoa(number)})
}

// createComment adds an issue comment to a pull request (the fake has no plain issues).
func (c *call) createComment() reply {
	const doc = docsBase + "/issues/comments#create-an-issue-comment"
	n, err := strconv.Atoi(c.p["issue_number"])
	if err != nil {
		return notFound()
	}
	var in struct {
		Body *string `json:"body"`
	}
	if err := c.decode(&in); err != nil {
		return badJSON(err)
	}
	if in.Body == nil || *in.Body == "" {
		return validationFailed(doc, map[string]any{"resource": "IssueComment", "field": "body", "code": "missing_field"})
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	p := c.repo.pull(n)
	if p == nil {
		return ghError(404, "Not Found", doc)
	}
	c.s.nextID++
	cm := &comment{id: c.s.nextID, number: n, body: *in.Body, created: c.s.now().UTC()}
	c.repo.comments = append(c.repo.comments, cm)
	u := c.s.api() + "/repos/" + c.repo.owner + "/" + c.repo.name
	self := u + "/issues/comments/" + strconv.FormatInt(cm.id, 10)
	c.header.Set("Location", self)
	return ok(201, map[string]any{
		"id": cm.id, "node_id": nodeID("IC", cm.id), "url": self, "body": cm.body,
		"html_url":   c.s.web() + "/" + c.repo.owner + "/" + c.repo.name + "/pull/" + strconv.Itoa(n) + "#issuecomment-" + strconv.FormatInt(cm.id, 10),
		"issue_url":  u + "/issues/" + strconv.Itoa(n),
		"user":       c.s.botJSON(),
		"created_at": ts(cm.created), "updated_at": ts(cm.created),
		"author_association": "NONE",
	})
}
