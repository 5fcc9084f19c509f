package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kustos-dev/kustos/internal/testenv"
)

// TestChartArgsParse: every argument the chart renders into the Deployment is a flag the kustos
// binary takes, with a value it accepts, for the chart's defaults and for values in the one
// duration grammar (days, never). `kustos run ARGS --help` parses every flag before it prints
// the help, so exit 0 means all of them parsed.
func TestChartArgsParse(t *testing.T) {
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
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"PR mode", []string{"--set", "mode=pr", "--set", "git.repo=acme/gitops", "--set", "github.existingSecret=kustos-github", "--set", "github.tokenKey=token"}},
		{"days and never", []string{"--set", "cooldown=1d", "--set", "expiry.defaultTTL=never", "--set", "expiry.warningBefore=2d",
			"--set", "expiry.notificationInterval=1d", "--set", "cleaner.readyRecheck=1h30m"}},
		{"inactivity and extension links", []string{"--set", "inactivity.enabled=true", "--set", "inactivity.prometheusURL=https://prometheus.example:9090",
			"--set", "inactivity.timeout=never", "--set", "inactivity.lookback=2w",
			"--set", "expiry.extension.enabled=true", "--set", "expiry.extension.url=https://kustos.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, co := range renderChart(t, "kustos", "kustos-system", tc.args...) {
				if d, ok := co.(*appsv1.Deployment); ok {
					args = d.Spec.Template.Spec.Containers[0].Args
				}
			}
			if len(args) < 2 || args[0] != "run" {
				t.Fatalf("the chart's Deployment runs %q, want kustos run and its flags", args)
			}
			out, err := exec.Command(kustos, append(args, "--help")...).CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "Usage: kustos run") {
				t.Fatalf("kustos %s --help: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}
