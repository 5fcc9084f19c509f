package pr

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/gitops/index"
	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// chartLine is every line a chart block may hold: nothing a name or a quantity could bring in.
var chartLine = regexp.MustCompile(`^(xychart-beta|    title "[A-Za-z0-9._/ ()-]*"|    x-axis \[("\d\d-\d\d"(, )?)*\]|    y-axis "(cores|GiB|MiB|count)" 0 --> [0-9.]+|    (bar|line) \[[0-9., ]*\])$`)

// bodyLine is every line the window section may hold: a heading, a table row, a caption, a
// fence, a chart line or nothing; text from the cluster cannot start any other.
var bodyLine = regexp.MustCompile("^(|#### Usage window|\\|.*\\||`[A-Za-z0-9._/-]*` in (cores|GiB|MiB|count): .*|```mermaid|```)$")

// checkWindow asserts the section is well formed: its lines as above, each chart one block
// whose lines are chartLine's, no HTML inside a chart.
func checkWindow(t *testing.T, out string) (charts int) {
	t.Helper()
	in := false
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		switch {
		case line == "```mermaid" && !in:
			in, charts = true, charts+1
		case line == "```" && in:
			in = false
		case in:
			if !chartLine.MatchString(line) {
				t.Fatalf("chart line %q\n%s", line, out)
			}
		case !bodyLine.MatchString(line):
			t.Fatalf("line %q\n%s", line, out)
		}
	}
	if in {
		t.Fatalf("a chart block is not closed:\n%s", out)
	}
	return charts
}

func shrinkEvidence(resource, daily, current, recommended string) map[string]string {
	return map[string]string{"namespace": "team-a", "quota": "compute", "resource": resource, "current": current, "used": "1",
		"recommended": recommended, "target": "2", "peak": "3", "peakAt": "2026-11-10T14:32:00Z", "headroom": "25%",
		"trigger": "shrink", "gates": "step", "checked": "failed-create,window,recent-grow,cooldown", "dailyPeaks": daily}
}

func TestChart(t *testing.T) {
	tests := []struct {
		name       string
		e          map[string]string
		wantCharts int
		want       []string // parts of the section
		wantNot    []string
	}{
		{name: "cpu in cores", e: shrinkEvidence("requests.cpu", "2026-11-07:2,2500m,,3", "8", "6"), wantCharts: 1,
			want: []string{`title "team-a/compute requests.cpu (cores)"`, `x-axis ["11-07", "11-08", "11-10"]`, "bar [2, 2.5, 3]",
				"line [8, 8, 8]", "line [6, 6, 6]", `y-axis "cores" 0 --> 8.8`, "1 day(s) without a peak are left out",
				"| `requests.cpu` | 3 | 2026-11-10 14:32 UTC | 1 | 25% | 2 | 8 → **6** | passed failed-create, window, recent-grow, cooldown; shaped by step |"}},
		{name: "memory in GiB", e: shrinkEvidence("limits.memory", "2026-11-07:1536Mi,2Gi", "8Gi", "6Gi"), wantCharts: 1,
			want: []string{"bar [1.5, 2]", "line [8, 8]", `"GiB"`}},
		{name: "memory under a GiB in MiB", e: shrinkEvidence("requests.memory", "2026-11-07:256Mi,300M", "768Mi", "512Mi"), wantCharts: 1,
			want: []string{"bar [256, 286.102]", "line [768, 768]", `"MiB"`}},
		{name: "a count", e: shrinkEvidence("count/configmaps", "2026-11-07:7,9", "100", "75"), wantCharts: 1,
			want: []string{"bar [7, 9]", `"count"`}},
		{name: "hostile names are cut down in the chart and kept in one cell",
			e: func() map[string]string {
				e := shrinkEvidence("x\"]\n```\n<img src=x>%%{init}%%|", "2026-11-07:1,2", "8", "6")
				e["namespace"], e["quota"] = "a\"b", "c\n```"
				return e
			}(), wantCharts: 1,
			want:    []string{`title "a_b/c____ x________img_src_x____init____ (count)"`, "| `x\"] ''' <img src=x>%%{init}%%\\|` |"},
			wantNot: []string{"\n```\n<img"}},
		{name: "a single day draws no chart", e: shrinkEvidence("requests.cpu", "2026-11-07:2", "8", "6"), want: []string{"| `requests.cpu` |"}},
		{name: "unreadable days draw no chart", e: shrinkEvidence("requests.cpu", "2026-11-07:2,lots", "8", "6")},
		{name: "a negative peak draws no chart", e: shrinkEvidence("requests.cpu", "2026-11-07:2,-1", "8", "6")},
		{name: "more days than a window holds draw no chart", e: shrinkEvidence("requests.cpu", "2026-11-07:"+strings.Repeat("1,", 40)+"1", "8", "6")},
		{name: "a value too large to draw", e: shrinkEvidence("requests.cpu", "2026-11-07:1,2", "8E", "6")},
		{name: "a grow's gates are its trigger", wantCharts: 1,
			e:    map[string]string{"resource": "requests.cpu", "current": "8", "recommended": "10", "trigger": "threshold", "windowTarget": "true", "windowComplete": "false", "dailyPeaks": "2026-11-07:7,8"},
			want: []string{"| threshold, raised to the window's target; the window is incomplete |", "line [10, 10]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeWindow(&b, []map[string]string{tt.e}, maxChartsPerBody)
			out := b.String()
			if got := checkWindow(t, out); got != tt.wantCharts {
				t.Errorf("%d charts, want %d:\n%s", got, tt.wantCharts, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in\n%s", w, out)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("%q in\n%s", w, out)
				}
			}
		})
	}
}

