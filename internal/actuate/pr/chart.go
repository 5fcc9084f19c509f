package pr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// A quota's usage window, as its Change's evidence carries it ("dailyPeaks", "peak", "peakAt",
// "target", "headroom", "gates", "checked"), is drawn in the pull request: a table row per
// resource and a Mermaid xychart-beta per resource, which GitHub renders in place (no image,
// no outside service). Everything inside the chart is built here from parsed values — numbers
// printed by strconv, days printed from parsed dates, names cut down to a few safe characters
// — so that names and quantities a tenant controls can neither close the block nor inject
// Markdown, HTML or Mermaid directives. Where Mermaid is not rendered, the caption above each
// chart and the table say the same in words.
const (
	// maxChartsPerBody bounds the charts of one Change's body; the table lists every resource.
	maxChartsPerBody = 6
	// groupChartMembers is how many members of a group have their charts drawn; the others
	// have their window's table only.
	groupChartMembers = 3
	// maxChartDays bounds the days read from one "dailyPeaks" entry: a month and a day.
	maxChartDays = 32
	// maxChartName bounds each name in a chart's title.
	maxChartName = 63
	// maxChartValue is the largest number drawn: far beyond any quota in cores or GiB, and short
	// to print.
	maxChartValue = 1e12
)

// hasWindow reports whether an evidence entry carries a usage window to draw.
func hasWindow(e map[string]string) bool { return e["dailyPeaks"] != "" }

// writeWindow renders the usage window of the entries that carry one: the table, then up to
// charts charts.
func writeWindow(b *strings.Builder, ev []map[string]string, charts int) {
	var with []map[string]string
	for _, e := range ev {
		if hasWindow(e) {
			with = append(with, e)
		}
	}
	if len(with) == 0 {
		return
	}
	b.WriteString("#### Usage window\n\n")
	b.WriteString("| resource | peak | when | used now | headroom | target | hard → proposed | gates |\n|---|---:|---|---:|---:|---:|---|---|\n")
	for _, e := range with {
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s | %s → **%s** | %s |\n", codeCell(e["resource"]), cell(e["peak"]), cell(when(e["peakAt"])),
			cell(e["used"]), cell(e["headroom"]), cell(e["target"]), cell(e["current"]), cell(e["recommended"]), cell(gatesCell(e)))
	}
	b.WriteString("\n")
	for _, e := range with {
		if charts <= 0 {
			break
		}
		if c, ok := chart(e); ok {
			b.WriteString(c)
			charts--
		}
	}
}

