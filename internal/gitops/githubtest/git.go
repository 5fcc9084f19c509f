package githubtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/cgi" //nolint:gosec // G504: serves git http-backend; the httpoxy flaw was fixed in Go 1.6.3
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// repo is one bare repository and its GitHub-side state.
type repo struct {
	owner, name   string
	dir           string
	id            int64
	defaultBranch string
	created       time.Time

	gitMu sync.Mutex // serializes ref updates made by the API

	// guarded by Server.mu
	pulls      []*pull
	required   []string
	upToDate   bool // branch protection: require branches to be up to date before merging
	comments   []*comment
	statuses   map[string]map[string]*commitStatus // sha -> context -> status
	checks     map[string]map[string]*checkRun     // sha -> name -> check run
	apiCommits map[string]bool
	labels     map[string]int64 // name -> id
}

func (s *Server) repo(owner, name string) *repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repos[owner+"/"+name]
}

func (s *Server) mustRepo(owner, name string) *repo {
	r := s.repo(owner, name)
	if r == nil {
		s.t.Fatalf("githubtest: repository %s/%s not seeded", owner, name)
	}
	return r
}

// gitEnv makes git independent of the machine's configuration.
func gitEnv(extra []string) []string {
	env := append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	)
	return append(env, extra...)
}

// runGit runs git with dir as GIT_DIR (when not empty).
func runGit(dir string, env []string, stdin []byte, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"--git-dir=" + dir}, args...)
	}
	cmd := exec.Command("git", args...) //nolint:noctx // plumbing on a local bare repository that ends in milliseconds; test controls call it without a context
	cmd.Env = gitEnv(env)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), &gitError{args: args, err: err, stderr: stderr.String()}
	}
	return stdout.String(), nil
}

type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, strings.TrimSpace(e.stderr))
}

