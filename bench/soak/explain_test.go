package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogsAbout: a stalled pull request's target is found in every replica's log by the
// namespace/name of its branch, the last lines only, and another target sharing a prefix is
// not taken for it.
func TestLogsAbout(t *testing.T) {
	dir := t.TempDir()
	var log1 strings.Builder
	for i := range 20 {
		log1.WriteString(`{"msg":"pipeline step","key":"expiry/Deployment.apps/t-001/p-004","n":` + string(rune('a'+i)) + "}\n")
	}
	log1.WriteString(`{"msg":"pipeline step","key":"expiry/Deployment.apps/t-001/p-0045"}` + "\n")
	if err := os.WriteFile(filepath.Join(dir, "kustos-1-1.log"), []byte(log1.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustos-2-1.log"), []byte(`{"msg":"pull request proposed","key":"expiry/Deployment.apps/t-001/p-004"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logsAbout(dir, []string{"#5 kustos/soak/expiry/t-001/p-004 (mergeable_state unknown)"})
	if len(got) != 1+explainLines+1 {
		t.Fatalf("%d lines, want a title, %d of replica 1 and 1 of replica 2:\n%s", len(got), explainLines, strings.Join(got, "\n"))
	}
	if !strings.Contains(got[0], "#5") || !strings.Contains(got[1], "kustos-1-1.log") || !strings.Contains(got[len(got)-1], "kustos-2-1.log: ") {
		t.Errorf("unexpected lines:\n%s", strings.Join(got, "\n"))
	}
	if !strings.Contains(got[explainLines], `"n":t`) {
		t.Errorf("not the last lines of replica 1: %s", got[explainLines])
	}
	for _, l := range got {
		if strings.Contains(l, "p-0045") {
			t.Errorf("another target's line: %s", l)
		}
	}
}
