package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// ---- JSON shapes -----------------------------------------------------------------------------

func (s *Server) web() string { return s.srv.URL }
func (s *Server) api() string { return s.srv.URL + apiPrefix }

func nodeID(kind string, id int64) string {
	return base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("0%s%d", kind, id)))
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// userJSON is a simple-user.
func (s *Server) userJSON(login string, id int64, typ string) map[string]any {
	u := s.api() + "/users/" + login
	return map[string]any{
		"login": login, "id": id, "node_id": nodeID("U", id), "type": typ, "site_admin": false,
		"avatar_url": s.web() + "/avatars/" + login, "gravatar_id": "",
		"url": u, "html_url": s.web() + "/" + login,
		"followers_url": u + "/followers", "following_url": u + "/following{/other_user}",
		"gists_url": u + "/gists{/gist_id}", "starred_url": u + "/starred{/owner}{/repo}",
		"subscriptions_url": u + "/subscriptions", "organizations_url": u + "/orgs",
		"repos_url": u + "/repos", "events_url": u + "/events{/privacy}",
		"received_events_url": u + "/received_events",
	}
}

func (s *Server) ownerJSON(r *repo) map[string]any {
	return s.userJSON(r.owner, r.id+1, "Organization")
}

func (s *Server) botJSON() map[string]any {
	return s.userJSON(s.opts.AppSlug+"[bot]", 4242, "Bot")
}

func (s *Server) humanJSON() map[string]any { return s.userJSON("test-user", 4343, "User") }

// repoJSON is a repository / full-repository (full adds the fields only the latter requires).
func (s *Server) repoJSON(r *repo, full bool) map[string]any {
	u := s.api() + "/repos/" + r.owner + "/" + r.name
	html := s.web() + "/" + r.owner + "/" + r.name
	m := map[string]any{
		"id": r.id, "node_id": nodeID("R", r.id), "name": r.name, "full_name": r.owner + "/" + r.name,
		"owner": s.ownerJSON(r), "private": true, "html_url": html, "description": nil, "fork": false,
		"url": u, "archive_url": u + "/{archive_format}{/ref}", "assignees_url": u + "/assignees{/user}",
		"blobs_url": u + "/git/blobs{/sha}", "branches_url": u + "/branches{/branch}",
		"collaborators_url": u + "/collaborators{/collaborator}", "comments_url": u + "/comments{/number}",
		"commits_url": u + "/commits{/sha}", "compare_url": u + "/compare/{base}...{head}",
		"contents_url": u + "/contents/{+path}", "contributors_url": u + "/contributors",
		"deployments_url": u + "/deployments", "downloads_url": u + "/downloads", "events_url": u + "/events",
		"forks_url": u + "/forks", "git_commits_url": u + "/git/commits{/sha}", "git_refs_url": u + "/git/refs{/sha}",
		"git_tags_url": u + "/git/tags{/sha}", "git_url": "git://" + strings.TrimPrefix(html, "http://") + ".git",
		"issue_comment_url": u + "/issues/comments{/number}", "issue_events_url": u + "/issues/events{/number}",
		"issues_url": u + "/issues{/number}", "keys_url": u + "/keys{/key_id}", "labels_url": u + "/labels{/name}",
		"languages_url": u + "/languages", "merges_url": u + "/merges", "milestones_url": u + "/milestones{/number}",
		"notifications_url": u + "/notifications{?since,all,participating}", "pulls_url": u + "/pulls{/number}",
		"releases_url": u + "/releases{/id}", "ssh_url": "git@127.0.0.1:" + r.owner + "/" + r.name + ".git",
		"stargazers_url": u + "/stargazers", "statuses_url": u + "/statuses/{sha}", "subscribers_url": u + "/subscribers",
		"subscription_url": u + "/subscription", "tags_url": u + "/tags", "teams_url": u + "/teams",
		"trees_url": u + "/git/trees{/sha}", "clone_url": s.GitURL(r.owner, r.name), "mirror_url": nil,
		"hooks_url": u + "/hooks", "svn_url": html, "homepage": nil, "language": "YAML",
		"forks_count": 0, "forks": 0, "stargazers_count": 0, "watchers_count": 0, "watchers": 0, "size": 1,
		"default_branch": r.defaultBranch, "open_issues_count": 0, "open_issues": 0, "is_template": false,
		"topics": []string{}, "has_issues": true, "has_projects": false, "has_wiki": false, "has_pages": false,
		"has_downloads": true, "archived": false, "disabled": false, "visibility": "private",
		"pushed_at": ts(r.created), "created_at": ts(r.created), "updated_at": ts(r.created),
		"permissions":        map[string]any{"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
		"allow_rebase_merge": true, "allow_squash_merge": true, "allow_merge_commit": true,
		"allow_auto_merge": false, "delete_branch_on_merge": false, "allow_forking": false,
		"web_commit_signoff_required": false, "license": nil,
	}
	if full {
		m["has_discussions"] = false
		m["network_count"] = 0
		m["subscribers_count"] = 0
		m["temp_clone_token"] = nil
	}
	return m
}

func (s *Server) refJSON(r *repo, ref, sha string) map[string]any {
	u := s.api() + "/repos/" + r.owner + "/" + r.name
	return map[string]any{
		"ref": ref, "node_id": nodeID("REF", int64(len(ref))), "url": u + "/git/" + ref,
		"object": map[string]any{"type": "commit", "sha": sha, "url": u + "/git/commits/" + sha},
	}
}

func (s *Server) commitJSON(r *repo, c *rawCommit) map[string]any {
	u := s.api() + "/repos/" + r.owner + "/" + r.name
	parents := []any{}
	for _, p := range c.parents {
		parents = append(parents, map[string]any{"sha": p, "url": u + "/git/commits/" + p, "html_url": s.web() + "/" + r.owner + "/" + r.name + "/commit/" + p})
	}
	s.mu.Lock()
	verified := r.apiCommits[c.sha]
	s.mu.Unlock()
	ver := map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}
	if verified {
		ver = map[string]any{"verified": true, "reason": "valid", "signature": "-----BEGIN PGP SIGNATURE-----\n\nwsBcBAABCAAQ (githubtest)\n-----END PGP SIGNATURE-----\n",
			"payload": "tree " + c.tree + "\n", "verified_at": c.committer.Date}
	}
	return map[string]any{
		"sha": c.sha, "node_id": nodeID("C", int64(len(c.sha))), "url": u + "/git/commits/" + c.sha,
		"html_url": s.web() + "/" + r.owner + "/" + r.name + "/commit/" + c.sha,
		"author":   c.author, "committer": c.committer, "message": c.message,
		"tree":    map[string]any{"sha": c.tree, "url": u + "/git/trees/" + c.tree},
		"parents": parents, "verification": ver,
	}
}

