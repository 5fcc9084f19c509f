package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kustos-dev/kustos/internal/doccheck"
)

// TestInstallDocGitOpsExamples: the Argo CD Application and the Flux HelmRelease of
// docs/install.md install this chart at its version, into kustos-system, with values the chart
// and its schema accept, and render what `helm template` renders with the same values.
func TestInstallDocGitOpsExamples(t *testing.T) {
	root := filepath.Dir(filepath.Dir(chartDir(t)))
	md, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	chart, err := doccheck.ReadChart(root)
	if err != nil {
		t.Fatal(err)
	}
	var app, release map[string]any
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(md), -1) {
		for _, doc := range strings.Split(block[1], "\n---\n") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("a YAML example of docs/install.md does not parse: %v\n%s", err, doc)
			}
			switch obj["kind"] {
			case "Application":
				app = obj
			case "HelmRelease":
				release = obj
			}
		}
	}
	if app == nil || release == nil {
		t.Fatalf("docs/install.md has no Argo CD Application (%v) or no Flux HelmRelease (%v) example", app != nil, release != nil)
	}
	for _, tc := range []struct {
		tool                      string
		version, namespace, chart any
		values                    any
	}{
		{"Argo CD", dig(app, "spec", "source", "targetRevision"), dig(app, "spec", "destination", "namespace"), dig(app, "spec", "source", "chart"),
			dig(app, "spec", "source", "helm", "valuesObject")},
		{"Flux", dig(release, "spec", "chart", "spec", "version"), dig(release, "metadata", "namespace"), dig(release, "spec", "chart", "spec", "chart"),
			dig(release, "spec", "values")},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			if tc.version != chart.Version || tc.namespace != "kustos-system" || tc.chart != "kustos" {
				t.Errorf("installs chart %v %v into %v, want kustos %s into kustos-system", tc.chart, tc.version, tc.namespace, chart.Version)
			}
			values, err := yaml.Marshal(tc.values)
			if err != nil || tc.values == nil {
				t.Fatalf("no values (%v)", err)
			}
			file := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(file, values, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := helm("template", "kustos", chartDir(t), "--namespace", "kustos-system", "-f", file)
			if err != nil {
				t.Fatalf("the chart refuses the %s example's values: %v\n%s", tc.tool, err, values)
			}
			for _, want := range []string{"kind: Deployment", "- --mode=observe\n", "- --enable-expiry=true\n"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the %s example's values render no %q", tc.tool, want)
				}
			}
		})
	}
}

// dig reads a nested field of a decoded object; nil when a step is missing.
func dig(obj map[string]any, path ...string) any {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}
