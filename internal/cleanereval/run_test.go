package cleanereval

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// TestExampleCleaner: a Knative preview's Cleaner against two inactive revisions. The latest went
// inactive at 2026-03-12T06:30:00Z, so the condition turns true exactly 360h later; the monotonic
// search finds that second.
func TestExampleCleaner(t *testing.T) {
	for _, tc := range []struct {
		now  string
		want []string
	}{
		{"2026-03-16T09:59:59Z", []string{
			`{"cleaner":"faststore-proxy/a-young-one","expired":false,"expiresAt":"2026-03-27T00:00:00Z","targets":{},"conditions":[],"due":false,"nextEvaluation":"2026-03-27T00:00:00Z","evaluations":0}`,
			`{"cleaner":"faststore-proxy/sfj-commit--account","expired":false,"expiresAt":"2026-03-16T10:00:00Z","targets":{"nginx":1,"revisions":2},"conditions":[],"due":false,"nextEvaluation":"2026-03-16T10:00:00Z","evaluations":0}`,
		}},
		{"2026-03-20T00:00:00Z", []string{
			`{"cleaner":"faststore-proxy/a-young-one","expired":false,"expiresAt":"2026-03-27T00:00:00Z","targets":{},"conditions":[],"due":false,"nextEvaluation":"2026-03-27T00:00:00Z","evaluations":0}`,
			`{"cleaner":"faststore-proxy/sfj-commit--account","expired":true,"expiresAt":"2026-03-16T10:00:00Z","targets":{"nginx":1,"revisions":2},"conditions":[{"index":0,"value":false}],"due":false,"nextEvaluation":"2026-03-27T06:30:00Z","evaluations":23}`,
		}},
		{"2026-03-27T06:30:00Z", []string{
			`{"cleaner":"faststore-proxy/a-young-one","expired":true,"expiresAt":"2026-03-27T00:00:00Z","targets":{},"conditions":[],"due":true,"nextEvaluation":null,"evaluations":1}`,
			`{"cleaner":"faststore-proxy/sfj-commit--account","expired":true,"expiresAt":"2026-03-16T10:00:00Z","targets":{"nginx":1,"revisions":2},"conditions":[{"index":0,"value":true}],"due":true,"nextEvaluation":null,"evaluations":1}`,
		}},
	} {
		t.Run(tc.now, func(t *testing.T) {
			code, out, errs := run(t, "", "-f", "testdata/cleaner.yaml", "-f", "testdata/objects.yaml", "--now", tc.now)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errs)
			}
			got := strings.Split(strings.TrimSpace(out), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, l := range got {
				if !json.Valid([]byte(l)) {
					t.Errorf("not JSON: %s", l)
				}
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cleaner := func(spec string) string {
		return "apiVersion: kustos.io/v1alpha1\nkind: Cleaner\nmetadata:\n  name: c\n  namespace: n\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\nspec:\n" + spec
	}
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{name: "CEL error with field path", file: write("a.yaml", "---\n# a comment\n"+cleaner("  ttl: 1d\n  conditions: ['true', 'time >']\n")),
			want: "a.yaml:3: Cleaner n/c: spec.conditions[1]: Invalid value: ERROR: <input>:1:7: Syntax error"},
		{name: "ttl", file: write("b.yaml", cleaner("  ttl: 5 days\n")), want: "b.yaml:1: Cleaner n/c: spec.ttl: Invalid value: \"5 days\""},
		{name: "type error in the Cleaner", file: write("c.yaml", cleaner("  ttl: 1d\n  conditions: true\n")), want: "c.yaml:1: Cleaner n/c:"},
		{name: "no creation time", file: write("d.yaml", "apiVersion: kustos.io/v1alpha1\nkind: Cleaner\nmetadata: {name: c}\nspec: {ttl: 1d}\n"), want: "d.yaml:1: Cleaner default/c: metadata.creationTimestamp is missing"},
		{name: "YAML syntax", file: write("e.yaml", "a: [\n"), want: "e.yaml:"},
		{name: "another namespace", file: write("g.yaml", cleaner("  ttl: 1d\n  targets:\n  - name: cm\n    reference: {version: v1, kind: ConfigMap, name: x, namespace: kube-system}\n")),
			want: "g.yaml:1: Cleaner n/c: spec.targets[0].reference.namespace: Forbidden: a Cleaner acts only in its own namespace"},
		{name: "bad --now", file: write("f.yaml", cleaner("  ttl: 1d\n")), args: []string{"--now", "yesterday"}, want: "invalid --now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, "", append([]string{"-f", tc.file}, tc.args...)...)
			if code != ExitUsage || out != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if !strings.Contains(errs, tc.want) {
				t.Fatalf("stderr %q; want it to contain %q", errs, tc.want)
			}
		})
	}
}
