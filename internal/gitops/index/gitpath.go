package index

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// ErrGitPathRefused: a resizer.io/git-path that Kustos does not follow; see *GitPathError.
var ErrGitPathRefused = errors.New("git-path refused")

// GitPathError says why a namespace's resizer.io/git-path was refused.
type GitPathError struct {
	Path      string // as written (clipped in Error)
	Namespace string
	Reason    string
}

func (e *GitPathError) Error() string {
	return fmt.Sprintf("resizer.io/git-path %q of namespace %s refused: %s", lifecycle.Clip(e.Path, 200), e.Namespace, e.Reason)
}

// Is makes errors.Is(err, ErrGitPathRefused) true.
func (e *GitPathError) Is(target error) bool { return target == ErrGitPathRefused }

// CleanPath turns a repository path as a person writes it ("clusters/prod/", "./clusters//prod")
// into the slash-separated form the index uses ("clusters/prod"; "." and "./" are the whole
// repository, ""). It refuses what could name something other than it seems to: an empty path,
// an absolute one, any ".." segment (even one that cancels out), a backslash and control
// characters. --git-path and resizer.io/git-path go through it.
func CleanPath(p string) (string, error) {
	p = strings.TrimSpace(p)
	switch {
	case p == "":
		return "", errors.New("empty")
	case strings.HasPrefix(p, "/"):
		return "", errors.New("an absolute path; want a path relative to the repository root")
	case strings.ContainsRune(p, '\\'):
		return "", errors.New("a backslash; want slash-separated segments")
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", errors.New("a control character")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", errors.New(`a ".." segment`)
		}
	}
	return normPrefix(p), nil
}

// CheckGitPath checks p, a namespace's resizer.io/git-path, against the index, and returns it
// cleaned (CleanPath). p is refused (a *GitPathError) unless it
//
//   - is clean (CleanPath);
//   - lies under one of the index's path prefixes (--git-path), compared by whole segments:
//     "apps/team-a" does not hold "apps/team-ab";
//   - names files whose every document is an object of namespace (or that Namespace object
//     itself), with the namespaces the index gives them: a kustomization's namespace: wins over
//     a document's own, as kustomize builds it, and a file two kustomizations build into two
//     namespaces defines objects in both. A namespaced document that neither it nor a
//     kustomization gives a namespace is refused: it lands wherever the GitOps tool applies it
//     (an Argo CD Application's or a Flux Kustomization's target namespace), which the
//     repository does not say. So is any other cluster-scoped object.
//
// A path under which nothing is indexed is not refused (the lookup then finds nothing).
func (ix *Index) CheckGitPath(p, namespace string) (string, error) {
	refuse := func(reason string, args ...any) (string, error) {
		return "", &GitPathError{Path: p, Namespace: namespace, Reason: fmt.Sprintf(reason, args...)}
	}
	if namespace == "" {
		return refuse("only a namespaced target's manifest may be named")
	}
	clean, err := CleanPath(p)
	if err != nil {
		return refuse("%s", err)
	}
	inside := false
	for _, pre := range ix.prefixes {
		if under(clean, pre) {
			inside = true
			break
		}
	}
	if !inside {
		return refuse("not under --git-path (%s)", strings.Join(ix.prefixes, ", "))
	}
	// Files in path order, documents in file order: the first offending document is named.
	from := sort.SearchStrings(ix.paths, clean)
	for _, f := range ix.paths[from:] {
		if !under(f, clean) {
			if f > clean+"/" {
				break
			}
			continue
		}
		for _, e := range ix.byFile[f] {
			if e.Namespace == namespace {
				continue
			}
			at := fmt.Sprintf("%s#%d", e.Path, e.Doc)
			switch {
			case clusterScopedKinds[e.key.Kind]:
				if e.key.Kind == "Namespace" && e.key.Name == namespace {
					continue
				}
				return refuse("%s defines the cluster-scoped %s %s, not an object of namespace %s", at, e.key.Kind, e.key.Name, namespace)
			case e.Namespace == "":
				return refuse("%s defines %s %s without a namespace (neither the document nor a kustomization sets one): it lands wherever the GitOps tool applies it", at, e.key.Kind, e.key.Name)
			case e.Namespace != e.ownNS:
				return refuse("%s defines %s %s in namespace %s (set by a kustomization that builds it)", at, e.key.Kind, e.key.Name, e.Namespace)
			default:
				return refuse("%s defines %s %s in namespace %s", at, e.key.Kind, e.key.Name, e.Namespace)
			}
		}
	}
	return clean, nil
}
