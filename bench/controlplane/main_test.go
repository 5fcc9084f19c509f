package main

import (
	"testing"
)

func TestParseScenarios(t *testing.T) {
	got, err := parseScenarios("2000, 10000,2000+noise", 50000)
	if err != nil {
		t.Fatal(err)
	}
	want := []scenario{{"2000", 2000, 0}, {"10000", 10000, 0}, {"2000+noise", 2000, 50000}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("scenario %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "x", "0", "2000+nois", "-5"} {
		if _, err := parseScenarios(bad, 1); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestSamplePickDistinctAndStable(t *testing.T) {
	a, b := samplePick(2000, 100, 1), samplePick(2000, 100, 1)
	seen := map[int]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("not reproducible")
		}
		if seen[a[i]] || a[i] < 0 || a[i] >= 2000 {
			t.Fatalf("bad sample %d", a[i])
		}
		seen[a[i]] = true
	}
}
