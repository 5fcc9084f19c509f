package pr

import (
	"regexp"
	"strings"
	"testing"
)

// activityChartLine is every line an activity chart block may hold.
var activityChartLine = regexp.MustCompile(`^(xychart-beta|    title "Idle per source \((days|hours)\)"|    x-axis \[("[a-z0-9_-]+"(, )?)*\]|    y-axis "(days|hours)" 0 --> [0-9.]+|    (bar|line) \[[0-9., ]*\])$`)

// activityBodyLine is every line the activity section may hold outside a chart.
var activityBodyLine = regexp.MustCompile("^(|#### Activity per source|\\| source \\| last active \\| idle at the check \\||\\|---\\|---\\|---:\\||\\| `[a-z0-9_-]+` \\| [^|]* \\| [^|]* \\||(Read at|Every source|The timeout) .*|Idle time per source in (days|hours) at the check of .*|```mermaid|```)$")

// checkActivity asserts the section is well formed and returns its number of charts.
func checkActivity(t *testing.T, out string) (charts int) {
	t.Helper()
	in := false
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case line == "```mermaid" && !in:
			in, charts = true, charts+1
		case line == "```" && in:
			in = false
		case in:
			if !activityChartLine.MatchString(line) {
				t.Fatalf("chart line %q\n%s", line, out)
			}
		case !activityBodyLine.MatchString(line):
			t.Fatalf("line %q\n%s", line, out)
		}
	}
	if in {
		t.Fatalf("a chart block is not closed:\n%s", out)
	}
	return charts
}

func pauseEvidence(sources string) map[string]string {
	return map[string]string{"owner": "ana@example.org", "idleSince": "2026-11-02T09:00:00Z", "sources": sources,
		"checkedAt": "2026-11-12T09:00:00Z", "coveredSince": "2026-10-19T09:00:00Z", "timeout": "7d"}
}

func TestActivity(t *testing.T) {
	tests := []struct {
		name       string
		e          map[string]string
		charts     int
		wantCharts int
		want       []string
		wantNot    []string
	}{
		{name: "two sources, one saw none: days, the timeout line", e: pauseEvidence("nginx=2026-11-02T09:00:00Z,bastion="), charts: 1, wantCharts: 1,
			want: []string{"| `nginx` | 2026-11-02 09:00 UTC | 10d |", "| `bastion` | none since 2026-10-19 09:00 UTC | at least 24d |",
				`x-axis ["nginx", "bastion"]`, "bar [10, 24]", "line [7, 7]", `y-axis "days" 0 --> 26.4`, "the timeout is 7d"},
			wantNot: []string{"| sources |", "| checkedAt |"}},
		{name: "hours for a short timeout", e: func() map[string]string {
			e := pauseEvidence("nginx=2026-11-12T06:30:00Z")
			e["timeout"] = "2h"
			return e
		}(), charts: 1, wantCharts: 1, want: []string{`y-axis "hours"`, "bar [2.5]", "line [2]", "| 2h30m |"}},
		{name: "a source that did not answer is in the table, not the chart", e: pauseEvidence("nginx=2026-11-02T09:00:00Z,ssh=?"), charts: 1, wantCharts: 1,
			want: []string{"| `ssh` | unknown: it did not answer at the check | unknown |", `x-axis ["nginx"]`, "1 source(s) whose time is unknown are left out"}},
		{name: "no charts left: the table only", e: pauseEvidence("nginx=2026-11-02T09:00:00Z"), charts: 0, wantCharts: 0,
			want: []string{"| `nginx` | 2026-11-02 09:00 UTC | 10d |"}},
		{name: "nothing to draw: every source unknown", e: pauseEvidence("nginx=?"), charts: 1, wantCharts: 0, want: []string{"| `nginx` | unknown"}},
		{name: "unreadable: the facts table shows it as it is", e: pauseEvidence("nginx=yesterday"), charts: 1, wantCharts: 0,
			want: []string{"| sources | nginx=yesterday |"}, wantNot: []string{"#### Activity per source"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeEvidence(&b, []map[string]string{tc.e}, tc.charts)
			out := b.String()
			if i := strings.Index(out, "#### Activity per source"); i >= 0 {
				if n := checkActivity(t, out[i:]); n != tc.wantCharts {
					t.Errorf("%d charts, want %d:\n%s", n, tc.wantCharts, out)
				}
			} else if tc.wantCharts > 0 {
				t.Fatalf("no activity section:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q missing from\n%s", w, out)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("%q in\n%s", w, out)
				}
			}
		})
	}
}

// FuzzActivityChart: whatever the sources, times and timeout, the activity section keeps to its
// lines and draws at most the charts asked for, each one closed block of chart lines.
func FuzzActivityChart(f *testing.F) {
	f.Add("nginx=2026-11-02T09:00:00Z,bastion=", "2026-11-12T09:00:00Z", "2026-10-19T09:00:00Z", "7d")
	f.Add("a=?,b=,c=2026-11-12T09:00:00+02:00", "2026-11-12T09:00:00Z", "", "2h")
	f.Add("x=9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2026-10-19T09:00:00Z", "99999w")
	f.Add("n\n```=,<b>=", "```", "|", "%%{init}%%")
	f.Fuzz(func(t *testing.T, sources, checked, covered, timeout string) {
		e := pauseEvidence(sources)
		e["checkedAt"], e["coveredSince"], e["timeout"] = checked, covered, timeout
		var b strings.Builder
		wrote, _ := writeActivity(&b, e, 1)
		if !wrote {
			if b.Len() != 0 {
				t.Fatalf("wrote without a section:\n%s", b.String())
			}
			return
		}
		if checkActivity(t, b.String()) > 1 {
			t.Fatalf("more charts than asked for:\n%s", b.String())
		}
	})
}
