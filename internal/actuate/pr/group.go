package pr

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Member is one target's Change in a group's proposal, with its own proposal options (the
// namespace's git-path override: a group by owner spans namespaces).
type Member struct {
	Change  lifecycle.Change
	GitPath string
}

// MemberResult is what proposing a group did with one member.
type MemberResult struct {
	// Included: the member's edit is in the group's commit.
	Included bool
	// AlreadyInBase: the base already holds the member's change (or, for a deletion, no
	// longer defines the target): it is done and not in the commit.
	AlreadyInBase bool
	// Err is why the member could not be proposed (its manifest is missing, ambiguous, not
	// editable, or no longer holds what the detector saw); it is not in the commit, and the
	// group's other members are proposed without it.
	Err error
	// Location and Fields are the member's manifest document and field changes (Included).
	Location index.Location
	Fields   []yamledit.FieldResult
}

// GroupResult is what ProposeGroup found and did: the group's one PR, as Result says for a
// single Change, and each member's part.
type GroupResult struct {
	Result
	Members map[lifecycle.Key]MemberResult
}

// GroupBranch is the head branch of a group's PR:
// kustos/<cluster>/<detector>/group-<by>/<value>, each part a valid ref component.
func (w *Writer) GroupBranch(g lifecycle.Key) string {
	detector, by, value, _ := g.GroupParts()
	parts := []string{"kustos"}
	if w.cfg.Cluster != "" {
		parts = append(parts, refComponent(w.cfg.Cluster))
	}
	parts = append(parts, refComponent(detector), refComponent("group-"+by))
	for _, v := range strings.Split(value, "/") {
		parts = append(parts, refComponent(v))
	}
	return strings.Join(parts, "/")
}

// ProposeGroup makes sure exactly one open PR proposes every member's Change in one commit on
// the base head (one file edit per member; a file left without documents is deleted and taken
// out of the kustomizations that list it), with a body that lists each member. head is the
// commit the group's Lease records as Kustos's own on its open PR.
//
// A member that cannot be proposed is left out and said so in Members; the error is returned
// only when nothing could be written. When no member is left to propose, nothing is written
// and Result.AlreadyInBase tells whether every member is done.
func (w *Writer) ProposeGroup(ctx context.Context, g lifecycle.Group, members []Member, head string) (GroupResult, error) {
	out := GroupResult{Members: map[lifecycle.Key]MemberResult{}}
	if !g.Key.IsGroup() {
		return out, fmt.Errorf("%w: %q is not a group key", ErrInvalidChange, g.Key)
	}
	for _, m := range members {
		if err := validate(m.Change); err != nil {
			out.Members[m.Change.Key] = MemberResult{Err: err}
		}
	}
	out.Branch = w.GroupBranch(g.Key)
	base, snap, err := w.baseHead(ctx, g.Key)
	if err != nil {
		return out, err
	}
	files, included, err := w.groupEdits(ctx, snap, members, out.Members)
	if err != nil {
		return out, fmt.Errorf("pr: %s: %w", g.Key, err)
	}
	if len(included) == 0 {
		out.AlreadyInBase = true
		for _, m := range out.Members {
			if !m.AlreadyInBase {
				out.AlreadyInBase = false
			}
		}
		return out, nil
	}
	title := GroupTitle(g, included)
	err = w.publish(ctx, &out.Result, publication{
		key: g.Key, base: base, snap: snap, files: files, title: title,
		body: GroupBody(g, included, out.Members, files, w.cfg.Cluster), head: head,
		message: func(title, tree string) string { return GroupCommitMessage(g.Key, included, title, tree) },
	})
	return out, err
}

// groupEdits edits every member's manifest on the snapshot. Edits of one file are applied in
// descending document order, so that deleting a document never moves one still to be edited.
// It returns the commit's files in path order and the members included, in the order given.
func (w *Writer) groupEdits(ctx context.Context, snap Snapshot, members []Member, results map[lifecycle.Key]MemberResult) ([]FileChange, []lifecycle.Change, error) {
	type located struct {
		m   Member
		loc index.Location
	}
	byPath := map[string][]located{}
	var paths []string
	for _, m := range members {
		c := m.Change
		if _, failed := results[c.Key]; failed {
			continue
		}
		loc, err := w.locate(ctx, snap, c, m.GitPath)
		switch {
		case c.Edit.Op == lifecycle.EditDelete && errors.Is(err, index.ErrSourceNotFound):
			results[c.Key] = MemberResult{AlreadyInBase: true} // the manifest is gone: the deletion is done
			continue
		case err != nil:
			results[c.Key] = MemberResult{Err: err}
			continue
		}
		if _, ok := byPath[loc.Path]; !ok {
			paths = append(paths, loc.Path)
		}
		byPath[loc.Path] = append(byPath[loc.Path], located{m, loc})
	}
	sort.Strings(paths)
	edited := map[string][]byte{}
	var emptied []string
	for _, p := range paths {
		content, err := fs.ReadFile(snap, p)
		if err != nil {
			for _, l := range byPath[p] {
				results[l.m.Change.Key] = MemberResult{Err: fmt.Errorf("read %s: %w", p, err)}
			}
			continue
		}
		ls := byPath[p]
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].loc.Doc > ls[j].loc.Doc })
		changed, deleted := false, false
		for _, l := range ls {
			c := l.m.Change
			if done, err := yamledit.Edit(content, l.loc.Doc, withoutFrom(c.Edit)); err == nil && !done.Changed {
				results[c.Key] = MemberResult{AlreadyInBase: true}
				continue
			}
			ed, err := yamledit.Edit(content, l.loc.Doc, c.Edit)
			if err != nil {
				results[c.Key] = MemberResult{Err: fmt.Errorf("edit %s#%d: %w", l.loc.Path, l.loc.Doc, err)}
				continue
			}
			if !ed.Changed {
				results[c.Key] = MemberResult{AlreadyInBase: true}
				continue
			}
			content, changed = ed.Out, true
			deleted = deleted || ed.Deleted
			results[c.Key] = MemberResult{Included: true, Location: l.loc, Fields: ed.Fields}
		}
		if !changed {
			continue
		}
		if deleted && len(yamledit.Documents(content)) == 0 {
			edited[p] = nil
			emptied = append(emptied, p)
			continue
		}
		edited[p] = content
	}
	// Files left without documents are deleted and taken out of the kustomizations that list
	// them; two files of one kustomization edit it in turn.
	for _, p := range emptied {
		unlisted, err := w.unlist(snap, p, edited)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range unlisted {
			edited[f.Path] = f.Content
		}
	}
	files := make([]FileChange, 0, len(edited))
	for p, content := range edited {
		files = append(files, FileChange{Path: p, Content: content})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var included []lifecycle.Change
	for _, m := range members {
		if results[m.Change.Key].Included {
			included = append(included, m.Change)
		}
	}
	return files, included, nil
}
