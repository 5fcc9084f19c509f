package yamledit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestFluxCasesBreakUnderReserialization: each testdata/flux-* input is one that parsing and
// writing back with kyaml (what a re-serializing editor such as Flux's image automation does)
// does not reproduce byte for byte. Their goldens, which keep every untouched byte, therefore
// test something re-serialization gets wrong: comments re-indented, sequence indentation
// normalised, blank lines dropped, block scalars re-folded, a leading "---" lost.
func TestFluxCasesBreakUnderReserialization(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "flux-*", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 5 {
		t.Fatalf("only %d flux-* cases", len(inputs))
	}
	for _, p := range inputs {
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) {
			in, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var docs []string
			for _, s := range Documents(in) {
				rn, err := yaml.Parse(string(in[s.Start:s.End]))
				if err != nil {
					t.Fatal(err)
				}
				out, err := rn.String()
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, out)
			}
			if strings.Join(docs, "---\n") == string(in) {
				t.Errorf("kyaml writes %s back unchanged: the case proves nothing about re-serialization", p)
			}
		})
	}
}
