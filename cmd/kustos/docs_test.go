package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/cli"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md from the flag definitions")

// docsFile is the command line reference, generated from the same definitions that parse the
// command line.
var docsFile = filepath.Join("..", "..", "docs", "cli.md")

// TestDocs fails when docs/cli.md is not what the flag definitions generate: a flag added,
// renamed or given another default without `make docs` (go test ./cmd/kustos -run TestDocs
// -update).
func TestDocs(t *testing.T) {
	var got bytes.Buffer
	cli.Markdown(&got, newRoot(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}))
	if *update {
		if err := os.MkdirAll(filepath.Dir(docsFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(docsFile, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatalf("%v (run make docs)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gotLines), len(wantLines)) {
			if gotLines[i] != wantLines[i] {
				t.Fatalf("docs/cli.md differs from the flag definitions at line %d (run make docs):\n file: %s\n code: %s", i+1, wantLines[i], gotLines[i])
			}
		}
		t.Fatalf("docs/cli.md has %d lines, the flag definitions make %d (run make docs)", len(wantLines), len(gotLines))
	}
	for _, want := range []string{"## kustos run", "## kustos expiry plan", "## kustos inactivity plan", "## kustos recommend", "## kustos status",
		"## kustos cleaner eval", "## kustos version", "| `--cooldown` | `KUSTOS_COOLDOWN` | `1h` |", "### PR mode / GitHub", "`never`"} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("docs/cli.md lacks %q", want)
		}
	}
}
