package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/bench/internal/harness"
	"github.com/kustos-dev/kustos/internal/testenv"
)

func writeExecutable(p string) error { return os.WriteFile(p, []byte("#!/bin/sh\necho v0\n"), 0o755) }

// TestSoakSmoke is the soak for three minutes, on the real control plane with the real kustos
// binary (built here): 60 s of faults and workload, 2 minutes to converge, no violation (on a
// busy 2-core machine the queued proposals alone take about a minute: GitHub's mutations are
// paced a second apart). Kustos logs at debug, so that a failure prints what it last did about
// each pull request left open, and keeps its logs in bin/soak-smoke. `go test -short` leaves it
// out.
func TestSoakSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-minute soak; -short leaves it out")
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kustos := filepath.Join(t.TempDir(), "kustos")
	build := exec.Command("go", "build", "-o", kustos, "./cmd/kustos")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv(breakEnv, "")
	// The run's output (Kustos's logs, the server's request log) goes under bin/, not the
	// test's temporary directory: the harness keeps it when the run fails, and it must outlive
	// the test to be read. Removed when the run passes.
	out := filepath.Join(root, "bin", "soak-smoke")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", out)
	var stdout, stderr bytes.Buffer
	b := harness.Bench[options]{Name: "soak", Parse: parseFlags, ManyLogs: true, Run: run}
	code := harness.Run(b, []string{"-kustos", kustos, "-duration", "3m", "-settle", "2m", "-seed", "20261129", "-v",
		"-kustos-log-level", "debug"}, &stdout, &stderr)
	t.Logf("report:\n%s", stdout.String())
	if code != 0 || !strings.Contains(stdout.String(), "| invariant violations | 0 |") {
		t.Fatalf("exit code %d; the run's output is kept in %s; log:\n%s", code, out, stderr.String())
	}
	_ = os.RemoveAll(out)
}
