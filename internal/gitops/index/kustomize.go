package index

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kustos-dev/kustos/internal/gitops/yamledit"
)

// kust is one kustomization file.
type kust struct {
	path, dir  string
	namespace  string
	resources  []string
	files      []string // manifest files it lists directly
	children   []*kust  // kustomizations it lists (directories)
	parents    int
	overrides  []string // namespaces imposed by outer kustomizations ("" = none), one per build
	patches    []patchRule
	patchFiles []string // files used as patches: not manifests
	pendingSMP []pendingPatch
	generators []generator
}

type patchTarget struct {
	Group              string `yaml:"group"`
	Version            string `yaml:"version"`
	Kind               string `yaml:"kind"`
	Name               string `yaml:"name"`
	Namespace          string `yaml:"namespace"`
	LabelSelector      string `yaml:"labelSelector"`
	AnnotationSelector string `yaml:"annotationSelector"`
}

type patchEntry struct {
	Path   string       `yaml:"path"`
	Patch  string       `yaml:"patch"`
	Target *patchTarget `yaml:"target"`
}

type generatorArgs struct {
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace"`
}

type helmChart struct {
	Name        string `yaml:"name"`
	ReleaseName string `yaml:"releaseName"`
	Namespace   string `yaml:"namespace"`
}

type kustFile struct {
	Namespace             string          `yaml:"namespace"`
	Resources             []string        `yaml:"resources"`
	Bases                 []string        `yaml:"bases"`
	Components            []string        `yaml:"components"`
	Patches               []patchEntry    `yaml:"patches"`
	PatchesStrategicMerge []string        `yaml:"patchesStrategicMerge"`
	PatchesJSON6902       []patchEntry    `yaml:"patchesJson6902"`
	ConfigMapGenerator    []generatorArgs `yaml:"configMapGenerator"`
	SecretGenerator       []generatorArgs `yaml:"secretGenerator"`
	HelmCharts            []helmChart     `yaml:"helmCharts"`
}

// patchRule is one patch's target: which objects it changes.
type patchRule struct {
	desc                  string // e.g. `patches[0] (path: quota-patch.yaml)`
	group, kind, name, ns string // kustomize matches kind/name/group/namespace as regexps
	labelSel              labels.Selector
	annotationSel         bool // has an annotation selector (not evaluated: assume it matches)
	exact                 bool // strategic-merge patch identity: exact match, not regexp
	version               string
}

type pendingPatch struct {
	desc   string
	file   string // patch file path, or "" for inline
	inline string
}

type generator struct {
	desc      string
	kind      string // ConfigMap, Secret, or "" for a Helm chart (any kind)
	name      string
	namespace string
}

func readKust(fsys fs.FS, p string) (*kust, error) {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return nil, err
	}
	var kf kustFile
	if err := yaml.Unmarshal(b, &kf); err != nil {
		return nil, fmt.Errorf("kustomization: %w", err)
	}
	dir := path.Dir(p)
	k := &kust{path: p, dir: dir, namespace: kf.Namespace}
	k.resources = append(append(append(k.resources, kf.Resources...), kf.Bases...), kf.Components...)
	for i, pe := range kf.Patches {
		desc := describePatch("patches", i, pe)
		if pe.Path != "" {
			k.patchFiles = append(k.patchFiles, path.Join(dir, pe.Path))
		}
		if pe.Target != nil {
			r, err := ruleFromTarget(desc, pe.Target)
			if err != nil {
				return nil, fmt.Errorf("kustomization %s: %w", desc, err)
			}
			k.patches = append(k.patches, r)
			continue
		}
		pp := pendingPatch{desc: desc, inline: pe.Patch}
		if pe.Path != "" {
			pp.file = path.Join(dir, pe.Path)
		}
		k.pendingSMP = append(k.pendingSMP, pp)
	}
	for i, s := range kf.PatchesStrategicMerge {
		desc := fmt.Sprintf("patchesStrategicMerge[%d]", i)
		if !strings.Contains(s, "\n") && (strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml") || !strings.Contains(s, ":")) {
			f := path.Join(dir, s)
			k.patchFiles = append(k.patchFiles, f)
			k.pendingSMP = append(k.pendingSMP, pendingPatch{desc: desc + " (" + s + ")", file: f})
			continue
		}
		k.pendingSMP = append(k.pendingSMP, pendingPatch{desc: desc + " (inline)", inline: s})
	}
	for i, pe := range kf.PatchesJSON6902 {
		desc := describePatch("patchesJson6902", i, pe)
		if pe.Path != "" {
			k.patchFiles = append(k.patchFiles, path.Join(dir, pe.Path))
		}
		if pe.Target == nil {
			continue
		}
		r, err := ruleFromTarget(desc, pe.Target)
		if err != nil {
			return nil, fmt.Errorf("kustomization %s: %w", desc, err)
		}
		k.patches = append(k.patches, r)
	}
	for i, g := range kf.ConfigMapGenerator {
		k.generators = append(k.generators, generator{fmt.Sprintf("configMapGenerator[%d] (%s)", i, g.Name), "ConfigMap", g.Name, g.Namespace})
	}
	for i, g := range kf.SecretGenerator {
		k.generators = append(k.generators, generator{fmt.Sprintf("secretGenerator[%d] (%s)", i, g.Name), "Secret", g.Name, g.Namespace})
	}
	for i, h := range kf.HelmCharts {
		rel := h.ReleaseName
		if rel == "" {
			rel = h.Name
		}
		k.generators = append(k.generators, generator{fmt.Sprintf("helmCharts[%d] (%s, release %s)", i, h.Name, rel), "", "", h.Namespace})
	}
	return k, nil
}

