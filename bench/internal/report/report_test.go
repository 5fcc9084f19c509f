package report

import (
	"testing"
	"time"
)

func TestRowResult(t *testing.T) {
	for _, tc := range []struct {
		row  Row
		want string
	}{
		{Row{}, "n/a"},
		{Row{Verdict: Pass}, "PASS"},
		{Row{Verdict: Fail}, "FAIL"},
		{Row{Verdict: Pass, Why: "a note"}, "PASS (a note)"},
		{Row{Verdict: None, Why: "a note"}, "n/a (a note)"},
		{Row{Verdict: Pass, Broken: true, Why: "1 never due"}, "FAIL: 1 never due"},
	} {
		if got := tc.row.Result(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.row, got, tc.want)
		}
	}
}

func TestJudgeCombine(t *testing.T) {
	for _, tc := range []struct {
		in   []Verdict
		want Verdict
	}{
		{nil, None},
		{[]Verdict{None, None}, None},
		{[]Verdict{None, Pass}, Pass},
		{[]Verdict{Pass, Fail, Pass}, Fail},
		{[]Verdict{Judge(true), Judge(false)}, Fail},
		{[]Verdict{Judge(true)}, Pass},
	} {
		if got := Combine(tc.in...); got != tc.want {
			t.Errorf("Combine(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		name           string
		table          Table
		want           string
		broken, missed bool
	}{
		{"empty", Table{Heading: "scenario"}, "| scenario | measured | target | result |\n|---|---|---|---|\n", false, false},
		{"pass", Table{Heading: "measure", Rows: []Row{{Name: "a", Measured: "x | y", Target: "≤ 1", Verdict: Pass}}},
			"| measure | measured | target | result |\n|---|---|---|---|\n| a | x \\| y | ≤ 1 | PASS |\n", false, false},
		{"missed", Table{Heading: "scenario", Rows: []Row{{Name: "a"}, {Name: "b", Verdict: Fail}}},
			"| scenario | measured | target | result |\n|---|---|---|---|\n| a |  |  | n/a |\n| b |  |  | FAIL |\n", false, true},
		{"broken", Table{Heading: "scenario", Rows: []Row{{Name: "a", Broken: true, Why: "gone"}}},
			"| scenario | measured | target | result |\n|---|---|---|---|\n| a |  |  | FAIL: gone |\n", true, false},
	} {
		if got := tc.table.String(); got != tc.want {
			t.Errorf("%s: rendered\n%q, want\n%q", tc.name, got, tc.want)
		}
		if got := tc.table.Broken(); got != tc.broken {
			t.Errorf("%s: Broken() = %v, want %v", tc.name, got, tc.broken)
		}
		if got := tc.table.Missed(); got != tc.missed {
			t.Errorf("%s: Missed() = %v, want %v", tc.name, got, tc.missed)
		}
	}
}

func TestMSAndLatency(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		ds   []time.Duration
		want string
	}{
		{nil, "p50 0.0 ms, p99 0.0 ms, max 0.0 ms"},
		{[]time.Duration{ms(12.34)}, "p50 12.3 ms, p99 12.3 ms, max 12.3 ms"},
		{[]time.Duration{ms(3), ms(1), ms(2)}, "p50 2.0 ms, p99 3.0 ms, max 3.0 ms"},
	} {
		if got := Latency(tc.ds); got != tc.want {
			t.Errorf("Latency(%v) = %q, want %q", tc.ds, got, tc.want)
		}
	}
	if got := MS(1500 * time.Microsecond); got != "1.5" {
		t.Errorf("MS(1.5ms) = %q", got)
	}
}
