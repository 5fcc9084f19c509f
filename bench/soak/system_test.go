package main

import (
	"slices"
	"testing"
)

// TestMergeAllow: --allow takes one value (a second one would replace the first), so the
// previews', Cleaners' and labs' allowances go in one.
func TestMergeAllow(t *testing.T) {
	got := mergeAllow([]string{"--mode=pr", "--allow=cleaner:delete:configmaps", "--allow-delete=expiry:apps/deployments", "--allow=inactivity:pause:apps/deployments"})
	want := []string{"--mode=pr", "--allow-delete=expiry:apps/deployments", "--allow=cleaner:delete:configmaps,inactivity:pause:apps/deployments"}
	if !slices.Equal(got, want) {
		t.Errorf("mergeAllow = %q, want %q", got, want)
	}
	if got := mergeAllow([]string{"--mode=pr"}); !slices.Equal(got, []string{"--mode=pr"}) {
		t.Errorf("without --allow: %q", got)
	}
}
