package conditions

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports enforces docs/architecture.md's package table for lifecycle: nothing of ours, only
// the standard library and k8s.io/apimachinery (tests included).
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imps := range [][]string{pkg.Imports, pkg.TestImports, pkg.XTestImports} {
		for _, imp := range imps {
			first, _, _ := strings.Cut(imp, "/")
			if strings.Contains(first, ".") && !strings.HasPrefix(imp, "k8s.io/apimachinery/") {
				t.Errorf("imports %s: only the standard library and k8s.io/apimachinery are allowed", imp)
			}
		}
	}
}
