package yamledit

import (
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// FuzzApply: arbitrary YAML and a fixed set-field edit must never panic; when Apply succeeds,
// the edited document re-parses and holds the new value.
func FuzzApply(f *testing.F) {
	f.Add("spec:\n  hard:\n    requests.cpu: \"10\"\n")
	f.Add("a: 1\n---\nspec: {hard: {requests.cpu: 10}}\n")
	f.Add("spec:\n  hard: ~\n")
	path := []string{"spec", "hard", "requests.cpu"}
	edit := lifecycle.Edit{Op: lifecycle.EditSetFields, Fields: []lifecycle.FieldChange{{Path: path, To: "12"}}}
	f.Fuzz(func(t *testing.T, content string) {
		out, changed, err := Apply([]byte(content), 0, edit)
		if err != nil {
			return
		}
		if !changed && string(out) != content {
			t.Fatalf("changed=false but output differs")
		}
		docs := Documents(out)
		if len(docs) == 0 {
			t.Fatalf("no document in output %q", out)
		}
		var d yaml.Node
		if err := yaml.Unmarshal(out[docs[0].Start:docs[0].End], &d); err != nil {
			t.Fatalf("output does not parse: %v\n%q", err, out)
		}
		n := d.Content[0]
		for _, k := range path {
			if n == nil || n.Kind != yaml.MappingNode {
				t.Fatalf("path missing in output %q", out)
			}
			n = lookup(n, k)
		}
		if n == nil || n.Value != "12" {
			t.Fatalf("field not set in output %q", out)
		}
		// Every other document is byte-identical.
		in := Documents([]byte(content))
		if len(in) != len(docs) {
			t.Fatalf("document count %d → %d", len(in), len(docs))
		}
		for i := 1; i < len(in); i++ {
			if content[in[i].Start:in[i].End] != string(out[docs[i].Start:docs[i].End]) {
				t.Fatalf("document %d changed", i)
			}
		}
	})
}

// FuzzRemoveResource: arbitrary kustomization content must never panic; when RemoveResource
// removes entries, the result re-parses and no entry of its resources list names the file any
// more.
func FuzzRemoveResource(f *testing.F) {
	f.Add("resources:\n  # the quota\n  - quota.yaml # q\n  - deploy.yaml\n")
	f.Add("resources: [deploy.yaml, ./quota.yaml, svc.yaml]\n")
	f.Add("resources:\r\n- ./quota.yaml\r\n")
	f.Add("resources: ['quota.yaml']\n")
	f.Fuzz(func(t *testing.T, content string) {
		out, removed, err := RemoveResource([]byte(content), "apps/kustomization.yaml", "apps/quota.yaml")
		if err != nil {
			return
		}
		if len(removed) == 0 {
			if string(out) != content {
				t.Fatalf("nothing removed but the output differs")
			}
			return
		}
		var k struct {
			Resources []any `yaml:"resources"`
		}
		if err := yaml.Unmarshal(out, &k); err != nil {
			t.Fatalf("output does not parse: %v\n%q", err, out)
		}
		for _, r := range k.Resources {
			if s, ok := r.(string); ok && namesFile("apps", s, "apps/quota.yaml") {
				t.Fatalf("entry %q still names the file in %q", r, out)
			}
		}
	})
}

// FuzzSetAnnotations: arbitrary YAML and annotation values must never panic; when Edit
// succeeds, the edited document decodes with every annotation the intended string and every
// other document byte-identical.
func FuzzSetAnnotations(f *testing.F) {
	f.Add("metadata:\n  name: a\n", "true")
	f.Add("metadata:\n  annotations:\n    kustos.dev/b: 3\n", "2026-01-01T00:00:00Z")
	f.Add("metadata: {annotations: {}}\n---\nb: 1\n", "")
	f.Add("# c\nmetadata:\n  annotations: ~\n", "a: b")
	f.Fuzz(func(t *testing.T, content, value string) {
		want := map[string]string{"kustos.dev/a": value, "kustos.dev/b": "x" + value}
		res, err := Edit([]byte(content), 0, lifecycle.Edit{Op: lifecycle.EditSetAnnotations, Annotations: want})
		if err != nil {
			return
		}
		docs := Documents(res.Out)
		if len(docs) == 0 {
			t.Fatalf("no document in output %q", res.Out)
		}
		var obj struct {
			Metadata struct {
				Annotations map[string]any `yaml:"annotations"`
			} `yaml:"metadata"`
		}
		if err := yaml.Unmarshal(res.Out[docs[0].Start:docs[0].End], &obj); err != nil {
			t.Fatalf("output does not decode: %v\n%q", err, res.Out)
		}
		for k, v := range want {
			if s, ok := obj.Metadata.Annotations[k].(string); !ok || s != v {
				t.Fatalf("annotation %s = %#v, want %q in %q", k, obj.Metadata.Annotations[k], v, res.Out)
			}
		}
		in := Documents([]byte(content))
		if len(in) != len(docs) {
			t.Fatalf("document count %d → %d", len(in), len(docs))
		}
		for i := 1; i < len(in); i++ {
			if content[in[i].Start:in[i].End] != string(res.Out[docs[i].Start:docs[i].End]) {
				t.Fatalf("document %d changed", i)
			}
		}
	})
}
