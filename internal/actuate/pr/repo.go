package pr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Repo reads the base branch of the GitOps repository.
type Repo interface {
	// Snapshot returns the files of the base branch at commit sha, the head the caller just
	// read from GitHub. If the base moved on in between, it may return a newer commit; callers
	// use Snapshot.Commit as the parent of what they build.
	Snapshot(ctx context.Context, sha string) (Snapshot, error)
}

// Snapshot is one commit of the base branch: an fs.FS of its files (slash-separated paths
// relative to the repository root) and its Git object IDs.
type Snapshot interface {
	fs.FS
	// Commit is the commit SHA; Tree its root tree SHA.
	Commit() string
	Tree() string
	// TreeAfter returns the SHA the root tree has once every file change is made (each path
	// names an existing regular file; nil content deletes it), computed locally, without
	// creating anything.
	TreeAfter(files ...FileChange) (string, error)
}

// TokenSource returns a token that may read the repository over HTTPS (an installation token
// of the GitHub App, or the token of --github-token-file). It is sent as HTTP basic auth
// (x-access-token:<token>), never in a URL, and never appears in errors.
type TokenSource func(ctx context.Context) (string, error)

// GitRepo implements Repo with go-git: a depth-1 clone of the base branch into memory, made
// again only when the requested commit is not the one it holds. It is safe for concurrent
// use; concurrent callers wait for one clone.
//
// A fresh shallow clone rather than an incremental fetch: go-git's incremental fetches into a
// shallow repository are fragile (missing-object errors when the shallow boundary moves), a
// depth-1 clone of the one branch costs about what a fetch of a moved tree does, and the old
// storage is freed as a whole.
type GitRepo struct {
	// URL is the clone URL (https://github.com/owner/name.git).
	URL string
	// Branch is the base branch.
	Branch string
	// Token authenticates the clone; nil for a public repository.
	Token TokenSource
	// Timeout bounds one clone (default 2 minutes).
	Timeout time.Duration
	// CABundle holds PEM certificates trusted besides the system's (a GitHub Enterprise
	// Server's private CA, --github-ca-file); nil: the system's only.
	CABundle []byte

	mu   sync.Mutex
	snap *gitSnapshot
}

var _ Repo = (*GitRepo)(nil)

// Snapshot implements Repo.
func (r *GitRepo) Snapshot(ctx context.Context, sha string) (Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.snap != nil && r.snap.commit == sha {
		return r.snap, nil
	}
	s, err := r.clone(ctx)
	if err != nil {
		return nil, err
	}
	// The base may have moved since the caller read it: keep whatever is newest.
	r.snap = s
	return s, nil
}

func (r *GitRepo) clone(ctx context.Context) (*gitSnapshot, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := &git.CloneOptions{
		URL:           r.URL,
		ReferenceName: plumbing.NewBranchReferenceName(r.Branch),
		SingleBranch:  true,
		Depth:         1,
		NoCheckout:    true,
		Tags:          git.NoTags,
		CABundle:      r.CABundle,
	}
	if r.Token != nil {
		tok, err := r.Token(ctx)
		if err != nil {
			return nil, fmt.Errorf("git token for %s: %w", r.Branch, err)
		}
		opts.Auth = &githttp.BasicAuth{Username: "x-access-token", Password: tok}
	}
	st := memory.NewStorage()
	repo, err := git.CloneContext(ctx, st, nil, opts)
	if err != nil {
		return nil, fmt.Errorf("git: shallow clone of branch %s: %s", r.Branch, scrub(err, opts))
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(r.Branch), true)
	if err != nil {
		return nil, fmt.Errorf("git: branch %s after clone: %w", r.Branch, err)
	}
	c, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return nil, fmt.Errorf("git: commit %s: %w", ref.Hash(), err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("git: tree of %s: %w", ref.Hash(), err)
	}
	return &gitSnapshot{st: st, commit: c.Hash.String(), root: t}, nil
}

// scrub renders a go-git error without any credential (go-git does not put the password in
// errors, but a transport error might echo a URL with user info).
func scrub(err error, opts *git.CloneOptions) string {
	msg := err.Error()
	if a, ok := opts.Auth.(*githttp.BasicAuth); ok && a.Password != "" {
		msg = strings.ReplaceAll(msg, a.Password, "<redacted>")
	}
	return msg
}

// gitSnapshot is an fs.FS over a commit's tree in go-git's memory storage.
type gitSnapshot struct {
	st     *memory.Storage
	commit string
	root   *object.Tree

	mu sync.Mutex // go-git trees cache lookups without locking
}

func (s *gitSnapshot) Commit() string { return s.commit }
func (s *gitSnapshot) Tree() string   { return s.root.Hash.String() }

