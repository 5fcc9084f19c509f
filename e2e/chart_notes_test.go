package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// TestChartNotes: what `helm install` prints names every detector that is on, with a link to its
// page, and none that is off; a page it links exists in the repository.
func TestChartNotes(t *testing.T) {
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	detectors := map[string]string{
		"quota":      "docs/detectors/quota.md",
		"cleaner":    "docs/detectors/cleaners.md",
		"expiry":     "docs/detectors/expiry.md",
		"inactivity": "docs/detectors/inactivity.md",
		"vsphere":    "docs/vsphere.md",
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		on     []string
	}{
		{"defaults", nil, []string{"quota", "cleaner", "expiry"}},
		{"every detector", map[string]any{
			"mode":       "direct",
			"inactivity": map[string]any{"enabled": true, "prometheusURL": "http://prometheus:9090"},
			"vsphere":    map[string]any{"enabled": true, "url": "https://vcenter.example.com/sdk", "credentialsSecret": "vc", "datacenter": "dc1", "folders": []any{"labs"}, "quarantineFolder": "labs/quarantine"},
		}, []string{"quota", "cleaner", "expiry", "inactivity", "vsphere"}},
		{"only quotas", map[string]any{"cleaner": map[string]any{"enabled": false}, "expiry": map[string]any{"enabled": false}}, []string{"quota"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := action.NewInstall(&action.Configuration{})
			in.DryRun, in.ClientOnly, in.ReleaseName, in.Namespace = true, true, "kustos", "kustos-system"
			in.KubeVersion = &chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}
			rel, err := in.RunWithContext(context.Background(), ch, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			notes := rel.Info.Notes
			for name, page := range detectors {
				on := strings.Contains(notes, "\n- "+name+":")
				link := strings.Contains(notes, "/blob/main/"+page)
				want := false
				for _, o := range tc.on {
					want = want || o == name
				}
				if on != want || link != want {
					t.Errorf("detector %s: listed %v, linked %v; want %v:\n%s", name, on, link, want, notes)
				}
				if want {
					if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(chartDir(t))), page)); err != nil {
						t.Errorf("the notes link %s: %v", page, err)
					}
				}
			}
		})
	}
}