func describePatch(field string, i int, pe patchEntry) string {
	switch {
	case pe.Path != "":
		return fmt.Sprintf("%s[%d] (path: %s)", field, i, pe.Path)
	case pe.Target != nil:
		return fmt.Sprintf("%s[%d] (inline, target %s/%s)", field, i, pe.Target.Kind, pe.Target.Name)
	}
	return fmt.Sprintf("%s[%d] (inline)", field, i)
}

func ruleFromTarget(desc string, t *patchTarget) (patchRule, error) {
	r := patchRule{desc: desc, group: t.Group, version: t.Version, kind: t.Kind, name: t.Name, ns: t.Namespace,
		annotationSel: t.AnnotationSelector != ""}
	if t.LabelSelector != "" {
		sel, err := labels.Parse(t.LabelSelector)
		if err != nil {
			return r, fmt.Errorf("label selector %q: %w", t.LabelSelector, err)
		}
		r.labelSel = sel
	}
	return r, nil
}

// loadPatchFiles turns target-less patches into rules from the patch documents' own identity.
// A patch file that cannot be read is recorded as an error of the kustomization.
func (k *kust) loadPatchFiles(fsys fs.FS, errs *[]FileError) {
	for _, pp := range k.pendingSMP {
		content := []byte(pp.inline)
		if pp.file != "" {
			b, err := fs.ReadFile(fsys, pp.file)
			if err != nil {
				*errs = append(*errs, FileError{k.path, fmt.Errorf("%s: %w", pp.desc, err)})
				continue
			}
			content = b
		}
		for _, s := range yamledit.Documents(content) {
			var m meta
			if err := yaml.Unmarshal(content[s.Start:s.End], &m); err != nil || m.Kind == "" {
				continue // a JSON 6902 list, or not a patch we can identify
			}
			k.patches = append(k.patches, patchRule{desc: pp.desc, group: m.group(), kind: m.Kind,
				name: m.Metadata.Name, ns: m.Metadata.Namespace, exact: true})
		}
	}
	k.pendingSMP = nil
}

// matches reports whether rule r targets entry e (as built by kustomization k).
func (r *patchRule) matches(e *entry, k *kust) bool {
	if !matchField(r.kind, e.key.Kind, r.exact) || !matchField(r.name, e.key.Name, r.exact) {
		return false
	}
	if r.group != "" && !matchField(r.group, e.key.Group, r.exact) {
		return false
	}
	if r.ns != "" {
		// Depending on where the patch runs the object may still carry its own or an inner
		// namespace: any of them counts.
		if !matchField(r.ns, e.key.Namespace, r.exact) && !matchField(r.ns, e.ownNS, r.exact) &&
			!matchField(r.ns, k.namespace, r.exact) {
			return false
		}
	}
	if r.labelSel != nil && !r.labelSel.Matches(labels.Set(e.labels)) {
		return false
	}
	return true
}

var (
	regexMu    sync.Mutex
	regexCache = map[string]*regexp.Regexp{}
)

// matchField matches like kustomize's target selector: empty matches all, otherwise the pattern
// is an anchored regular expression (exact for strategic-merge patch identities).
func matchField(pattern, value string, exact bool) bool {
	if pattern == "" || pattern == value {
		return true
	}
	if exact || !strings.ContainsAny(pattern, `.*+?()[]{}|^$\`) {
		return false
	}
	regexMu.Lock()
	re, ok := regexCache[pattern]
	if !ok {
		re, _ = regexp.Compile("^(?:" + pattern + ")$")
		regexCache[pattern] = re
	}
	regexMu.Unlock()
	return re != nil && re.MatchString(value)
}
