package lifecycle

import "testing"

// TestDetectorLabel: people read the Cleaner detector as cleaner (metrics' detector label,
// log lines, Events, `kustos status`), whatever its Keys call it; every other detector reads as
// it is keyed.
func TestDetectorLabel(t *testing.T) {
	for _, tc := range []struct{ keyed, want string }{
		{"ephemeral", "cleaner"},
		{"cleaner", "cleaner"},
		{"quota", "quota"},
		{"expiry", "expiry"},
		{"inactivity", "inactivity"},
		{"", ""},
	} {
		t.Run(tc.keyed, func(t *testing.T) {
			if got := DetectorLabel(tc.keyed); got != tc.want {
				t.Errorf("DetectorLabel(%q) = %q, want %q", tc.keyed, got, tc.want)
			}
		})
	}
}
