package promtest

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sample is one value of a series at one time.
type Sample struct {
	At    time.Time
	Value float64
}

// History is metric history written as OpenMetrics text for
// `promtool tsdb create-blocks-from openmetrics` (see [Options.History]). The zero value is an
// empty history.
//
// Timestamps are whole seconds: At is truncated to the second. promtool reads an OpenMetrics
// timestamp as float seconds and converts it with int64(seconds*1000), which turns some
// millisecond timestamps (1700000000.123) into the millisecond before; whole seconds are exact.
type History struct {
	families map[string]*family // by family name
}

type family struct {
	typ    string
	sample string             // sample name: the family name, for counters with _total
	series map[string]*series // by rendered label set
}

type series struct {
	labels string            // rendered: `{a="1",b="2"}`, or "" without labels
	values map[int64]float64 // by Unix second
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Add adds samples of the series metric{labels}. typ is "gauge" or "counter"; a counter's
// samples are named <family>_total as OpenMetrics requires, so metric may be given with or
// without the suffix ("requests" and "requests_total" are the same counter, queried as
// requests_total). Samples of a series may come in any order and over several calls; of two
// samples in the same second, the later Add wins.
//
// Add panics on what promtool would reject later with a less helpful message: an unknown
// type, a metric or label name Prometheus's classic syntax does not allow, a reserved label
// (__name__ ...), or one family name added as both gauge and counter.
func (h *History) Add(metric, typ string, labels map[string]string, samples ...Sample) {
	name, sample := metric, metric
	switch typ {
	case "gauge":
	case "counter":
		name = strings.TrimSuffix(metric, "_total")
		sample = name + "_total"
	default:
		panic(fmt.Sprintf("promtest: History.Add(%q): type %q, want gauge or counter", metric, typ))
	}
	if !metricName.MatchString(name) {
		panic(fmt.Sprintf("promtest: History.Add: invalid metric name %q", metric))
	}
	if h.families == nil {
		h.families = map[string]*family{}
	}
	f := h.families[name]
	if f == nil {
		f = &family{typ: typ, sample: sample, series: map[string]*series{}}
		h.families[name] = f
	}
	if f.typ != typ {
		panic(fmt.Sprintf("promtest: History.Add(%q): already added as a %s, now as a %s", metric, f.typ, typ))
	}
	key := renderLabels(metric, labels)
	s := f.series[key]
	if s == nil {
		s = &series{labels: key, values: map[int64]float64{}}
		f.series[key] = s
	}
	for _, smp := range samples {
		s.values[smp.At.Unix()] = smp.Value
	}
}

// renderLabels renders labels in OpenMetrics syntax, sorted by name so that equal sets are
// equal strings (the series key).
func renderLabels(metric string, labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if !labelName.MatchString(k) || strings.HasPrefix(k, "__") {
			panic(fmt.Sprintf("promtest: History.Add(%q): invalid label name %q", metric, k))
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(labelValueEscaper.Replace(labels[k]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// labelValueEscaper escapes what OpenMetrics label values must escape.
var labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// OpenMetrics returns the history in OpenMetrics text format: one TYPE line per family, its
// series one after another (families and series sorted, so the text is deterministic), each
// series' samples in time order (promtool's block writer refuses out-of-order samples), every
// sample with its timestamp in seconds, and the closing "# EOF".
func (h *History) OpenMetrics() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(h.families)) {
		f := h.families[name]
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, f.typ)
		for _, key := range slices.Sorted(maps.Keys(f.series)) {
			s := f.series[key]
			for _, at := range slices.Sorted(maps.Keys(s.values)) {
				// 'g' with -1 is the shortest exact form; NaN and ±Inf come out as OpenMetrics
				// spells them.
				fmt.Fprintf(&b, "%s%s %s %d\n", f.sample, s.labels, strconv.FormatFloat(s.values[at], 'g', -1, 64), at)
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// newest returns the time of the newest sample, and false for an empty history.
func (h *History) newest() (time.Time, bool) {
	newest, ok := int64(0), false
	for _, f := range h.families {
		for _, s := range f.series {
			for at := range s.values {
				if !ok || at > newest {
					newest, ok = at, true
				}
			}
		}
	}
	return time.Unix(newest, 0), ok
}
