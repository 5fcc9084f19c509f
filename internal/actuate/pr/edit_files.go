package pr

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"

	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
)

// FileChange is one file of a proposal's commit.
type FileChange struct {
	// Path is slash-separated, relative to the repository root.
	Path string
	// Content is the file's new content; nil deletes the file.
	Content []byte
}

// kustomizationNames are the file names kustomize reads as a directory's kustomization.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// unlist returns the edits that take the deleted file p out of every kustomization that lists
// it directly: the kustomizations the index knows under the --git-path prefixes (the index p
// was found in, with or without a git-path override, which lies under them) and the
// kustomization in p's own directory. Kustomizations that list p's directory are left alone.
// The edits are in path order.
//
// edited holds the files an earlier edit of the same commit changed (another deleted file taken
// out of the same kustomization); a kustomization is edited from its content there when it is.
func (w *Writer) unlist(snap Snapshot, p string, edited map[string][]byte) ([]FileChange, error) {
	ix, err := w.index(snap, w.cfg.Paths)
	if err != nil {
		return nil, err
	}
	candidates := ix.ListedIn(p)
	for _, name := range kustomizationNames {
		k := path.Join(path.Dir(p), name)
		if _, err := fs.Stat(snap, k); err == nil && !slices.Contains(candidates, k) {
			candidates = append(candidates, k)
		}
	}
	sort.Strings(candidates)
	var out []FileChange
	for _, k := range candidates {
		content, ok := edited[k]
		if !ok {
			if content, err = fs.ReadFile(snap, k); err != nil {
				return nil, fmt.Errorf("read %s to take out %s: %w", k, p, err)
			}
		}
		next, removed, err := yamledit.RemoveResource(content, k, p)
		if err != nil {
			return nil, fmt.Errorf("take %s out of %s: %w", p, k, err)
		}
		if len(removed) > 0 {
			out = append(out, FileChange{Path: k, Content: next})
		}
	}
	return out, nil
}
