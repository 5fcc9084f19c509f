package scope

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Builder decodes a YAML stream into the objects helm's uninstall acts on, bound to the release's
// namespace, which an object without a namespace is given (Decoder).
type Builder interface {
	Build(reader io.Reader) ([]Object, error)
}

// maxNamed bounds the offences an Error lists: enough to fix a release, never an Event that a
// manifest of thousands of documents could fill.
const maxNamed = 5

// maxName bounds each tenant-written name in a message (Kubernetes names have up to 253).
const maxName = 100

// Error is a release Kustos refuses to uninstall, and why. It matches
// lifecycle.ErrOutsideNamespace.
type Error struct {
	Namespace, Release string
	Revision           int
	// Offences are the first maxNamed objects that make it so, the manifest's first (in its
	// order), then the hooks' (in the record's order); More counts the others.
	Offences []Offence
	More     int
}

// Offence is one object, or one document, of a release that Kustos must not act on.
type Offence struct {
	// In is where it is: "the manifest", "the pre-delete hook planted", "the release record".
	In string
	// Object names it: "ConfigMap team-b/victim", "ClusterRole.rbac.authorization.k8s.io admin",
	// "document 3".
	Object string
	// Why completes "<Object> …": "is in namespace team-b", "is of a cluster-scoped kind".
	Why string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "helm release %s/%s (revision %d) reaches outside its namespace: ", e.Namespace, e.Release, e.Revision)
	for i, o := range e.Offences {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s %s", o.In, o.Object, o.Why)
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "; and %d more", e.More)
	}
	fmt.Fprintf(&b, "; Kustos uninstalls a release only when every object of its manifest and hooks is namespaced and in %s", e.Namespace)
	return b.String()
}

// Unwrap makes a refusal match lifecycle.ErrOutsideNamespace, which the detectors know.
func (e *Error) Unwrap() error { return lifecycle.ErrOutsideNamespace }