// Open implements fs.FS. Directories implement fs.ReadDirFile; symlinks and submodules do not
// exist for it.
func (s *gitSnapshot) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "." {
		return &treeDir{name: ".", t: s.root}, nil
	}
	e, err := s.root.FindEntry(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	switch e.Mode {
	case filemode.Dir:
		t, err := object.GetTree(s.st, e.Hash)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &treeDir{name: path.Base(name), t: t}, nil
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		b, err := object.GetBlob(s.st, e.Hash)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		rd, err := b.Reader()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		defer rd.Close()
		data, err := io.ReadAll(rd)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		return &blobFile{info: entryInfo{name: path.Base(name), mode: e.Mode, size: int64(len(data))}, data: data}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// TreeAfter implements Snapshot.
func (s *gitSnapshot) TreeAfter(files ...FileChange) (string, error) {
	if len(files) == 0 {
		return s.root.Hash.String(), nil
	}
	changes := make([]treeChange, 0, len(files))
	seen := map[string]bool{}
	for _, f := range files {
		if !fs.ValidPath(f.Path) || f.Path == "." {
			return "", fmt.Errorf("git: invalid path %q", f.Path)
		}
		if seen[f.Path] {
			return "", fmt.Errorf("git: %s changed twice in one tree", f.Path)
		}
		seen[f.Path] = true
		ch := treeChange{parts: strings.Split(f.Path, "/"), del: f.Content == nil}
		if f.Content != nil {
			ch.blob = plumbing.ComputeHash(plumbing.BlobObject, f.Content)
		}
		changes = append(changes, ch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, _, err := s.rewrite(s.root, changes)
	if err != nil {
		return "", fmt.Errorf("git: tree with %s changed: %w", describeFiles(files), err)
	}
	return h.String(), nil
}

// treeChange is one file change below a tree: the path's components from that tree on, and the
// new blob or the deletion.
type treeChange struct {
	parts []string
	blob  plumbing.Hash
	del   bool
}

func describeFiles(files []FileChange) string {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	return strings.Join(paths, ", ")
}

// rewrite returns the hash of t with every change made, and whether the tree became empty (git
// stores no empty trees). Changes below the same subdirectory are made in one pass over it.
func (s *gitSnapshot) rewrite(t *object.Tree, changes []treeChange) (plumbing.Hash, bool, error) {
	entries := append([]object.TreeEntry(nil), t.Entries...)
	removed := map[string]bool{}
	below := map[string][]treeChange{}
	var dirs []string
	for _, ch := range changes {
		if len(ch.parts) > 1 {
			if _, ok := below[ch.parts[0]]; !ok {
				dirs = append(dirs, ch.parts[0])
			}
			below[ch.parts[0]] = append(below[ch.parts[0]], treeChange{parts: ch.parts[1:], blob: ch.blob, del: ch.del})
			continue
		}
		e := findEntry(entries, ch.parts[0])
		if e == nil {
			return plumbing.ZeroHash, false, fmt.Errorf("%w: %s", fs.ErrNotExist, ch.parts[0])
		}
		if e.Mode == filemode.Dir || e.Mode == filemode.Submodule || e.Mode == filemode.Symlink {
			return plumbing.ZeroHash, false, fmt.Errorf("%s is not a regular file", ch.parts[0])
		}
		if ch.del {
			removed[e.Name] = true
		} else {
			e.Hash = ch.blob
		}
	}
	for _, name := range dirs {
		e := findEntry(entries, name)
		if e == nil {
			return plumbing.ZeroHash, false, fmt.Errorf("%w: %s", fs.ErrNotExist, name)
		}
		if e.Mode != filemode.Dir {
			return plumbing.ZeroHash, false, fmt.Errorf("%s is not a directory", name)
		}
		sub, err := object.GetTree(s.st, e.Hash)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		h, empty, err := s.rewrite(sub, below[name])
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if empty {
			removed[name] = true
		} else {
			e.Hash = h
		}
	}
	kept := entries[:0]
	for _, e := range entries {
		if !removed[e.Name] {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	obj := &plumbing.MemoryObject{}
	if err := (&object.Tree{Entries: kept}).Encode(obj); err != nil {
		return plumbing.ZeroHash, false, err
	}
	return obj.Hash(), false, nil
}

// findEntry returns the entry named name, or nil.
func findEntry(entries []object.TreeEntry, name string) *object.TreeEntry {
	for i := range entries {
		if entries[i].Name == name {
			return &entries[i]
		}
	}
	return nil
}

// ---- fs.File implementations ----

type entryInfo struct {
	name string
	mode filemode.FileMode
	size int64
}

func (i entryInfo) Name() string { return i.name }
func (i entryInfo) Size() int64  { return i.size }
func (i entryInfo) Mode() fs.FileMode {
	if i.mode == filemode.Dir {
		return fs.ModeDir | 0o555
	}
	if i.mode == filemode.Executable {
		return 0o555
	}
	return 0o444
}
func (i entryInfo) ModTime() time.Time         { return time.Time{} }
func (i entryInfo) IsDir() bool                { return i.mode == filemode.Dir }
func (i entryInfo) Sys() any                   { return nil }
func (i entryInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i entryInfo) Info() (fs.FileInfo, error) { return i, nil }

type blobFile struct {
	info entryInfo
	data []byte
	off  int
}

func (f *blobFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *blobFile) Close() error               { return nil }
func (f *blobFile) Read(b []byte) (int, error) {
	if f.off >= len(f.data) {
		return 0, io.EOF
	}
	n := copy(b, f.data[f.off:])
	f.off += n
	return n, nil
}

type treeDir struct {
	name string
	t    *object.Tree
	off  int
}

func (d *treeDir) Stat() (fs.FileInfo, error) {
	return entryInfo{name: d.name, mode: filemode.Dir}, nil
}
func (d *treeDir) Close() error { return nil }
func (d *treeDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}

// ReadDir lists the entries (sizes of files are not known without reading them: 0).
func (d *treeDir) ReadDir(n int) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	for d.off < len(d.t.Entries) && (n <= 0 || len(out) < n) {
		e := d.t.Entries[d.off]
		d.off++
		switch e.Mode {
		case filemode.Dir, filemode.Regular, filemode.Executable, filemode.Deprecated:
			out = append(out, entryInfo{name: e.Name, mode: e.Mode})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}
