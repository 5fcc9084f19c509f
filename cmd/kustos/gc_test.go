package main

import (
	"runtime/debug"
	"testing"
)

// TestApplyGCPercent: --gogc is applied unless GOGC is set, which wins and is left as the runtime
// applied it.
func TestApplyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name               string
		env                map[string]string
		flag               int
		target, source     string
		wantPercentInForce int
	}{
		{"flag", nil, 50, "50", "--gogc", 50},
		{"environment wins", map[string]string{"GOGC": "200"}, 50, "200", "GOGC", 100},
		{"environment off", map[string]string{"GOGC": "off"}, 30, "off", "GOGC", 100},
		{"environment empty", map[string]string{"GOGC": ""}, 30, "30", "--gogc", 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100) // as the runtime left it
			target, source := applyGCPercent(tc.flag, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if target != tc.target || source != tc.source {
				t.Errorf("applyGCPercent = %s from %s, want %s from %s", target, source, tc.target, tc.source)
			}
			if got := debug.SetGCPercent(100); got != tc.wantPercentInForce {
				t.Errorf("GC percent in force %d, want %d", got, tc.wantPercentInForce)
			}
		})
	}
}

// TestGOGCFlag: --gogc defaults to defaultGCPercent and refuses a target below minGCPercent.
func TestGOGCFlag(t *testing.T) {
	o, _, _, err := runFlags(nil, nil)
	if err != nil || o.GCPercent != defaultGCPercent {
		t.Fatalf("default --gogc = %d (%v), want %d", o.GCPercent, err, defaultGCPercent)
	}
	if _, _, _, err := runFlags([]string{"--gogc=5"}, nil); err == nil {
		t.Error("--gogc=5 accepted")
	}
	if o, _, _, err := runFlags([]string{"--gogc=100"}, nil); err != nil || o.GCPercent != 100 {
		t.Errorf("--gogc=100: %d, %v", o.GCPercent, err)
	}
}
