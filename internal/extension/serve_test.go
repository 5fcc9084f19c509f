package extension

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kustos-dev/kustos/internal/detect/expiry"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// TestRecorded: the expiry detector looks again at a Key at once when its Lease records a
// different extension, and only then.
func TestRecorded(t *testing.T) {
	lease := func(key, extended string) *coordinationv1.Lease {
		ann := map[string]string{state.AnnotationKey: key}
		if extended != "" {
			ann[state.BagPrefix+expiry.BagExtendedUntil] = extended
		}
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	for _, tc := range []struct {
		name          string
		before, after *coordinationv1.Lease
		want          bool
	}{
		{"extension recorded", lease(string(key), ""), lease(string(key), "2026-12-01T00:00:00Z"), true},
		{"extension changed", lease(string(key), "2026-12-01T00:00:00Z"), lease(string(key), "2026-12-08T00:00:00Z"), true},
		{"extension unchanged", lease(string(key), "2026-12-01T00:00:00Z"), lease(string(key), "2026-12-01T00:00:00Z"), false},
		{"another detector's Key", lease("cleaner/ConfigMap/team-a/x", ""), lease("cleaner/ConfigMap/team-a/x", "2026-12-01T00:00:00Z"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Recorded(tc.before, tc.after)
			if ok != tc.want || (ok && got != lifecycle.Key(tc.after.Annotations[state.AnnotationKey])) {
				t.Errorf("Recorded = %q, %v; want %v", got, ok, tc.want)
			}
		})
	}
}
