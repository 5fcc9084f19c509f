package detect

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/kustos-dev/kustos/"

// TestLayering enforces docs/architecture.md's package table for every detector under
// internal/detect: a detector imports, of ours, only the shared vocabulary (lifecycle, and its pure
// conditions arithmetic), metrics and the API types — never the state store or the pipeline (it
// hands its decisions to the pipeline through lifecycle's Request), an actuator or the GitOps
// plumbing (internal/actuate/..., internal/gitops/...), neither directly nor through them. The one
// input package allowed is internal/activity: the Prometheus activity the inactivity detector
// reads, as the others read the informer caches; and internal/egress, whose checked client the
// inactivity detector's exam probes use and whose failure classes both report to tenants.
// internal/detect/detectkit, the steps the detectors' Reconcile functions share, sits beside
// them and below them: the detectors may import it, and it imports no detector.
func TestLayering(t *testing.T) {
	root := moduleRoot(t)
	allowed := map[string]bool{"internal/lifecycle": true, "internal/lifecycle/conditions": true, "internal/metrics": true, "api/v1alpha1": true,
		"internal/activity": true, "internal/egress": true,
		// Who wrote a Cleaner and what that author may do: vocabulary and a question to the API
		// server, as Access is; it reaches no actuator.
		"internal/authorship": true,
		// Which namespaces this installation serves (--namespace-selector): a question to the
		// cache and watch predicates; it reaches no actuator.
		"internal/nsscope": true,
		// The vSphere VM detector decides with the expiry detector's policy and schedule (VMs are
		// expiry targets of another kind) and reads VMs through internal/vsphere, as the
		// inactivity detector reads Prometheus through internal/activity.
		"internal/detect/expiry": true, "internal/vsphere": true,
		// The steps the detectors' Reconcile functions share (read the target and its
		// Namespace, scope, problem Events, Supersedes): below every detector, it imports none.
		"internal/detect/detectkit": true,
		// The quota detector sizes a quota from its usage window, read through
		// internal/quotahistory as the inactivity detector reads activity.
		"internal/quotahistory": true}
	// helpers are the packages under internal/detect that are no detector: they serve the
	// detectors, so a detector above them is never theirs to import.
	helpers := map[string]bool{"detectkit": true}
	forbidden := func(rel string) bool {
		return strings.HasPrefix(rel, "internal/actuate/") || strings.HasPrefix(rel, "internal/gitops/") ||
			rel == "internal/actuate" || rel == "internal/gitops" || rel == "internal/state" || rel == "internal/pipeline"
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	detectors := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		det := "internal/detect/" + e.Name()
		if helpers[e.Name()] {
			t.Run(e.Name(), func(t *testing.T) {
				checkDetector(t, root, det, allowed, func(rel string) bool {
					return forbidden(rel) || strings.HasPrefix(rel, "internal/detect/")
				})
			})
			continue
		}
		detectors++
		t.Run(e.Name(), func(t *testing.T) { checkDetector(t, root, det, allowed, forbidden) })
	}
	if detectors < 2 {
		t.Fatalf("found %d detectors under internal/detect; the test is looking in the wrong place", detectors)
	}
}

func checkDetector(t *testing.T, root, det string, allowed map[string]bool, forbidden func(string) bool) {
	self, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(det)), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Tests too may not reach for an actuator.
	for _, imps := range [][]string{self.Imports, self.TestImports, self.XTestImports} {
		for _, imp := range imps {
			if rel, ok := strings.CutPrefix(imp, module); ok && forbidden(rel) {
				t.Errorf("%s imports %s", det, imp)
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
				t.Errorf("%s reaches %s (via %s)", det, imp, strings.Join(path, " → "))
			}
			walk(r, path)
		}
	}
	for _, imp := range self.Imports {
		if rel, ok := strings.CutPrefix(imp, module); ok && !allowed[rel] {
			t.Errorf("%s imports %s; a detector may import only lifecycle, lifecycle/conditions, metrics, activity and api/v1alpha1 of ours", det, imp)
		}
	}
	walk(det, nil)
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
