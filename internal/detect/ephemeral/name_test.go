package ephemeral

import (
	"testing"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// TestNames: the Cleaner detector is "cleaner" to people, and its Keys keep the "ephemeral"
// prefix an earlier release wrote into Leases, Lease names, group Keys and branches: an
// upgraded installation finds them under the same Keys.
func TestNames(t *testing.T) {
	if Name != "cleaner" || lifecycle.DetectorLabel(DetectorName) != Name {
		t.Errorf("Name %q, DetectorLabel(%q) = %q: want both cleaner", Name, DetectorName, lifecycle.DetectorLabel(DetectorName))
	}
	target := lifecycle.Target{Version: "v1", Kind: "ConfigMap", Namespace: "previews", Name: "scratch"}
	for _, tc := range []struct{ got, want lifecycle.Key }{
		{lifecycle.KeyFor(DetectorName, target), "ephemeral/ConfigMap/previews/scratch"},
		{lifecycle.KeyFor(DetectorName, lifecycle.ReleaseTarget("previews", "preview")), "ephemeral/Release.helm.sh/previews/preview"},
		{CloudEventKey("previews", "tidy"), "ephemeral/CloudEvent.kustos.io/previews/tidy"},
		{lifecycle.GroupKey(DetectorName, "cleaner", "previews/tidy"), "ephemeral/@cleaner/previews/tidy"},
	} {
		if tc.got != tc.want {
			t.Errorf("Key %q, want %q as earlier releases wrote it", tc.got, tc.want)
		}
	}
}