// ---- repository --------------------------------------------------------------------------------

func (c *call) getRepo() reply { return ok(200, c.s.repoJSON(c.repo, true)) }

// ---- refs --------------------------------------------------------------------------------------

func (c *call) getRef() reply {
	ref := "refs/" + strings.TrimPrefix(c.p["ref"], "refs/")
	out, err := c.repo.git(nil, "rev-parse", "--verify", "--quiet", ref)
	if err != nil || !strings.HasPrefix(ref, "refs/heads/") && !strings.HasPrefix(ref, "refs/tags/") {
		return ghError(404, "Not Found", docsBase+"/git/refs#get-a-reference")
	}
	return ok(200, c.s.refJSON(c.repo, ref, strings.TrimSpace(out)))
}

func validRefName(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || strings.Count(ref, "/") < 2 {
		return false
	}
	_, err := runGit("", nil, nil, "check-ref-format", ref)
	return err == nil
}

func (c *call) createRef() reply {
	const doc = docsBase + "/git/refs#create-a-reference"
	var in struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if err := c.decode(&in); err != nil {
		return badJSON(err)
	}
	if !validRefName(in.Ref) {
		return ghError(422, "Reference name is invalid", doc)
	}
	if c.repo.objectType(in.SHA) != "commit" {
		return ghError(422, "Object does not exist", doc)
	}
	c.repo.gitMu.Lock()
	defer c.repo.gitMu.Unlock()
	if _, err := c.repo.git(nil, "rev-parse", "--verify", "--quiet", in.Ref); err == nil {
		return ghError(422, "Reference already exists", doc)
	}
	if err := c.repo.updateRef(in.Ref, in.SHA, ""); err != nil {
		return ghError(422, "Reference already exists", doc)
	}
	c.header.Set("Location", c.s.api()+"/repos/"+c.repo.owner+"/"+c.repo.name+"/git/"+in.Ref)
	return ok(201, c.s.refJSON(c.repo, in.Ref, in.SHA))
}

