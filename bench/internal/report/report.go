package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
)

// Verdict is the outcome of a measurement against its target.
type Verdict int

const (
	None Verdict = iota // reported only, or no target
	Pass
	Fail
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	}
	return "n/a"
}

// Judge is Pass when ok, else Fail.
func Judge(ok bool) Verdict {
	if ok {
		return Pass
	}
	return Fail
}

// Combine is Fail if any verdict is Fail, Pass if at least one is Pass and none Fail, else None.
func Combine(vs ...Verdict) Verdict {
	out := None
	for _, v := range vs {
		if v == Fail {
			return Fail
		}
		if v == Pass {
			out = Pass
		}
	}
	return out
}

// Row is one line of a table. Broken: the measurement itself went wrong (or the property the
// bench exists for does not hold), which fails the run whatever -strict says; Why says what,
// or, on a row that is not broken, adds a note to its result.
type Row struct {
	Name, Measured, Target string
	Verdict                Verdict
	Broken                 bool
	Why                    string
}

// Result is the row's last cell: "FAIL: why" when broken, else the verdict with the note.
func (r Row) Result() string {
	res := r.Verdict.String()
	if r.Broken {
		res = "FAIL: " + r.Why
	} else if r.Why != "" {
		res += " (" + r.Why + ")"
	}
	return res
}

// Table is a markdown table of rows with the columns Heading (what the first column names:
// "scenario", "measure"), measured, target and result.
type Table struct {
	Heading string
	Rows    []Row
}

// String renders the table, heading line included; a "|" in a measured cell is escaped.
func (t Table) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s | measured | target | result |\n|---|---|---|---|\n", t.Heading)
	for _, row := range t.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", row.Name, strings.ReplaceAll(row.Measured, "|", `\|`), row.Target, row.Result())
	}
	return b.String()
}

// Broken says whether a row is broken.
func (t Table) Broken() bool {
	for _, row := range t.Rows {
		if row.Broken {
			return true
		}
	}
	return false
}

// Missed says whether a row missed its target (verdict Fail).
func (t Table) Missed() bool {
	for _, row := range t.Rows {
		if row.Verdict == Fail {
			return true
		}
	}
	return false
}

// MS writes d in milliseconds with one decimal: "12.5".
func MS(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// Latency is the median, p99 (nearest rank) and largest of ds: "p50 1.0 ms, p99 2.0 ms, max 3.0 ms".
func Latency(ds []time.Duration) string {
	return fmt.Sprintf("p50 %s ms, p99 %s ms, max %s ms",
		MS(kustosproc.Percentile(ds, 50)), MS(kustosproc.Percentile(ds, 99)), MS(kustosproc.Percentile(ds, 100)))
}
