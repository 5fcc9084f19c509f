package index

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
)

// Key identifies an object: API group ("" for core; versions of one group are one object),
// kind, namespace ("" for cluster-scoped or unknown) and name.
type Key struct {
	Group, Kind, Namespace, Name string
}

// Location is where an object is defined: a file (slash-separated, relative to the repository
// root), the index of the document in it (yamledit.Documents numbering) and the namespace the
// object gets once kustomize has run.
type Location struct {
	Path      string
	Doc       int
	Namespace string
}

// FileError is a file the index skipped because it could not be read or parsed.
type FileError struct {
	Path string
	Err  error
}

func (e FileError) Error() string { return e.Path + ": " + e.Err.Error() }

// entry is one indexed document under one effective namespace.
type entry struct {
	Location
	key    Key
	ownNS  string            // metadata.namespace as written
	labels map[string]string // metadata.labels
	// kusts holds every kustomization whose build includes this document with this
	// namespace (all levels of every chain).
	kusts []*kust
}

// Index is an immutable index of a repository's manifests; safe for concurrent use.
type Index struct {
	prefixes []string
	byKey    map[Key][]*entry
	kusts    []*kust
	errs     []FileError
	files    int
	docs     int

	// byFile holds each file's entries in document order; paths lists those files, sorted (a
	// git-path's files are a range of it).
	byFile map[string][]*entry
	paths  []string
}

// Errors returns the files that were skipped because they could not be read or parsed.
func (ix *Index) Errors() []FileError { return ix.errs }

// ListedIn returns the paths of the indexed kustomization files that list the file p
// (slash-separated, relative to the repository root) directly in resources, bases or
// components, in path order. A kustomization that lists a directory holding p does not list p.
func (ix *Index) ListedIn(p string) []string {
	p = path.Clean(p)
	var out []string
	for _, k := range ix.kusts {
		for _, f := range k.files {
			if f == p {
				out = append(out, k.path)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Files returns the number of manifest files indexed; Documents the number of objects.
func (ix *Index) Files() int     { return ix.files }
func (ix *Index) Documents() int { return ix.docs }

// normPrefix turns "clusters/prod/", "/clusters/prod" or "./clusters/prod" into
// "clusters/prod"; "" and "." (the whole repository) into "".
func normPrefix(p string) string {
	p = path.Clean("/" + strings.TrimSpace(p))
	return strings.TrimPrefix(p, "/")
}

func under(p, prefix string) bool {
	return prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/")
}

func isKustomization(name string) bool {
	switch name {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// Build indexes the .yaml/.yml files of fsys under any of prefixes (none or "": the whole
// repository). It only fails when fsys cannot be walked at all; bad files are in Errors.
func Build(fsys fs.FS, prefixes []string) (*Index, error) {
	ix := &Index{byKey: map[Key][]*entry{}, byFile: map[string][]*entry{}}
	for _, p := range prefixes {
		ix.prefixes = append(ix.prefixes, normPrefix(p))
	}
	if len(ix.prefixes) == 0 {
		ix.prefixes = []string{""}
	}
	inScope := func(p string) bool {
		for _, pre := range ix.prefixes {
			if under(p, pre) {
				return true
			}
		}
		return false
	}
	// A directory is walked when it is under a prefix or a prefix is under it.
	walkDir := func(p string) bool {
		if p == "." {
			return true
		}
		for _, pre := range ix.prefixes {
			if under(p, pre) || under(pre, p) {
				return true
			}
		}
		return false
	}

	var manifests []string
	kustByDir := map[string]*kust{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			ix.errs = append(ix.errs, FileError{p, err})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || !walkDir(p)) {
				return fs.SkipDir
			}
			return nil
		}
		if !inScope(p) {
			return nil
		}
		name := d.Name()
		if isKustomization(name) {
			if _, dup := kustByDir[path.Dir(p)]; dup {
				ix.errs = append(ix.errs, FileError{p, errors.New("more than one kustomization file in the directory")})
				return nil
			}
			k, err := readKust(fsys, p)
			if err != nil {
				ix.errs = append(ix.errs, FileError{p, err})
				return nil //nolint:nilerr // recorded in Errors and skipped: one bad file never fails the build
			}
			kustByDir[path.Dir(p)] = k
			return nil
		}
		if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
			manifests = append(manifests, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index: walk repository: %w", err)
	}

	isFile := map[string]bool{}
	for _, m := range manifests {
		isFile[m] = true
	}
	// Link kustomizations to their resources, in a stable order.
	dirs := make([]string, 0, len(kustByDir))
	for d := range kustByDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	patchFiles := map[string]bool{}
	for _, d := range dirs {
		k := kustByDir[d]
		ix.kusts = append(ix.kusts, k)
		for _, r := range k.resources {
			if strings.Contains(r, "://") || strings.HasPrefix(r, "git@") || strings.HasPrefix(r, "github.com/") {
				continue // remote bases are not in this repository
			}
			p := path.Join(d, r)
			if strings.HasPrefix(p, "../") || p == ".." {
				continue
			}
			if child, ok := kustByDir[p]; ok {
				k.children = append(k.children, child)
				child.parents++
			} else if isFile[p] {
				k.files = append(k.files, p)
			}
		}
		for _, f := range k.patchFiles {
			patchFiles[f] = true
		}
		k.loadPatchFiles(fsys, &ix.errs)
	}

	// Walk every kustomization tree from its roots: record, for each file, the namespace each
	// build gives it (outermost namespace: wins) and the kustomizations on the way.
	incl := map[string][]inclusion{}
	visited := map[*kust]bool{}
	var visit func(k *kust, override string, chain []*kust)
	visit = func(k *kust, override string, chain []*kust) {
		for _, c := range chain {
			if c == k {
				return // cycle
			}
		}
		visited[k] = true
		k.overrides = appendUnique(k.overrides, override)
		ns := override
		if ns == "" {
			ns = k.namespace
		}
		chain = append(chain[:len(chain):len(chain)], k)
		for _, f := range k.files {
			incl[f] = append(incl[f], inclusion{ns, chain})
		}
		for _, c := range k.children {
			visit(c, ns, chain)
		}
	}
	for _, k := range ix.kusts {
		if k.parents == 0 {
			visit(k, "", nil)
		}
	}
	for _, k := range ix.kusts {
		if !visited[k] {
			visit(k, "", nil)
		}
	}

	var todo []string
	for _, m := range manifests {
		if !patchFiles[m] {
			todo = append(todo, m)
		}
	}
	// Parse in parallel (YAML parsing is nearly all of the cost), index in walk order.
	parsed := make([]parsedFile, len(todo))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				parsed[i] = parseFile(fsys, todo[i])
			}
		}()
	}
	for i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, pf := range parsed {
		if pf.err != nil {
			ix.errs = append(ix.errs, FileError{todo[i], pf.err})
			continue
		}
		if pf.skip {
			continue
		}
		ix.addFile(todo[i], pf.metas, incl[todo[i]])
	}
	for p := range ix.byFile {
		ix.paths = append(ix.paths, p)
	}
	sort.Strings(ix.paths)
	return ix, nil
}

type parsedFile struct {
	metas []meta
	skip  bool
	err   error
}

func parseFile(fsys fs.FS, p string) parsedFile {
	content, err := fs.ReadFile(fsys, p)
	if err != nil {
		return parsedFile{err: err}
	}
	if bytes.Contains(content, []byte("{{")) {
		return parsedFile{skip: true} // a Helm (or other) template, not a manifest
	}
	spans := yamledit.Documents(content)
	metas := make([]meta, len(spans))
	for i, s := range spans {
		var n yaml.Node
		if err := yaml.Unmarshal(content[s.Start:s.End], &n); err != nil {
			return parsedFile{err: fmt.Errorf("document %d: %w", i, err)}
		}
		if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
			continue
		}
		if err := n.Content[0].Decode(&metas[i]); err != nil {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				return parsedFile{err: fmt.Errorf("document %d: %w", i, err)}
			}
		}
	}
	return parsedFile{metas: metas}
}

