package ephemeral

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string // "" : valid
	}{
		{"zero", Options{}, ""},
		{"rechecks set", Options{Enabled: true, ReadyRecheck: 30 * time.Minute, NotReadyRecheck: 10 * time.Second}, ""},
		{"negative ready recheck", Options{ReadyRecheck: -time.Second}, "--cleaner-ready-recheck=-1s: must not be negative"},
		{"negative not-ready recheck", Options{NotReadyRecheck: -time.Minute}, "--cleaner-not-ready-recheck=-1m: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}
