package index

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// The index's errors are lifecycle's, so that detectors match them without importing this
// package.
var (
	// ErrSourceNotFound: no document in the indexed paths defines the target.
	ErrSourceNotFound = lifecycle.ErrSourceNotFound
	// ErrSourceAmbiguous: several documents define the target; see *AmbiguousError.
	ErrSourceAmbiguous = lifecycle.ErrSourceAmbiguous
	// ErrSourceNotEditable: the target's values come from a kustomize patch or generator that a
	// plain edit of its document cannot change; see *NotEditableError.
	ErrSourceNotEditable = lifecycle.ErrSourceNotEditable
)

// NotFoundError says where the index looked.
type NotFoundError struct {
	Target lifecycle.Target
	Where  []string // path prefixes, or the resizer.io/git-path value
}

func (e *NotFoundError) Error() string {
	where := "the whole repository"
	if len(e.Where) > 0 && !(len(e.Where) == 1 && e.Where[0] == "") {
		where = strings.Join(e.Where, ", ")
	}
	return fmt.Sprintf("source not found: no manifest defines %s under %s", e.Target, where)
}

// Is makes errors.Is(err, ErrSourceNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrSourceNotFound }

// AmbiguousError lists every file that defines the target.
type AmbiguousError struct {
	Target lifecycle.Target
	Paths  []string // "path" or, when a file defines it twice, "path#doc"
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("source ambiguous: %s is defined in %d places: %s", e.Target, len(e.Paths), strings.Join(e.Paths, ", "))
}

// Is makes errors.Is(err, ErrSourceAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrSourceAmbiguous }

// NotEditableError names the kustomization and the patch or generator in the way.
type NotEditableError struct {
	Target        lifecycle.Target
	Location      *Location // the document, when there is one (patch case)
	Kustomization string    // path of the kustomization file
	Patch         string    // e.g. "patches[0] (path: quota-patch.yaml)"; empty for generators
	Generator     string    // e.g. "configMapGenerator[0] (settings)"
}

func (e *NotEditableError) Error() string {
	if e.Patch != "" {
		return fmt.Sprintf("source not editable: %s (%s#%d) is patched by %s in %s; edit the patch instead",
			e.Target, e.Location.Path, e.Location.Doc, e.Patch, e.Kustomization)
	}
	return fmt.Sprintf("source not editable: %s is produced by %s in %s", e.Target, e.Generator, e.Kustomization)
}

// Is makes errors.Is(err, ErrSourceNotEditable) true.
func (e *NotEditableError) Is(target error) bool { return target == ErrSourceNotEditable }

// Locate finds the one document that defines t under the index's path prefixes.
func (ix *Index) Locate(t lifecycle.Target) (Location, error) {
	ns := t.Namespace
	if clusterScopedKinds[t.Kind] {
		ns = ""
	}
	es := ix.byKey[Key{t.Group, t.Kind, ns, t.Name}]
	return ix.pick(t, es, ix.prefixes)
}

// LocateIn finds t in the file or below the directory p (slash-separated, relative to the
// repository root), as named by a namespace's resizer.io/git-path annotation, on the same index
// (the same files, the same namespaces) as Locate. A tenant who may edit its Namespace writes
// p, so before looking p is checked (CheckGitPath) and refused with a *GitPathError
// (ErrGitPathRefused) unless it is clean, lies under one of the index's path prefixes and
// names files that define objects of t's namespace only.
func (ix *Index) LocateIn(p string, t lifecycle.Target) (Location, error) {
	clean, err := ix.CheckGitPath(p, t.Namespace)
	if err != nil {
		return Location{}, err
	}
	var es []*entry
	for _, e := range ix.byKey[Key{t.Group, t.Kind, t.Namespace, t.Name}] {
		if under(e.Path, clean) {
			es = append(es, e)
		}
	}
	return ix.pick(t, es, []string{clean})
}

func (ix *Index) pick(t lifecycle.Target, es []*entry, where []string) (Location, error) {
	switch len(es) {
	case 0:
		if err := ix.generated(t, where); err != nil {
			return Location{}, err
		}
		return Location{}, &NotFoundError{Target: t, Where: where}
	case 1:
	default:
		count := map[string]int{}
		for _, e := range es {
			count[e.Path]++
		}
		var paths []string
		for _, e := range es {
			if count[e.Path] > 1 {
				paths = append(paths, fmt.Sprintf("%s#%d", e.Path, e.Doc))
			} else {
				paths = append(paths, e.Path)
			}
		}
		sort.Strings(paths)
		return Location{}, &AmbiguousError{Target: t, Paths: paths}
	}
	e := es[0]
	for _, k := range e.kusts {
		for i := range k.patches {
			if k.patches[i].matches(e, k) {
				loc := e.Location
				return Location{}, &NotEditableError{Target: t, Location: &loc, Kustomization: k.path, Patch: k.patches[i].desc}
			}
		}
	}
	return e.Location, nil
}

// generated reports a generator (configMapGenerator, secretGenerator, helmCharts) under where
// that produces t.
func (ix *Index) generated(t lifecycle.Target, where []string) error {
	for _, k := range ix.kusts {
		inWhere := false
		for _, w := range where {
			if under(k.path, w) {
				inWhere = true
			}
		}
		if !inWhere {
			continue
		}
		for _, g := range k.generators {
			if g.kind != "" && (t.Group != "" || g.kind != t.Kind || !generatedName(g.name, t.Name)) {
				continue
			}
			overrides := k.overrides
			if len(overrides) == 0 {
				overrides = []string{""}
			}
			for _, o := range overrides {
				ns := o
				if ns == "" {
					ns = g.namespace
				}
				if ns == "" {
					ns = k.namespace
				}
				if ns == t.Namespace || (g.kind != "" && ns == "") {
					return &NotEditableError{Target: t, Kustomization: k.path, Generator: g.desc}
				}
			}
		}
	}
	return nil
}

// generatedName: a generated ConfigMap/Secret is named "<name>-<hash>" unless the hash suffix is
// disabled.
func generatedName(base, name string) bool {
	if name == base {
		return true
	}
	rest, ok := strings.CutPrefix(name, base+"-")
	return ok && len(rest) == 10 && !strings.ContainsAny(rest, "-.")
}