type inclusion struct {
	namespace string // "" when no kustomization on the way sets one
	chain     []*kust
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// meta is the part of a manifest the index reads.
type meta struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
}

func (m *meta) group() string {
	if i := strings.IndexByte(m.APIVersion, '/'); i >= 0 {
		return m.APIVersion[:i]
	}
	return ""
}

func (ix *Index) addFile(p string, metas []meta, incl []inclusion) {
	ix.files++
	for i := range metas {
		m := &metas[i]
		if m.APIVersion == "" || m.Kind == "" || m.Metadata.Name == "" {
			continue
		}
		ix.docs++
		clusterScoped := clusterScopedKinds[m.Kind]
		byNS := map[string]*entry{}
		var order []string
		add := func(ns string, kusts []*kust) {
			if clusterScoped {
				ns = ""
			}
			e := byNS[ns]
			if e == nil {
				e = &entry{
					Location: Location{Path: p, Doc: i, Namespace: ns},
					key:      Key{m.group(), m.Kind, ns, m.Metadata.Name},
					ownNS:    m.Metadata.Namespace,
					labels:   m.Metadata.Labels,
				}
				byNS[ns] = e
				order = append(order, ns)
			}
			for _, k := range kusts {
				if !containsKust(e.kusts, k) {
					e.kusts = append(e.kusts, k)
				}
			}
		}
		if len(incl) == 0 {
			add(m.Metadata.Namespace, nil)
		}
		for _, in := range incl {
			ns := in.namespace
			if ns == "" {
				ns = m.Metadata.Namespace
			}
			add(ns, in.chain)
		}
		for _, ns := range order {
			e := byNS[ns]
			ix.byKey[e.key] = append(ix.byKey[e.key], e)
			ix.byFile[p] = append(ix.byFile[p], e)
		}
	}
}

func containsKust(s []*kust, k *kust) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}

// clusterScopedKinds are kinds kustomize's namespace transformer leaves alone.
var clusterScopedKinds = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"CustomResourceDefinition": true, "PersistentVolume": true, "StorageClass": true,
	"PriorityClass": true, "ValidatingWebhookConfiguration": true,
	"MutatingWebhookConfiguration": true, "APIService": true, "IngressClass": true,
	"RuntimeClass": true, "CSIDriver": true, "Node": true, "ClusterIssuer": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}