func (c *call) updateRef() reply {
	const doc = docsBase + "/git/refs#update-a-reference"
	ref := "refs/" + strings.TrimPrefix(c.p["ref"], "refs/")
	var in struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if err := c.decode(&in); err != nil {
		return badJSON(err)
	}
	if c.repo.objectType(in.SHA) != "commit" {
		return ghError(422, "Object does not exist", doc)
	}
	c.repo.gitMu.Lock()
	defer c.repo.gitMu.Unlock()
	out, err := c.repo.git(nil, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		return ghError(422, "Reference does not exist", doc)
	}
	old := strings.TrimSpace(out)
	if !in.Force && old != in.SHA {
		if _, err := c.repo.git(nil, "merge-base", "--is-ancestor", old, in.SHA); err != nil {
			return ghError(422, "Update is not a fast forward", doc)
		}
	}
	if err := c.repo.updateRef(ref, in.SHA, old); err != nil {
		return ghError(422, "Reference cannot be updated", doc)
	}
	return ok(200, c.s.refJSON(c.repo, ref, in.SHA))
}

func (c *call) deleteRef() reply {
	const doc = docsBase + "/git/refs#delete-a-reference"
	ref := "refs/" + strings.TrimPrefix(c.p["ref"], "refs/")
	c.repo.gitMu.Lock()
	defer c.repo.gitMu.Unlock()
	if _, err := c.repo.git(nil, "rev-parse", "--verify", "--quiet", ref); err != nil {
		return ghError(422, "Reference does not exist", doc)
	}
	if _, err := c.repo.git(nil, "update-ref", "-d", ref); err != nil {
		return ghError(422, "Reference does not exist", doc)
	}
	// GitHub closes the open pull requests whose head branch was deleted.
	if branch, isHead := strings.CutPrefix(ref, "refs/heads/"); isHead {
		c.s.mu.Lock()
		for _, p := range c.repo.pulls {
			if p.state == "open" && p.head == branch {
				p.state = "closed"
				now := time.Now().UTC()
				p.closedAt = &now
				p.updated = now
			}
		}
		c.s.mu.Unlock()
	}
	return ok(204, nil)
}

// ---- commits and trees -------------------------------------------------------------------------

func (c *call) getCommit() reply {
	sha := c.p["commit_sha"]
	if c.repo.objectType(sha) != "commit" {
		return ghError(404, "Not Found", docsBase+"/git/commits#get-a-commit-object")
	}
	rc, err := c.repo.readCommit(c.repo.resolve(sha))
	if err != nil {
		return notFound()
	}
	return ok(200, c.s.commitJSON(c.repo, rc))
}