// Check returns nil when uninstalling rel (release name in namespace) as helm does touches only
// namespaced objects in namespace, and an *Error naming the objects otherwise. It decodes what
// helm's uninstall decodes: every document of the manifest, split as helm splits it (also those
// helm would keep or treat as hooks: checking more than helm deletes only refuses more), and the
// manifest of every hook (not only the delete hooks: a stored release says which events a hook
// has, and refusing a release never harms a namespace). b must be bound to namespace.
//
// A document that cannot be decoded, or whose kind the API server does not serve (b's
// RESTMapper), refuses the release: Kustos cannot tell where it would act. Its error text is
// never passed on, since the decoder's messages quote the document (a Secret's data, say); only
// a YAML line number is.
func Check(b Builder, namespace, name string, rel *release.Release) error {
	if namespace == "" || rel == nil {
		return errors.New("scope: no namespace or no release")
	}
	c := &checker{err: &Error{Namespace: namespace, Release: name, Revision: rel.Version}}
	if rel.Name != name || rel.Namespace != namespace {
		// Helm purges history by the record's name, and reads hook logs in its namespace.
		c.add(Offence{In: "the release record", Object: "names release " + clean(rel.Namespace) + "/" + clean(rel.Name),
			Why: "instead of " + namespace + "/" + name})
	}
	manifests := releaseutil.SplitManifests(rel.Manifest)
	keys := make([]string, 0, len(manifests))
	for k := range manifests {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for i, k := range keys {
		c.objects(b, namespace, "the manifest", fmt.Sprintf("document %d", i+1), manifests[k])
	}
	for i, h := range rel.Hooks {
		if h == nil {
			continue
		}
		c.objects(b, namespace, hookName(i, h), "its manifest", h.Manifest)
	}
	if len(c.err.Offences) == 0 {
		return nil
	}
	return c.err
}

type checker struct{ err *Error }

func (c *checker) add(o Offence) {
	if len(c.err.Offences) < maxNamed {
		c.err.Offences = append(c.err.Offences, o)
		return
	}
	c.err.More++
}

// objects decodes text with b and records every object outside namespace, and the document
// itself when it cannot be decoded (what did decode is checked all the same).
func (c *checker) objects(b Builder, namespace, in, doc, text string) {
	objs, err := b.Build(strings.NewReader(text))
	for _, info := range objs {
		obj := describe(info)
		switch {
		case info.Mapping == nil:
			c.add(Offence{In: in, Object: obj, Why: "is of a kind the API server does not serve"})
		case info.Mapping.Scope == nil || info.Mapping.Scope.Name() != meta.RESTScopeNameNamespace:
			c.add(Offence{In: in, Object: obj, Why: "is of a cluster-scoped kind"})
		case info.Namespace != namespace:
			c.add(Offence{In: in, Object: obj, Why: "is in namespace " + clean(info.Namespace)})
		}
	}
	if err != nil {
		c.add(Offence{In: in, Object: describeDoc(doc, text), Why: why(err)})
	}
}

// describe names a decoded object: Kind[.group] [namespace/]name.
func describe(info Object) string {
	kind := ""
	if info.Mapping != nil {
		gvk := info.Mapping.GroupVersionKind
		kind = gvk.Kind
		if gvk.Group != "" {
			kind += "." + gvk.Group
		}
	} else if info.Obj != nil {
		gvk := info.Obj.GroupVersionKind()
		kind = gvk.Kind
		if gvk.Group != "" {
			kind += "." + gvk.Group
		}
	}
	name := clean(info.Name)
	if info.Namespace != "" && (info.Mapping == nil || info.Mapping.Scope == nil || info.Mapping.Scope.Name() == meta.RESTScopeNameNamespace) {
		name = clean(info.Namespace) + "/" + name
	}
	return clean(kind) + " " + name
}

// describeDoc names a document that did not decode by what its head says, when that much can be
// read.
func describeDoc(doc, text string) string {
	var head releaseutil.SimpleHead
	if err := yaml.Unmarshal([]byte(text), &head); err == nil && head.Kind != "" && head.Metadata != nil && head.Metadata.Name != "" {
		return fmt.Sprintf("%s (%s %s)", doc, clean(head.Kind), clean(head.Metadata.Name))
	}
	return doc
}

var yamlLine = regexp.MustCompile(`yaml: line (\d+)`)

// why says why a document did not decode, without quoting it.
func why(err error) string {
	if noKind := noKindMatch(err); noKind != nil {
		k := noKind.GroupKind.Kind
		if noKind.GroupKind.Group != "" {
			k += "." + noKind.GroupKind.Group
		}
		return "is of a kind the API server does not serve (" + clean(k) + ")"
	}
	if meta.IsNoMatchError(err) {
		return "is of a kind the API server does not serve"
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return "is not valid YAML (line " + m[1] + ")"
	}
	return "cannot be decoded as a Kubernetes object"
}

// noKindMatch finds a NoKindMatchError in err's tree, which also holds the builder's aggregates
// (errors.As does not look into those).
func noKindMatch(err error) *meta.NoKindMatchError {
	var noKind *meta.NoKindMatchError
	if errors.As(err, &noKind) {
		return noKind
	}
	if agg, ok := err.(interface{ Errors() []error }); ok {
		for _, e := range agg.Errors() {
			if k := noKindMatch(e); k != nil {
				return k
			}
		}
	}
	return nil
}

// hookName names the i-th hook of a record: "the pre-delete hook planted".
func hookName(i int, h *release.Hook) string {
	events := make([]string, 0, len(h.Events))
	for _, e := range h.Events {
		events = append(events, clean(string(e)))
	}
	name := h.Name
	if name == "" {
		name = h.Path
	}
	if name == "" {
		name = fmt.Sprintf("#%d", i+1)
	}
	if len(events) == 0 {
		return "the hook " + clean(name)
	}
	return "the " + strings.Join(events, ",") + " hook " + clean(name)
}

// Clean is clean, for the messages of the uninstall that name what a tenant wrote.
func Clean(s string) string { return clean(s) }

// clean makes a tenant-written string safe for one line of an Event or a log: printable, at
// most maxName runes.
func clean(s string) string {
	if s == "" {
		return `""`
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxName {
			b.WriteString("…")
			break
		}
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
