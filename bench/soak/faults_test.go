package main

import (
	"testing"
	"time"
)

// TestVictim: the kills spare the witness from witnessFrom on, so that one replica life is long
// enough for the heap rule; before that, and for the other replicas, any may be killed.
func TestVictim(t *testing.T) {
	r1, r2, r3 := &replica{id: 1}, &replica{id: 2}, &replica{id: 3}
	from := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		replicas []*replica
		at       time.Time
		want     map[int]bool // the replicas that may be drawn; nil: none
	}{
		{"before the half, every replica", []*replica{r1, r2, r3}, from.Add(-time.Second), map[int]bool{1: true, 2: true, 3: true}},
		{"from the half, all but the witness", []*replica{r1, r2, r3}, from, map[int]bool{2: true, 3: true}},
		{"two replicas: the other one", []*replica{r1, r2}, from.Add(time.Minute), map[int]bool{2: true}},
		{"the witness alone: no kill", []*replica{r1}, from.Add(time.Minute), nil},
		{"the witness alone, before the half", []*replica{r1}, from.Add(-time.Minute), map[int]bool{1: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFaults(nil, c.replicas, nil, 7, t.Logf)
			f.witness, f.witnessFrom = r1, from
			seen := map[int]bool{}
			for range 200 {
				v := f.victim(c.at)
				if v == nil {
					if c.want != nil {
						t.Fatalf("no victim; want one of %v", c.want)
					}
					continue
				}
				if !c.want[v.id] {
					t.Fatalf("victim replica %d; want one of %v", v.id, c.want)
				}
				seen[v.id] = true
			}
			if len(seen) != len(c.want) {
				t.Errorf("drew %v in 200 draws; want each of %v", seen, c.want)
			}
		})
	}
}
