package main

import (
	"os"
	"strings"
	"testing"
)

// A contract violation (Errorf) fails the demo; Fatalf panics with tbFatal; cleanups run last
// first and remove the temporary directories.
func TestDemoTB(t *testing.T) {
	tb := &demoTB{}
	dir := tb.TempDir()
	var order []int
	tb.Cleanup(func() { order = append(order, 1) })
	tb.Cleanup(func() { order = append(order, 2) })
	tb.Errorf("contract: %s", "GET /repos/{owner}/{repo}: response does not match")
	func() {
		defer func() {
			if r, ok := recover().(tbFatal); !ok || !strings.Contains(string(r), "not seeded") {
				t.Errorf("Fatalf panicked with %v", r)
			}
		}()
		tb.Fatalf("githubtest: repository %s not seeded", "acme/x")
		t.Error("Fatalf returned")
	}()
	err := tb.finish()
	if err == nil || !strings.Contains(err.Error(), "2 error(s)") || !strings.Contains(err.Error(), "response does not match") {
		t.Errorf("finish: %v", err)
	}
	if len(order) != 2 || order[0] != 2 || order[1] != 1 {
		t.Errorf("cleanup order %v", order)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s not removed: %v", dir, err)
	}
	if err := (&demoTB{}).finish(); err != nil {
		t.Errorf("clean finish: %v", err)
	}
}

func TestUnifiedDiffAndComments(t *testing.T) {
	after := strings.Replace(quotaManifest, `"10"`, `"12"`, 1)
	d, err := unifiedDiff(t.TempDir(), quotaPath, version{quotaManifest, true}, version{after, true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- a/" + quotaPath, "+++ b/" + quotaPath, `-    requests.cpu: "10"   # keep quoted`, `+    requests.cpu: "12"   # keep quoted`} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if _, err := unifiedDiff(t.TempDir(), quotaPath, version{quotaManifest, true}, version{quotaManifest, true}); err == nil {
		t.Error("no error for an unchanged file")
	}
	// A removal pull request deletes the file: shown as deleted, every line removed, not as a
	// file emptied.
	gone, err := unifiedDiff(t.TempDir(), quotaPath, version{quotaManifest, true}, version{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deleted file mode", "+++ /dev/null", `-    requests.cpu: "10"   # keep quoted`} {
		if !strings.Contains(gone, want) {
			t.Errorf("the diff of a deleted file lacks %q:\n%s", want, gone)
		}
	}
	if err := keepsComments(quotaManifest, after); err != nil {
		t.Error(err)
	}
	if err := keepsComments(quotaManifest, strings.Replace(after, "# keep quoted", "", 1)); err == nil {
		t.Error("a dropped comment went unnoticed")
	}
}
