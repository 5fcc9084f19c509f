package scope

import (
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/api/meta"
)

// FuzzCheck: Check never panics, its refusal is one line, and what it accepts is what the
// uninstall then acts on: the manifest's documents as the uninstall decodes them for deletion
// (split and sorted as helm does, each built on its own) and every hook's manifest give only
// namespaced objects in the release's namespace, without an error.
func FuzzCheck(f *testing.F) {
	for _, seed := range []struct{ manifest, hook string }{
		{cm("a", "") + "---\n" + cm("b", "team-a"), cm("h", "")},
		{cm("a", "team-b"), ""},
		{"---\n# c\n---   # d\n" + cm("a", ""), "apiVersion: v1\nkind: List\nitems: []\n"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---x\n" + cm("b", "team-b"), cm("h", "") + "---\n" + cm("i", "team-b")},
		{"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n", "a: [\n"},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"a\/b"}}` + "\n---\n" + cm("b", ""), ""},
		{cm("a", "") + "...\n" + cm("b", "team-b"), "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"j\",\"namespace\":\"team-b\"}}"},
	} {
		f.Add(seed.manifest, seed.hook)
	}
	const ns = "team-a"
	b := builder(ns)
	f.Fuzz(func(t *testing.T, manifest, hookManifest string) {
		rel := &release.Release{Name: "web", Namespace: ns, Version: 1, Manifest: manifest}
		if hookManifest != "" {
			rel.Hooks = []*release.Hook{hook("h", "pre-delete", hookManifest)}
		}
		err := Check(b, ns, "web", rel)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("refusal is not one line: %q", err)
			}
			return
		}
		_, files, serr := releaseutil.SortManifests(releaseutil.SplitManifests(manifest), nil, releaseutil.UninstallOrder)
		if serr != nil {
			return // helm's uninstall stops here too: "corrupted release record"
		}
		texts := map[string]string{"the hook": hookManifest}
		for i, file := range files {
			texts[fmt.Sprintf("the manifest's document %d", i+1)] = file.Content
		}
		for what, text := range texts {
			objs, err := b.Build(strings.NewReader(text))
			if err != nil {
				t.Fatalf("accepted, but the uninstall's build of %s fails: %v", what, err)
			}
			for _, o := range objs {
				if o.Mapping == nil || o.Mapping.Scope.Name() != meta.RESTScopeNameNamespace || o.Namespace != ns || o.Obj.GetNamespace() != ns {
					t.Fatalf("accepted, but the uninstall's build of %s gives %s in %q", what, describe(o), o.Namespace)
				}
			}
		}
	})
}
