package conditions

import (
	"testing"
	"time"
)

func TestPolicyRecheckAfter(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		ready  bool
		want   time.Duration
	}{
		{"default, not Ready", Policy{}, false, 10 * time.Second},
		{"default, Ready", Policy{}, true, 30 * time.Minute},
		{"configured, not Ready", Policy{NotReady: time.Minute, Ready: time.Hour}, false, time.Minute},
		{"configured, Ready", Policy{NotReady: time.Minute, Ready: time.Hour}, true, time.Hour},
		{"only Ready configured, not Ready", Policy{Ready: time.Hour}, false, DefaultNotReadyRecheck},
		{"negative takes the default", Policy{NotReady: -time.Second, Ready: -time.Second}, true, DefaultReadyRecheck},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.RecheckAfter(tt.ready); got != tt.want {
				t.Errorf("%+v.RecheckAfter(%v) = %v, want %v", tt.policy, tt.ready, got, tt.want)
			}
		})
	}
}
