package main

import (
	"testing"
	"time"
)

// TestAPIRestartDue: an API server restart is forced once none came by apiDueBy, or once
// -api-restart-every has passed since the last; else drawn (r in [84, 88)) at most every
// apiRestartEvery; never without an API server, nor once the witness is spared.
func TestAPIRestartDue(t *testing.T) {
	start := at(0)
	deadline := at(300) // apiDueBy without a witness: 200 s
	cases := []struct {
		name      string
		noAPI     bool
		every     time.Duration
		lastAPI   time.Time
		witnessAt time.Time // zero: no witness
		now       time.Time
		r         int
		want      bool
	}{
		{"drawn, none before", false, 0, time.Time{}, time.Time{}, at(10), 85, true},
		{"not drawn", false, 0, time.Time{}, time.Time{}, at(10), 50, false},
		{"drawn, too soon after the last", false, 0, at(10), time.Time{}, at(60), 85, false},
		{"drawn, a minute after the last", false, 0, at(10), time.Time{}, at(71), 85, true},
		{"none by two thirds: forced", false, 0, time.Time{}, time.Time{}, at(201), 50, true},
		{"one before two thirds: not forced", false, 0, at(10), time.Time{}, at(201), 50, false},
		{"every 30s: not yet after the start", false, 30 * time.Second, time.Time{}, time.Time{}, at(29), 50, false},
		{"every 30s: forced from the start", false, 30 * time.Second, time.Time{}, time.Time{}, at(30), 50, true},
		{"every 30s: not yet after the last", false, 30 * time.Second, at(40), time.Time{}, at(69), 50, false},
		{"every 30s: forced after the last", false, 30 * time.Second, at(40), time.Time{}, at(70), 50, true},
		{"every 30s, drawn: the minute still holds", false, 30 * time.Second, at(40), time.Time{}, at(60), 85, false},
		{"no API server", true, 30 * time.Second, time.Time{}, time.Time{}, at(250), 85, false},
		{"witness spared: never", false, 30 * time.Second, time.Time{}, at(100), at(100), 85, false},
		{"before the witness is spared", false, 30 * time.Second, time.Time{}, at(100), at(99), 50, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFaults(nil, nil, nil, 7, t.Logf)
			if !c.noAPI {
				f.api = newAPIServer(nil)
			}
			f.apiEvery, f.lastAPI = c.every, c.lastAPI
			if !c.witnessAt.IsZero() {
				f.witness, f.witnessFrom = &replica{id: 1}, c.witnessAt
			}
			if got := f.apiRestartDue(c.now, start, deadline, c.r); got != c.want {
				t.Errorf("apiRestartDue = %v, want %v", got, c.want)
			}
		})
	}
}

// TestRestartOptOutTargets: the opt-out aimed just after an API server restart takes a preview
// an open PR proposes removing, or, with none, one past its deadline; never one still ahead.
func TestRestartOptOutTargets(t *testing.T) {
	now := at(100)
	open := func(ns, name string, dl int) removalState {
		return removalState{ns: ns, name: name, deadline: at(dl), proposed: true}
	}
	idle := func(ns, name string, dl int) removalState {
		return removalState{ns: ns, name: name, deadline: at(dl)}
	}
	cases := []struct {
		name   string
		states []removalState
		want   []string
	}{
		{"none", nil, nil},
		{"deadlines ahead: none", []removalState{idle("t-1", "p-1", 101), idle("t-1", "p-2", 160)}, nil},
		{"past the deadline", []removalState{idle("t-1", "p-2", 101), idle("t-1", "p-1", 99)}, []string{"t-1/p-1"}},
		{"at the deadline", []removalState{idle("t-1", "p-1", 100)}, []string{"t-1/p-1"}},
		{"proposed first", []removalState{idle("t-1", "p-1", 90), open("t-2", "p-3", 95)}, []string{"t-2/p-3"}},
		{"proposed, sorted", []removalState{open("t-2", "p-1", 95), open("t-1", "p-4", 95), open("t-1", "p-2", 95), idle("t-0", "p-0", 50)},
			[]string{"t-1/p-2", "t-1/p-4", "t-2/p-1"}},
		{"proposed even before its deadline (extended meanwhile)", []removalState{open("t-1", "p-1", 130)}, []string{"t-1/p-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, s := range restartOptOutTargets(c.states, now) {
				got = append(got, s.ns+"/"+s.name)
			}
			if len(got) != len(c.want) {
				t.Fatalf("targets %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("targets %v, want %v", got, c.want)
				}
			}
		})
	}
}