func (e *gitError) exitCode() int {
	var ee *exec.ExitError
	if errors.As(e.err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func (r *repo) git(stdin []byte, args ...string) (string, error) {
	return runGit(r.dir, nil, stdin, args...)
}

func (r *repo) gitEnv(env []string, stdin []byte, args ...string) (string, error) {
	return runGit(r.dir, env, stdin, args...)
}

// resolve returns the commit a ref name, full ref or SHA points to, or "".
func (r *repo) resolve(ref string) string {
	out, err := r.git(nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// branchSHA returns the head commit of a branch, or "".
func (r *repo) branchSHA(branch string) string {
	out, err := r.git(nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// branchSHAs returns the commit of every branch, by name (nil when git fails).
func (r *repo) branchSHAs() map[string]string {
	out, err := r.git(nil, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if ok {
			m[strings.TrimPrefix(ref, "refs/heads/")] = sha
		}
	}
	return m
}

func (r *repo) objectType(sha string) string {
	out, err := r.git(nil, "cat-file", "-t", sha)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// SeedRepo creates the bare repository owner/repo with one commit on defaultBranch holding
// files (path → content) and returns that commit's SHA. Calling it again for an existing
// repository adds a commit with the files on defaultBranch.
func (s *Server) SeedRepo(owner, name, defaultBranch string, files map[string]string) string {
	s.t.Helper()
	if defaultBranch == "" {
		defaultBranch = "main"
	}
	r := s.repo(owner, name)
	if r == nil {
		dir := filepath.Join(s.root, owner, name+".git")
		if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
			s.t.Fatalf("githubtest: %v", err)
		}
		if _, err := runGit("", nil, nil, "init", "--quiet", "--bare", "--initial-branch="+defaultBranch, dir); err != nil {
			s.t.Fatalf("githubtest: %v", err)
		}
		for _, kv := range [][2]string{{"http.receivepack", "true"}, {"http.uploadpack", "true"}, {"uploadpack.allowFilter", "true"}, {"uploadpack.allowAnySHA1InWant", "true"}} {
			if _, err := runGit(dir, nil, nil, "config", kv[0], kv[1]); err != nil {
				s.t.Fatalf("githubtest: %v", err)
			}
		}
		r = &repo{owner: owner, name: name, dir: dir, id: s.newID(), defaultBranch: defaultBranch, created: time.Now().UTC().Truncate(time.Second),
			statuses: map[string]map[string]*commitStatus{}, checks: map[string]map[string]*checkRun{}, apiCommits: map[string]bool{}, labels: map[string]int64{}}
		s.mu.Lock()
		s.repos[owner+"/"+name] = r
		s.mu.Unlock()
	}
	sha, err := r.commitFiles(defaultBranch, files, "Initial commit", false)
	if err != nil {
		s.t.Fatalf("githubtest: seeding %s/%s: %v", owner, name, err)
	}
	return sha
}

// SeedRepoFromDir is SeedRepo with the regular files under dir.
func (s *Server) SeedRepoFromDir(owner, name, defaultBranch, dir string) string {
	s.t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		s.t.Fatalf("githubtest: %v", err)
	}
	return s.SeedRepo(owner, name, defaultBranch, files)
}

// PushBaseCommit commits files (path → content) and the deletion of the paths in deletes on
// top of branch, as a human pushing to the base branch would, and returns the new commit. It moves the branch, so
// open pull requests against it are recomputed (and conflict when they touch the same lines).
func (s *Server) PushBaseCommit(owner, name, branch, message string, files map[string]string, deletes ...string) string {
	s.t.Helper()
	r := s.mustRepo(owner, name)
	all := map[string]*string{}
	for p, c := range files {
		c := c
		all[p] = &c
	}
	for _, p := range deletes {
		all[p] = nil
	}
	r.gitMu.Lock()
	defer r.gitMu.Unlock()
	parent := r.branchSHA(branch)
	base := ""
	if parent != "" {
		base = parent + "^{tree}"
	}
	tree, err := r.buildTree(base, toEntries(all))
	if err != nil {
		s.t.Fatalf("githubtest: %v", err)
	}
	var parents []string
	if parent != "" {
		parents = []string{parent}
	}
	sha, err := r.commitTree(tree, parents, message, humanIdent(), humanIdent())
	if err != nil {
		s.t.Fatalf("githubtest: %v", err)
	}
	if err := r.updateRef("refs/heads/"+branch, sha, parent); err != nil {
		s.t.Fatalf("githubtest: %v", err)
	}
	return sha
}

// BranchSHA returns the head commit of a branch ("" when it does not exist).
func (s *Server) BranchSHA(owner, name, branch string) string {
	return s.mustRepo(owner, name).branchSHA(branch)
}

// FileAt returns a file's content at a ref (branch, tag or SHA) and whether it exists.
func (s *Server) FileAt(owner, name, ref, path string) (string, bool) {
	r := s.mustRepo(owner, name)
	out, err := r.git(nil, "cat-file", "blob", ref+":"+path)
	if err != nil {
		return "", false
	}
	return out, true
}

// CommitMessage returns the full message of a commit.
func (s *Server) CommitMessage(owner, name, sha string) string {
	out, _ := s.mustRepo(owner, name).git(nil, "log", "-1", "--format=%B", sha)
	return strings.TrimRight(out, "\n")
}

// CommitParents returns the parents of a commit.
func (s *Server) CommitParents(owner, name, sha string) []string {
	out, _ := s.mustRepo(owner, name).git(nil, "log", "-1", "--format=%P", sha)
	return strings.Fields(out)
}

func (r *repo) commitFiles(branch string, files map[string]string, message string, api bool) (string, error) {
	r.gitMu.Lock()
	defer r.gitMu.Unlock()
	parent := r.branchSHA(branch)
	// The files (a SeedRepo of thousands of them too) go through a work tree and `git add`, which
	// hashes them all in one process.
	work, err := os.MkdirTemp("", "githubtest-seed-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	index := filepath.Join(work, ".index")
	tree := filepath.Join(work, "tree")
	env := []string{"GIT_INDEX_FILE=" + index, "GIT_WORK_TREE=" + tree}
	if parent != "" {
		if _, err := r.gitEnv(env, nil, "read-tree", parent); err != nil {
			return "", err
		}
	}
	for p, c := range files {
		fp := filepath.Join(tree, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fp), 0o750); err != nil {
			return "", err
		}
		if err := os.WriteFile(fp, []byte(c), 0o600); err != nil {
			return "", err
		}
	}
	if len(files) > 0 {
		if _, err := r.gitEnv(env, nil, "--work-tree="+tree, "add", "--", "."); err != nil {
			return "", err
		}
	}
	treeSHA, err := r.gitEnv(env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	var parents []string
	if parent != "" {
		parents = []string{parent}
	}
	sha, err := r.commitTree(strings.TrimSpace(treeSHA), parents, message, humanIdent(), humanIdent())
	if err != nil {
		return "", err
	}
	return sha, r.updateRef("refs/heads/"+branch, sha, parent)
}

// ident is a commit author or committer.
type ident struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date,omitempty"`
}

func humanIdent() ident {
	return ident{Name: "Test User", Email: "test-user@example.com", Date: time.Now().UTC().Format(time.RFC3339)}
}

func (r *repo) commitTree(tree string, parents []string, message string, author, committer ident) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	env := []string{
		"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email,
		"GIT_COMMITTER_NAME=" + committer.Name, "GIT_COMMITTER_EMAIL=" + committer.Email,
	}
	if author.Date != "" {
		env = append(env, "GIT_AUTHOR_DATE="+author.Date)
	}
	if committer.Date != "" {
		env = append(env, "GIT_COMMITTER_DATE="+committer.Date)
	}
	out, err := r.gitEnv(env, []byte(message), args...)
	return strings.TrimSpace(out), err
}

// updateRef moves ref to sha if it still points at old ("" = must not exist).
func (r *repo) updateRef(ref, sha, old string) error {
	if old == "" {
		old = strings.Repeat("0", 40)
	}
	_, err := r.git(nil, "update-ref", ref, sha, old)
	return err
}

// treeEntry is one entry of a tree to build: Content or SHA (nil SHA and nil Content:
// delete).
type treeEntry struct {
	Path    string
	Mode    string
	Type    string
	SHA     *string
	Content *string
}

func toEntries(files map[string]*string) []treeEntry {
	var es []treeEntry
	for p, c := range files {
		es = append(es, treeEntry{Path: p, Mode: "100644", Type: "blob", Content: c})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
	return es
}

type indexEntry struct{ mode, typ, sha string }

// lsTree lists a tree recursively (path → entry); tree "" is the empty tree.
func (r *repo) lsTree(tree string) (map[string]indexEntry, error) {
	m := map[string]indexEntry{}
	if tree == "" {
		return m, nil
	}
	out, err := r.git(nil, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\x00") {
		if line == "" {
			continue
		}
		meta, path, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if len(f) != 3 {
			continue
		}
		m[path] = indexEntry{mode: f[0], typ: f[1], sha: f[2]}
	}
	return m, nil
}

// errTree is a client error while building a tree (→ 422).
type errTree struct{ msg string }

func (e errTree) Error() string { return e.msg }

// buildTree applies entries on top of base (a tree-ish, or "" for none) and writes the tree.
func (r *repo) buildTree(base string, entries []treeEntry) (string, error) {
	files, err := r.lsTree(base)
	if err != nil {
		return "", errTree{"tree.base_tree is invalid"}
	}
	removeUnder := func(p string) {
		delete(files, p)
		for k := range files {
			if strings.HasPrefix(k, p+"/") {
				delete(files, k)
			}
		}
	}
	for _, e := range entries {
		p := strings.Trim(e.Path, "/")
		if p == "" || strings.Contains(p, "//") {
			return "", errTree{"tree.path contains a malformed path component"}
		}
		switch {
		case e.Content != nil:
			blob, err := r.git([]byte(*e.Content), "hash-object", "-w", "--stdin")
			if err != nil {
				return "", err
			}
			mode := e.Mode
			if mode == "" {
				mode = "100644"
			}
			removeUnder(p)
			// a file replaces any file standing where one of its parent directories goes
			for d := filepath.Dir(p); d != "." && d != "/"; d = filepath.Dir(d) {
				delete(files, filepath.ToSlash(d))
			}
			files[p] = indexEntry{mode: mode, typ: "blob", sha: strings.TrimSpace(blob)}
		case e.SHA == nil:
			removeUnder(p)
		default:
			sha := *e.SHA
			typ := r.objectType(sha)
			if e.Mode == "160000" {
				removeUnder(p)
				files[p] = indexEntry{mode: "160000", typ: "commit", sha: sha}
				continue
			}
			if typ == "" {
				return "", errTree{"tree.sha " + sha + " is not a valid blob"}
			}
			removeUnder(p)
			if typ == "tree" || e.Mode == "040000" {
				sub, err := r.lsTree(sha)
				if err != nil {
					return "", errTree{"tree.sha " + sha + " is not a valid tree"}
				}
				for k, v := range sub {
					files[p+"/"+k] = v
				}
				continue
			}
			mode := e.Mode
			if mode == "" {
				mode = "100644"
			}
			files[p] = indexEntry{mode: mode, typ: typ, sha: sha}
		}
	}
	var buf bytes.Buffer
	for p, e := range files {
		fmt.Fprintf(&buf, "%s %s\t%s\x00", e.mode, e.sha, p)
	}
	work, err := os.MkdirTemp("", "githubtest-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(work, "index")}
	if _, err := r.gitEnv(env, buf.Bytes(), "update-index", "-z", "--add", "--index-info"); err != nil {
		return "", err
	}
	out, err := r.gitEnv(env, nil, "write-tree")
	return strings.TrimSpace(out), err
}

// rawCommit is a parsed commit object.
type rawCommit struct {
	sha, tree string
	parents   []string
	author    ident
	committer ident
	message   string
}

func parseIdent(s string) ident {
	// "Name <email> 1700000000 +0000"
	lt, gt := strings.Index(s, "<"), strings.LastIndex(s, ">")
	if lt < 0 || gt < lt {
		return ident{Name: s}
	}
	id := ident{Name: strings.TrimSpace(s[:lt]), Email: s[lt+1 : gt]}
	f := strings.Fields(s[gt+1:])
	if len(f) >= 1 {
		if sec, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			id.Date = time.Unix(sec, 0).UTC().Format(time.RFC3339)
		}
	}
	return id
}

func (r *repo) readCommit(sha string) (*rawCommit, error) {
	out, err := r.git(nil, "cat-file", "commit", sha)
	if err != nil {
		return nil, err
	}
	head, msg, _ := strings.Cut(out, "\n\n")
	c := &rawCommit{sha: sha, message: msg}
	for _, line := range strings.Split(head, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "tree":
			c.tree = v
		case "parent":
			c.parents = append(c.parents, v)
		case "author":
			c.author = parseIdent(v)
		case "committer":
			c.committer = parseIdent(v)
		}
	}
	return c, nil
}

// mergeTree merges head into base with `git merge-tree --write-tree`: the merged tree, or
// conflict = true.
func (r *repo) mergeTree(base, head string) (tree string, conflict bool, err error) {
	out, err := r.git(nil, "merge-tree", "--write-tree", "--no-messages", "--allow-unrelated-histories", base, head)
	var ge *gitError
	if errors.As(err, &ge) && ge.exitCode() == 1 {
		return "", true, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]), false, nil
}

// ---- smart HTTP ----------------------------------------------------------------------------

func isGitPath(p string) bool {
	i := strings.Index(p, ".git/")
	if i < 0 {
		return false
	}
	rest := p[i+len(".git/"):]
	return rest == "info/refs" || rest == "git-upload-pack" || rest == "git-receive-pack" || rest == "HEAD" || strings.HasPrefix(rest, "objects/")
}

func (s *Server) serveGit(w http.ResponseWriter, r *http.Request) {
	i := strings.Index(r.URL.Path, ".git/")
	tmpl := "/{owner}/{repo}.git/" + r.URL.Path[i+len(".git/"):]
	status := 200
	logged := false
	log := func() {
		if !logged {
			logged = true
			s.logRequest(Request{Method: r.Method, Path: tmpl, URL: r.URL.RequestURI(), Status: status, Git: true})
		}
	}
	defer log()
	_, pass, okAuth := r.BasicAuth()
	var g *grant
	if okAuth {
		g = s.tokenGrant(pass)
	}
	if g == nil {
		status = http.StatusUnauthorized
		log()
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "remote: Invalid username or token. Password authentication is not supported for Git operations.", status)
		return
	}
	owner, name, _ := strings.Cut(strings.Trim(r.URL.Path[:i], "/"), "/")
	if s.repo(owner, name) == nil || !g.reaches(owner+"/"+name) || !g.may("contents", "read") {
		status = http.StatusNotFound
		log()
		http.Error(w, "Repository not found.", status)
		return
	}
	push := strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
	if push && !g.may("contents", "write") {
		status = http.StatusForbidden
		log()
		http.Error(w, "remote: Permission to "+owner+"/"+name+".git denied to "+s.opts.AppSlug+"[bot].", status)
		return
	}
	h := &cgi.Handler{
		Path: s.backend,
		Root: "",
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=x-access-token",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
		},
		Stderr: io.Discard,
	}
	sw := &statusWriter{ResponseWriter: w, status: 200}
	h.ServeHTTP(sw, r)
	status = sw.status
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
