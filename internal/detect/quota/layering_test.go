package quota

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/kustos-dev/kustos/"

// TestLayering enforces DESIGN.md's package table: a detector imports, of ours, only the shared
// vocabulary (lifecycle) and metrics — never the state store or the pipeline (it hands its
// decisions to the pipeline through lifecycle's Request), an actuator or the GitOps plumbing
// (internal/actuate/..., internal/gitops/...), neither directly nor through them.
func TestLayering(t *testing.T) {
	root := moduleRoot(t)
	allowed := map[string]bool{"internal/lifecycle": true, "internal/metrics": true}
	forbidden := func(rel string) bool {
		return strings.HasPrefix(rel, "internal/actuate/") || strings.HasPrefix(rel, "internal/gitops/") ||
			rel == "internal/actuate" || rel == "internal/gitops" || rel == "internal/state" || rel == "internal/pipeline"
	}

	self, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Tests too may not reach for an actuator.
	for _, imps := range [][]string{self.Imports, self.TestImports, self.XTestImports} {
		for _, imp := range imps {
			if rel, ok := strings.CutPrefix(imp, module); ok && forbidden(rel) {
				t.Errorf("internal/detect/quota imports %s", imp)
			}
		}
	}
	// The package itself: only the allowed packages of ours, and what they import in turn
	// reaches no actuator either.
	seen := map[string]bool{}
	var walk func(rel string, via []string)
	walk = func(rel string, via []string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		pkg, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(rel)), 0)
		if err != nil {
			t.Fatalf("reading %s: %v", rel, err)
		}
		for _, imp := range pkg.Imports {
			r, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			path := append(append([]string{}, via...), r)
			if forbidden(r) {
				t.Errorf("internal/detect/quota reaches %s (via %s)", imp, strings.Join(path, " → "))
			}
			walk(r, path)
		}
	}
	for _, imp := range self.Imports {
		if rel, ok := strings.CutPrefix(imp, module); ok && !allowed[rel] {
			t.Errorf("internal/detect/quota imports %s; a detector may import only lifecycle and metrics of ours", imp)
		}
	}
	walk("internal/detect/quota", nil)
}

// moduleRoot is the directory of go.mod above the package.
func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
}
