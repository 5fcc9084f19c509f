package pr

import (
	"context"
	"fmt"
	"slices"
	"strings"

	gh "github.com/google/go-github/v60/github"
	"k8s.io/utils/lru"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Trailers Kustos writes at the end of each commit message. Kustos-Key names the Key the commit
// proposes; Kustos-Tree names the tree the commit was written with, so that a commit carrying
// Kustos's message over other content (a human's amend, which keeps the message) is not taken
// for Kustos's own.
const (
	TrailerKey  = "Kustos-Key"
	TrailerTree = "Kustos-Tree"
)

// ErrForeignHead: the open PR's head is a commit Kustos did not write; Propose neither
// overwrites nor adopts it (it matches lifecycle.ErrForeignCommit).
var ErrForeignHead = lifecycle.NewError("pr: the branch head is a commit Kustos did not write", lifecycle.ErrForeignCommit)

// ForeignHeadError is ErrForeignHead for the open pull request Number (at URL), which Kustos
// leaves to people: a Change that belongs in it can follow its fate instead of being dropped.
type ForeignHeadError struct {
	Number int
	URL    string
	err    error
}

func (e *ForeignHeadError) Error() string { return e.err.Error() }
func (e *ForeignHeadError) Unwrap() error { return e.err }

// IsOwnCommit reports whether cm is a commit Kustos wrote for key: its message carries exactly
// one Kustos-Key trailer naming key (or, for a group's commit, naming the group, with a
// Kustos-Member trailer naming key) and exactly one Kustos-Tree trailer naming cm's own tree.
//
// It is how Kustos recognises its head after a crash between pushing it and recording it in the
// Lease: the Lease's head is then the older commit, and without this the newer one would be
// taken for a human's and the PR disowned. Anyone who can push can copy the trailers, but only
// with the tree Kustos wrote, i.e. the content Kustos proposed: the check tells Kustos's content
// from a human's edit, which is what respecting a human's commit needs; it is not a signature.
func IsOwnCommit(cm *gh.Commit, key lifecycle.Key) bool {
	if cm == nil || key == "" {
		return false
	}
	keys, trees := trailerValues(cm.GetMessage(), TrailerKey), trailerValues(cm.GetMessage(), TrailerTree)
	if len(keys) != 1 || len(trees) != 1 || trees[0] == "" || trees[0] != cm.GetTree().GetSHA() {
		return false
	}
	if keys[0] == string(key) {
		return true
	}
	return lifecycle.Key(keys[0]).IsGroup() && slices.Contains(trailerValues(cm.GetMessage(), TrailerMember), string(key))
}

// trailerValues returns the values of every line "name: value" of msg's last paragraph (Git's
// trailer block).
func trailerValues(msg, name string) []string {
	msg = strings.TrimRight(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	if i := strings.LastIndex(msg, "\n\n"); i >= 0 {
		msg = msg[i+2:]
	}
	var out []string
	for _, line := range strings.Split(msg, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// ownCommits remembers which commits were found to be Kustos's (commits never change, so an
// answer holds for ever); bounded, so that a long-running process does not grow.
const ownCommitsCacheSize = 1024

// OwnCommit reports whether the commit sha is one Kustos wrote for key (IsOwnCommit), reading it
// from GitHub once.
func (w *Writer) OwnCommit(ctx context.Context, key lifecycle.Key, sha string) (bool, error) {
	v, err := w.commitFact(ctx, string(key), sha, func(cm *gh.Commit) any { return IsOwnCommit(cm, key) })
	if err != nil {
		return false, fmt.Errorf("pr: %s: %w", key, err)
	}
	own, _ := v.(bool)
	return own, nil
}

// CommitGroup returns the group Key of the commit sha when Kustos wrote it for a group: its
// single Kustos-Key trailer names a group and the commit is Kustos's own for it.
func (w *Writer) CommitGroup(ctx context.Context, sha string) (key lifecycle.Key, ok bool, err error) {
	v, err := w.commitFact(ctx, "\x00group", sha, func(cm *gh.Commit) any {
		if keys := trailerValues(cm.GetMessage(), TrailerKey); len(keys) == 1 {
			if k := lifecycle.Key(keys[0]); k.IsGroup() && IsOwnCommit(cm, k) {
				return k
			}
		}
		return lifecycle.Key("")
	})
	if err != nil {
		return "", false, fmt.Errorf("pr: %w", err)
	}
	key, _ = v.(lifecycle.Key)
	return key, key != "", nil
}

// CommitTargets returns the Keys whose Changes the commit sha carries, as its trailers name
// them: a group's members (Kustos-Member), or the single Key (Kustos-Key) of a commit of its
// own. A commit Kustos did not write carries none. A merge confirms exactly these targets.
func (w *Writer) CommitTargets(ctx context.Context, sha string) ([]lifecycle.Key, error) {
	v, err := w.commitFact(ctx, "\x00targets", sha, func(cm *gh.Commit) any {
		keys := trailerValues(cm.GetMessage(), TrailerKey)
		if len(keys) != 1 || !IsOwnCommit(cm, lifecycle.Key(keys[0])) {
			return []lifecycle.Key(nil)
		}
		if k := lifecycle.Key(keys[0]); !k.IsGroup() {
			return []lifecycle.Key{k}
		}
		var out []lifecycle.Key
		for _, m := range trailerValues(cm.GetMessage(), TrailerMember) {
			out = append(out, lifecycle.Key(m))
		}
		return out
	})
	if err != nil {
		return nil, fmt.Errorf("pr: %w", err)
	}
	keys, _ := v.([]lifecycle.Key)
	return keys, nil
}

// commitFact returns read of the commit sha, reading the commit from GitHub once per what (a
// commit never changes, so the answer holds for ever). An empty sha is read as no commit.
func (w *Writer) commitFact(ctx context.Context, what, sha string, read func(*gh.Commit) any) (any, error) {
	if sha == "" {
		return read(nil), nil
	}
	id := what + "\x00" + sha
	w.mu.Lock()
	if w.own == nil {
		w.own = lru.New(ownCommitsCacheSize)
	}
	v, ok := w.own.Get(id)
	w.mu.Unlock()
	if ok {
		return v, nil
	}
	cm, err := w.gh.GetCommit(ctx, sha)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", sha, err)
	}
	v = read(cm)
	w.mu.Lock()
	w.own.Add(id, v)
	w.mu.Unlock()
	return v, nil
}