// TestWindowNone: evidence without a window adds nothing.
func TestWindowNone(t *testing.T) {
	var b strings.Builder
	writeWindow(&b, []map[string]string{{"resource": "requests.cpu", "current": "8"}}, maxChartsPerBody)
	if b.Len() != 0 {
		t.Errorf("section without a window:\n%s", b.String())
	}
}

// FuzzChart: whatever the names, days and quantities, the window section keeps to its lines and
// every chart is one closed block of chart lines.
func FuzzChart(f *testing.F) {
	f.Add("requests.cpu", "team-a", "compute", "2026-11-07:2,2500m,,3", "8", "6")
	f.Add("requests.memory", "a\nb", "```", "2026-11-07:1Gi,2Gi", "16Gi", "12Gi")
	f.Add("x\"]\n```<b>", "%%{init}%%", "c|d", "2026-11-07:1e3,1E,5n", "1e300", "0")
	f.Fuzz(func(t *testing.T, res, ns, quota, daily, current, recommended string) {
		e := shrinkEvidence(res, daily, current, recommended)
		e["namespace"], e["quota"] = ns, quota
		var b strings.Builder
		writeWindow(&b, []map[string]string{e, e}, 1)
		if checkWindow(t, b.String()) > 1 {
			t.Fatalf("more charts than asked for:\n%s", b.String())
		}
	})
}

// TestGroupBodyWindowBounded: a group of many quotas, each with a month of peaks on many
// resources, charts only its first three targets and stays within GitHub's limit, the table
// listing every target.
func TestGroupBodyWindowBounded(t *testing.T) {
	g := lifecycle.Group{Key: lifecycle.GroupKey("quota", "namespace", "team-a"), Label: "namespace team-a"}
	daily := "2026-10-21:" + strings.TrimSuffix(strings.Repeat("1500m,", 32), ",")
	var included []lifecycle.Change
	results := map[lifecycle.Key]MemberResult{}
	for i := 0; i < 200; i++ {
		c := quotaChange("8", "6")
		c.Key = lifecycle.NewKey("quota", "team-a", fmt.Sprintf("q-%03d", i))
		c.Target.Name = fmt.Sprintf("q-%03d", i)
		c.Evidence = nil
		for j := 0; j < 10; j++ {
			c.Evidence = append(c.Evidence, shrinkEvidence(fmt.Sprintf("example.com/r%d.cpu", j), daily, "8", "6"))
		}
		included = append(included, c)
		results[c.Key] = MemberResult{Included: true, Location: index.Location{Path: "q.yaml"}}
	}
	body := GroupBody(g, included, results, nil, "prod")
	if len(body) > maxBody {
		t.Fatalf("body has %d characters, more than %d", len(body), maxBody)
	}
	if n := strings.Count(body, "```mermaid"); n != groupChartMembers*maxChartsPerBody {
		t.Errorf("%d charts, want %d (the first %d targets')", n, groupChartMembers*maxChartsPerBody, groupChartMembers)
	}
	if strings.Count(body, "```mermaid") != strings.Count(body, "\n```\n") {
		t.Error("a chart block is not closed")
	}
	for _, c := range included {
		if !strings.Contains(body, "`"+scope(c.Target)+"` |") {
			t.Fatalf("the table lacks %s", c.Target)
		}
	}
}
