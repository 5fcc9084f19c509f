package pr

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// An inactivity pause's or deletion's evidence carries each activity source's last activity of
// the target ("sources", "checkedAt", "coveredSince", "timeout", as the inactivity detector
// writes them). The pull request shows them as a table, a row per source, and a Mermaid
// xychart-beta of the time each source has not seen the target used against the timeout.
// As for a quota's window, everything in the chart is printed here from parsed values, so that
// no text from the cluster reaches it; where Mermaid is not rendered, the table and the
// caption say the same.

// activityKeys are the evidence entries the activity section shows; the facts table leaves
// them out when the section could read them.
var activityKeys = map[string]bool{"sources": true, "checkedAt": true, "coveredSince": true, "timeout": true}

// maxActivitySources bounds the sources read from one "sources" entry (the sources file holds
// at most 16).
const maxActivitySources = 16

// activitySourceName is a source's name as the sources file allows it.
var activitySourceName = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]{0,30}[a-z0-9])?$`)

// sourceLast is one source's last activity of the target.
type sourceLast struct {
	name string
	// at is the last activity; zero: none in what the source covers.
	at time.Time
	// unknown: the source did not answer at the check.
	unknown bool
}

// parseSources reads "nginx=2026-11-02T09:00:00Z,bastion=,ssh=?": per source, its last activity
// (RFC 3339), nothing for none, "?" for a source that did not answer. ok is false for anything
// else, for a name that is no source name, or for more than maxActivitySources sources.
func parseSources(s string) ([]sourceLast, bool) {
	if s == "" {
		return nil, false
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxActivitySources {
		return nil, false
	}
	out := make([]sourceLast, 0, len(parts))
	for _, p := range parts {
		name, at, found := strings.Cut(p, "=")
		if !found || !activitySourceName.MatchString(name) {
			return nil, false
		}
		src := sourceLast{name: name}
		switch at {
		case "":
		case "?":
			src.unknown = true
		default:
			t, err := time.Parse(time.RFC3339, at)
			if err != nil {
				return nil, false
			}
			src.at = t.UTC()
		}
		out = append(out, src)
	}
	return out, true
}

// parseTime is an RFC 3339 evidence time; zero when absent or unreadable.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// idleText is a duration as the table shows it: to the hour past two days, to the minute below.
func idleText(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d >= 48*time.Hour {
		return lifecycle.FormatDuration(d.Round(time.Hour))
	}
	return lifecycle.FormatDuration(d.Round(time.Minute))
}

// writeActivity renders e's activity per source when it carries one: a sentence, the table and,
// when charts > 0 and there is something to draw, one chart. It reports whether it wrote the
// section and whether it drew a chart.
func writeActivity(b *strings.Builder, e map[string]string, charts int) (wrote, drew bool) {
	sources, ok := parseSources(e["sources"])
	if !ok {
		return false, false
	}
	checked := parseTime(e["checkedAt"])
	covered := parseTime(e["coveredSince"])
	timeout, err := lifecycle.ParseDuration(e["timeout"])
	if err != nil {
		timeout = 0
	}

	b.WriteString("#### Activity per source\n\n")
	var said []string
	if !checked.IsZero() {
		said = append(said, "Read at the check of "+checked.Format("2006-01-02 15:04 UTC"))
	}
	if !covered.IsZero() {
		said = append(said, "every source has collected since "+covered.Format("2006-01-02 15:04 UTC")+", so no activity in one since then means none")
	}
	if timeout > 0 {
		said = append(said, "the timeout is "+lifecycle.FormatDuration(timeout))
	}
	if len(said) > 0 {
		line := strings.Join(said, "; ")
		b.WriteString(strings.ToUpper(line[:1]) + line[1:] + ".\n\n")
	}
	b.WriteString("| source | last active | idle at the check |\n|---|---|---:|\n")
	for _, s := range sources {
		last, idle := "", ""
		switch {
		case s.unknown:
			last, idle = "unknown: it did not answer at the check", "unknown"
		case s.at.IsZero() && !covered.IsZero():
			last = "none since " + covered.Format("2006-01-02 15:04 UTC")
			if !checked.IsZero() {
				idle = "at least " + idleText(checked.Sub(covered))
			}
		case s.at.IsZero():
			last, idle = "none within the lookback", "unknown"
		default:
			last = s.at.Format("2006-01-02 15:04 UTC")
			if !checked.IsZero() {
				idle = idleText(checked.Sub(s.at))
			}
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", s.name, last, idle)
	}
	b.WriteString("\n")
	if charts <= 0 {
		return true, false
	}
	c, ok := activityChart(sources, checked, covered, timeout)
	if ok {
		b.WriteString(c)
	}
	return true, ok
}

// activityChart is the caption and the fenced xychart-beta block of the idle time per source
// at the check; ok is false when there is nothing to draw (no check time, or no source whose
// idle time is known).
func activityChart(sources []sourceLast, checked, covered time.Time, timeout time.Duration) (string, bool) {
	if checked.IsZero() {
		return "", false
	}
	type bar struct {
		name  string
		idle  time.Duration
		lower bool
	}
	var bars []bar
	left := 0
	top := timeout
	for _, s := range sources {
		switch {
		case s.unknown, s.at.IsZero() && covered.IsZero():
			left++
			continue
		case s.at.IsZero():
			bars = append(bars, bar{s.name, max(checked.Sub(covered), 0), true})
		default:
			bars = append(bars, bar{s.name, max(checked.Sub(s.at), 0), false})
		}
		top = max(top, bars[len(bars)-1].idle)
	}
	if len(bars) == 0 {
		return "", false
	}
	u := unit{"hours", float64(time.Hour)}
	if top >= 48*time.Hour {
		u = unit{"days", float64(24 * time.Hour)}
	}
	scaled := func(d time.Duration) (float64, bool) {
		v := float64(d) / u.size
		return v, !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= maxChartValue
	}
	labels := make([]string, len(bars))
	values := make([]string, len(bars))
	lower := 0
	yMax := 0.0
	for i, br := range bars {
		v, ok := scaled(br.idle)
		if !ok {
			return "", false
		}
		labels[i] = strconv.Quote(safeName(br.name))
		values[i] = number(v)
		yMax = math.Max(yMax, v)
		if br.lower {
			lower++
		}
	}
	var line []string
	var tv float64
	if timeout > 0 {
		var ok bool
		if tv, ok = scaled(timeout); !ok {
			return "", false
		}
		yMax = math.Max(yMax, tv)
		line = make([]string, len(bars))
		for i := range line {
			line[i] = number(tv)
		}
	}
	if yMax <= 0 {
		yMax = 1
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Idle time per source in %s at the check of %s: the bars are the time since each source last saw the target used",
		u.name, checked.Format("2006-01-02 15:04 UTC"))
	if lower > 0 {
		fmt.Fprintf(&b, " (%d that saw none: the time it has collected since, at least)", lower)
	}
	if timeout > 0 {
		fmt.Fprintf(&b, "; the line is the timeout, %s %s", number(tv), u.name)
	}
	b.WriteString(".")
	if left > 0 {
		fmt.Fprintf(&b, " %d source(s) whose time is unknown are left out.", left)
	}
	b.WriteString("\n\n```mermaid\nxychart-beta\n")
	fmt.Fprintf(&b, "    title \"Idle per source (%s)\"\n", u.name)
	fmt.Fprintf(&b, "    x-axis [%s]\n", strings.Join(labels, ", "))
	fmt.Fprintf(&b, "    y-axis \"%s\" 0 --> %s\n", u.name, number(yMax*1.1))
	fmt.Fprintf(&b, "    bar [%s]\n", strings.Join(values, ", "))
	if line != nil {
		fmt.Fprintf(&b, "    line [%s]\n", strings.Join(line, ", "))
	}
	b.WriteString("```\n\n")
	return b.String(), true
}