func (c *call) createCommit() reply {
	const doc = docsBase + "/git/commits#create-a-commit"
	var in struct {
		Message   string   `json:"message"`
		Tree      string   `json:"tree"`
		Parents   []string `json:"parents"`
		Author    *ident   `json:"author"`
		Committer *ident   `json:"committer"`
		Signature string   `json:"signature"`
	}
	if err := c.decode(&in); err != nil {
		return badJSON(err)
	}
	if c.repo.objectType(in.Tree) != "tree" {
		return ghError(422, "Tree SHA does not exist", doc)
	}
	for _, p := range in.Parents {
		if c.repo.objectType(p) != "commit" {
			return ghError(422, "Parent SHA does not exist or is not a commit object", doc)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	bot := ident{Name: c.s.opts.AppSlug + "[bot]", Email: "4242+" + c.s.opts.AppSlug + "[bot]@users.noreply.github.com", Date: now}
	author, committer := bot, ident{Name: "GitHub", Email: "noreply@github.com", Date: now}
	if in.Author != nil {
		author = *in.Author
		if author.Date == "" {
			author.Date = now
		}
	}
	if in.Committer != nil {
		committer = *in.Committer
		if committer.Date == "" {
			committer.Date = now
		}
	} else if in.Author != nil {
		committer = author
	}
	sha, err := c.repo.commitTree(in.Tree, in.Parents, in.Message, author, committer)
	if err != nil {
		return ghError(422, err.Error(), doc)
	}
	c.s.mu.Lock()
	// GitHub signs commits an App creates through the API without author/committer of its own.
	c.repo.apiCommits[sha] = in.Signature == "" && in.Committer == nil
	c.s.mu.Unlock()
	rc, err := c.repo.readCommit(sha)
	if err != nil {
		return ghError(500, err.Error(), "")
	}
	c.header.Set("Location", c.s.api()+"/repos/"+c.repo.owner+"/"+c.repo.name+"/git/commits/"+sha)
	return ok(201, c.s.commitJSON(c.repo, rc))
}

func (c *call) createTree() reply {
	const doc = docsBase + "/git/trees#create-a-tree"
	var in struct {
		BaseTree string                       `json:"base_tree"`
		Tree     []map[string]json.RawMessage `json:"tree"`
	}
	if err := c.decode(&in); err != nil {
		return badJSON(err)
	}
	base := ""
	if in.BaseTree != "" {
		t := c.repo.objectType(in.BaseTree)
		if t != "tree" && t != "commit" {
			return ghError(422, "Invalid tree info", doc)
		}
		base = in.BaseTree
	}
	var entries []treeEntry
	str := func(raw json.RawMessage) (*string, error) {
		if raw == nil || string(raw) == "null" {
			return nil, nil
		}
		var v string
		err := json.Unmarshal(raw, &v)
		return &v, err
	}
	for _, e := range in.Tree {
		var te treeEntry
		var err error
		var p, mode, typ *string
		if p, err = str(e["path"]); err != nil || p == nil {
			return ghError(422, "Must supply a valid tree.path", doc)
		}
		if mode, err = str(e["mode"]); err != nil {
			return badJSON(err)
		}
		if typ, err = str(e["type"]); err != nil {
			return badJSON(err)
		}
		te.Path = *p
		if mode != nil {
			te.Mode = *mode
		}
		if typ != nil {
			te.Type = *typ
		}
		if te.SHA, err = str(e["sha"]); err != nil {
			return badJSON(err)
		}
		if te.Content, err = str(e["content"]); err != nil {
			return badJSON(err)
		}
		_, hasSHA := e["sha"]
		if te.SHA != nil && te.Content != nil {
			return ghError(422, "Must supply either tree.sha or tree.content. Request will fail if both are supplied.", doc)
		}
		if !hasSHA && te.Content == nil {
			return ghError(422, "Must supply either tree.sha or tree.content", doc)
		}
		entries = append(entries, te)
	}
	sha, err := c.repo.buildTree(base, entries)
	if err != nil {
		var et errTree
		if errors.As(err, &et) {
			return ghError(422, et.msg, doc)
		}
		return ghError(500, err.Error(), "")
	}
	out, err := c.repo.git(nil, "ls-tree", "-l", "-z", sha)
	if err != nil {
		return ghError(500, err.Error(), "")
	}
	u := c.s.api() + "/repos/" + c.repo.owner + "/" + c.repo.name
	items := []any{}
	for _, line := range strings.Split(out, "\x00") {
		if line == "" {
			continue
		}
		meta, p, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if len(f) != 4 {
			continue
		}
		it := map[string]any{"path": p, "mode": f[0], "type": f[1], "sha": f[2]}
		switch f[1] {
		case "blob":
			n, _ := strconv.Atoi(f[3])
			it["size"] = n
			it["url"] = u + "/git/blobs/" + f[2]
		case "tree":
			it["url"] = u + "/git/trees/" + f[2]
		}
		items = append(items, it)
	}
	c.header.Set("Location", u+"/git/trees/"+sha)
	return ok(201, map[string]any{"sha": sha, "url": u + "/git/trees/" + sha, "tree": items, "truncated": false})
}

func (c *call) getBlob() reply {
	sha := c.p["file_sha"]
	if c.repo.objectType(sha) != "blob" {
		return ghError(404, "Not Found", docsBase+"/git/blobs#get-a-blob")
	}
	data, err := c.repo.git(nil, "cat-file", "blob", sha)
	if err != nil {
		return notFound()
	}
	if wantsRaw(c.r) {
		return ok(200, rawBody{contentType: "application/vnd.github.raw; charset=utf-8", data: []byte(data)})
	}
	u := c.s.api() + "/repos/" + c.repo.owner + "/" + c.repo.name + "/git/blobs/" + sha
	return ok(200, map[string]any{
		"sha": sha, "node_id": nodeID("B", int64(len(data))), "size": len(data), "url": u,
		"content": wrap60(base64.StdEncoding.EncodeToString([]byte(data))), "encoding": "base64",
	})
}

// LargeFileLimit is the size above which the contents API answers encoding "none" with empty
// content (GitHub: files of 1-100 MB), so that clients fall back to the blobs API.
const LargeFileLimit = 1 << 20

// ---- contents ----------------------------------------------------------------------------------

func (c *call) getContents() reply {
	ref := c.r.URL.Query().Get("ref")
	if ref == "" {
		ref = c.repo.defaultBranch
	}
	commit := c.repo.resolve(ref)
	if commit == "" {
		return ghError(404, "No commit found for the ref "+ref, docsBase+"/repos/contents#get-repository-content")
	}
	p := strings.Trim(c.p["path"], "/")
	out, err := c.repo.git(nil, "ls-tree", "-l", "-z", commit, "--", p)
	if err != nil || out == "" {
		return ghError(404, "Not Found", docsBase+"/repos/contents#get-repository-content")
	}
	meta, _, _ := strings.Cut(strings.TrimSuffix(out, "\x00"), "\t")
	f := strings.Fields(meta)
	if len(f) == 4 && f[1] == "tree" {
		list, err := c.repo.git(nil, "ls-tree", "-l", "-z", commit+":"+p)
		if err != nil {
			return notFound()
		}
		items := []any{}
		for _, line := range strings.Split(list, "\x00") {
			if line == "" {
				continue
			}
			m, name, _ := strings.Cut(line, "\t")
			ff := strings.Fields(m)
			if len(ff) != 4 {
				continue
			}
			items = append(items, c.contentJSON(ff, path.Join(p, name), ref, nil))
		}
		return ok(200, items)
	}
	if len(f) != 4 || f[1] != "blob" {
		return notFound()
	}
	data, err := c.repo.git(nil, "cat-file", "blob", f[2])
	if err != nil {
		return notFound()
	}
	return ok(200, c.contentJSON(f, p, ref, &data))
}

// contentJSON is a content-file (data != nil) or a content-directory item.
func (c *call) contentJSON(f []string, p, ref string, data *string) map[string]any {
	u := c.s.api() + "/repos/" + c.repo.owner + "/" + c.repo.name
	typ := "file"
	switch f[1] {
	case "tree":
		typ = "dir"
	case "commit":
		typ = "submodule"
	}
	if f[0] == "120000" {
		typ = "symlink"
	}
	size := 0
	if n, err := strconv.Atoi(f[3]); err == nil {
		size = n
	}
	self := u + "/contents/" + p + "?ref=" + ref
	gitURL := u + "/git/blobs/" + f[2]
	if typ == "dir" {
		gitURL = u + "/git/trees/" + f[2]
	}
	html := c.s.web() + "/" + c.repo.owner + "/" + c.repo.name + "/blob/" + ref + "/" + p
	var download any = c.s.web() + "/raw/" + c.repo.owner + "/" + c.repo.name + "/" + ref + "/" + p
	if typ == "dir" {
		download = nil
	}
	m := map[string]any{
		"type": typ, "size": size, "name": path.Base(p), "path": p, "sha": f[2],
		"url": self, "git_url": gitURL, "html_url": html, "download_url": download,
		"_links": map[string]any{"self": self, "git": gitURL, "html": html},
	}
	if data != nil {
		m["encoding"] = "base64"
		m["content"] = wrap60(base64.StdEncoding.EncodeToString([]byte(*data)))
		if len(*data) > LargeFileLimit {
			m["encoding"], m["content"] = "none", ""
		}
	}
	return m
}

// wrap60 wraps base64 at 60 columns, as GitHub does.
func wrap60(s string) string {
	var b strings.Builder
	for len(s) > 60 {
		b.WriteString(s[:60])
		b.WriteByte('\n')
		s = s[60:]
	}
	b.WriteString(s)
	b.WriteByte('\n')
	return b.String()
}

var _ = http.StatusOK
