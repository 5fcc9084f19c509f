package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

func TestParseFlags(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "kustos")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-kustos", exe}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.n != 10000 || o.namespaces != 100 || o.samples != 100 || o.late != 20 || o.latePeriod != 20*time.Second || o.idle != 30*time.Second {
		t.Errorf("defaults: %+v", o)
	}
	for _, bad := range [][]string{
		{},
		{"-kustos", exe, "-n", "50"},           // fewer Cleaners than samples
		{"-kustos", exe, "-late-period", "5s"}, // a Cleaner's period is at least 10s
		{"-kustos", exe, "-late-from", "20s", "-late-to", "10s"},
		{"-kustos", exe, "extra"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestVerdicts(t *testing.T) {
	ok := kustosproc.Sample{HWMKiB: 1 << 20}
	r := result{atEval: ok, afterIdle: ok, evaluated: 2, sampled: 2, probe: []time.Duration{5 * time.Millisecond},
		latencies: []time.Duration{10 * time.Millisecond, 40 * time.Millisecond},
		mono:      lateness{wall: []time.Duration{30 * time.Millisecond}},
		periodic:  lateness{wall: []time.Duration{15 * time.Second}}}
	want := []report.Verdict{report.None, report.None, report.Pass, report.Pass, report.None}
	check := func(name string, r result, want []report.Verdict, broken int) {
		t.Helper()
		rows := r.rows()
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", name, len(rows), len(want))
		}
		n := 0
		for i, row := range rows {
			if row.Verdict != want[i] {
				t.Errorf("%s: row %q: %s, want %s", name, row.Name, row.Verdict, want[i])
			}
			if row.Broken {
				n++
			}
		}
		if n != broken {
			t.Errorf("%s: %d broken rows, want %d", name, n, broken)
		}
	}
	check("all good", r, want, 0)

	slow := r
	slow.latencies = []time.Duration{10 * time.Millisecond, 51 * time.Millisecond}
	slow.mono.wall = []time.Duration{1100 * time.Millisecond}
	check("slow", slow, []report.Verdict{report.None, report.None, report.Fail, report.Fail, report.None}, 0)

	bad := r
	bad.sampled, bad.periodic.early = 3, 1
	check("broken", bad, want, 2)
	if !strings.Contains(render(bad, options{}), "FAIL: 1 never due") {
		t.Errorf("table does not say a sample was never due:\n%s", render(bad, options{}))
	}
}
