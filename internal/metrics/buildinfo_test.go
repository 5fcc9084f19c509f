package metrics

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kustos-dev/kustos/internal/buildinfo"
)

// TestBuildInfo: /metrics serves kustos_build_info 1 with the binary's version, commit, date
// and Go version, as `kustos version` prints them.
func TestBuildInfo(t *testing.T) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := buildinfo.Get()
	for _, f := range families {
		if f.GetName() != "kustos_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("%d series, want 1", len(f.GetMetric()))
		}
		m := f.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if m.GetGauge().GetValue() != 1 || labels["version"] != want.Version || labels["commit"] != want.Commit ||
			labels["date"] != want.Date || labels["goversion"] != want.GoVersion {
			t.Errorf("kustos_build_info %v = %v; want 1 with %+v", labels, m.GetGauge().GetValue(), want)
		}
		return
	}
	t.Fatal("kustos_build_info is not registered")
}