// when is an RFC 3339 time as "2026-11-11 06:00 UTC"; what does not parse is shown as it is.
func when(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// gatesCell says which gates a shrink passed and which shaped its value, or what triggered a
// grow.
func gatesCell(e map[string]string) string {
	if e["trigger"] != "shrink" {
		s := e["trigger"]
		if e["windowTarget"] == "true" {
			s += ", raised to the window's target"
		}
		if e["windowComplete"] == "false" {
			s += "; the window is incomplete"
		}
		return s
	}
	var parts []string
	if c := e["checked"]; c != "" {
		parts = append(parts, "passed "+strings.ReplaceAll(c, ",", ", "))
	}
	if g := e["gates"]; g != "" {
		parts = append(parts, "shaped by "+strings.ReplaceAll(g, ",", ", "))
	}
	if bl := e["blocked"]; bl != "" {
		parts = append(parts, "held back by "+strings.ReplaceAll(bl, ",", ", "))
	}
	return strings.Join(parts, "; ")
}

// chartDay is one day drawn: its label and peak in the chart's unit.
type chartDay struct {
	day  time.Time
	peak resource.Quantity
}

// parseDailyPeaks reads "2026-11-07:6Gi,7Gi,,8Gi": the first day, then one peak a day, empty
// for a day without one; at most maxChartDays days. ok is false for anything else, or for
// fewer than two peaks.
func parseDailyPeaks(s string) (days []chartDay, missing []time.Time, ok bool) {
	date, list, found := strings.Cut(s, ":")
	first, err := time.Parse(time.DateOnly, date)
	if !found || err != nil {
		return nil, nil, false
	}
	tokens := strings.Split(list, ",")
	if len(tokens) > maxChartDays {
		return nil, nil, false
	}
	for i, tok := range tokens {
		day := first.AddDate(0, 0, i)
		if tok == "" {
			missing = append(missing, day)
			continue
		}
		q, err := resource.ParseQuantity(tok)
		if err != nil || q.Sign() < 0 {
			return nil, nil, false
		}
		days = append(days, chartDay{day: day, peak: q})
	}
	return days, missing, len(days) >= 2
}

// unit is a chart's unit: its name and how many of the quantity's base units it holds.
type unit struct {
	name string
	size float64
}

// unitFor picks one unit for a chart of resource, whose largest value is top: cores for cpu,
// GiB (MiB below 1 GiB) for memory, storage and huge pages, the count itself otherwise.
func unitFor(name string, top float64) unit {
	switch {
	case name == "cpu" || strings.HasSuffix(name, ".cpu"):
		return unit{"cores", 1}
	case name == "memory" || strings.HasSuffix(name, ".memory") || strings.HasSuffix(name, "storage") ||
		strings.HasPrefix(name, "hugepages-") || strings.Contains(name, ".hugepages-"):
		if top >= 1<<30 {
			return unit{"GiB", 1 << 30}
		}
		return unit{"MiB", 1 << 20}
	}
	return unit{"count", 1}
}

// number prints v as a plain decimal, at most three places: no exponent, no sign, no unit.
func number(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// safeName keeps a name's letters, digits, '.', '_', '/' and '-' (what Kubernetes names and
// resource names are made of); anything else becomes '_'. Cut to maxChartName.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxChartName {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '/', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// chart is the caption and the fenced xychart-beta block of one evidence entry; ok is false
// when its values cannot be drawn (then the table alone says it).
func chart(e map[string]string) (string, bool) {
	days, missing, ok := parseDailyPeaks(e["dailyPeaks"])
	if !ok {
		return "", false
	}
	hard, err1 := resource.ParseQuantity(e["current"])
	proposed, err2 := resource.ParseQuantity(e["recommended"])
	if err1 != nil || err2 != nil || hard.Sign() < 0 || proposed.Sign() < 0 {
		return "", false
	}
	top := math.Max(hard.AsApproximateFloat64(), proposed.AsApproximateFloat64())
	for _, d := range days {
		top = math.Max(top, d.peak.AsApproximateFloat64())
	}
	u := unitFor(e["resource"], top)
	scaled := func(q resource.Quantity) (float64, bool) {
		v := q.AsApproximateFloat64() / u.size
		return v, !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= maxChartValue
	}
	hardV, ok1 := scaled(hard)
	propV, ok2 := scaled(proposed)
	if !ok1 || !ok2 {
		return "", false
	}
	labels := make([]string, len(days))
	peaks := make([]string, len(days))
	hardLine := make([]string, len(days))
	propLine := make([]string, len(days))
	yMax := math.Max(hardV, propV)
	peakV, peakDay := -1.0, ""
	for i, d := range days {
		v, ok := scaled(d.peak)
		if !ok {
			return "", false
		}
		labels[i] = strconv.Quote(d.day.Format("01-02"))
		peaks[i] = number(v)
		hardLine[i], propLine[i] = number(hardV), number(propV)
		yMax = math.Max(yMax, v)
		if v >= peakV {
			peakV, peakDay = v, d.day.Format("01-02")
		}
	}
	if yMax <= 0 {
		yMax = 1
	}

	var b strings.Builder
	name := safeName(e["resource"])
	fmt.Fprintf(&b, "`%s` in %s: the bars are the daily peaks of %d days from %s (highest %s on %s); the lines are today's hard value %s and the proposed %s.",
		name, u.name, len(days), days[0].day.Format(time.DateOnly), number(peakV), peakDay, number(hardV), number(propV))
	if len(missing) > 0 {
		fmt.Fprintf(&b, " %d day(s) without a peak are left out.", len(missing))
	}
	b.WriteString("\n\n```mermaid\nxychart-beta\n")
	title := safeName(e["resource"])
	if ns, q := safeName(e["namespace"]), safeName(e["quota"]); ns != "" && q != "" {
		title = ns + "/" + q + " " + title
	}
	fmt.Fprintf(&b, "    title \"%s (%s)\"\n", title, u.name)
	fmt.Fprintf(&b, "    x-axis [%s]\n", strings.Join(labels, ", "))
	fmt.Fprintf(&b, "    y-axis \"%s\" 0 --> %s\n", u.name, number(yMax*1.1))
	fmt.Fprintf(&b, "    bar [%s]\n", strings.Join(peaks, ", "))
	fmt.Fprintf(&b, "    line [%s]\n", strings.Join(hardLine, ", "))
	fmt.Fprintf(&b, "    line [%s]\n", strings.Join(propLine, ", "))
	b.WriteString("```\n\n")
	return b.String(), true
}

// codeCell makes s safe as a `code span` inside a table cell: one line, no cell break.
func codeCell(s string) string {
	return code(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`).Replace(s))
}
