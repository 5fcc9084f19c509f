package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
)

// dueP99 is the target: ExpiryDue is seen at most this long after it is due (p99, nearest rank:
// with 50 samples, the largest).
const dueP99 = time.Second

type verdict int

const (
	verdictNone verdict = iota // reported only
	verdictPass
	verdictFail
)

func (v verdict) String() string {
	switch v {
	case verdictPass:
		return "PASS"
	case verdictFail:
		return "FAIL"
	}
	return "n/a"
}

func judge(ok bool) verdict {
	if ok {
		return verdictPass
	}
	return verdictFail
}

// row is one line of the table. broken: the measurement itself went wrong (an Event missing,
// early, or not expected at all), which fails the run whatever -strict says.
type row struct {
	scenario, measured, target string
	verdict                    verdict
	broken                     bool
	why                        string
}

func (r result) rows(o options) []row {
	var rows []row
	pass := row{scenario: fmt.Sprintf("initial pass over %d idle Deployments", o.n), target: "– (reported)"}
	if r.atPass.HWMKiB == 0 {
		pass.broken, pass.why = true, "not measured"
		return append(rows, pass)
	}
	pass.measured = fmt.Sprintf("done by %.1f s after start (%.0f reconciles); then CPU %.2f s, RSS %.1f MiB, peak RSS %.1f MiB",
		r.pass.Seconds(), r.passReconciles, r.atPass.CPU.Seconds(), r.atPass.RSSMiB(), r.atPass.HWMMiB())
	rows = append(rows, pass)

	idle := row{scenario: fmt.Sprintf("idle period (%s, nothing due)", o.idle), target: "– (reported)"}
	if r.afterIdle.HWMKiB == 0 {
		idle.broken, idle.why = true, "not measured"
		return append(rows, idle)
	}
	idle.measured = fmt.Sprintf("CPU +%.2f s; %.0f reconciles, %.0f API requests, %d Events; after it RSS %.1f MiB, peak RSS %.1f MiB",
		(r.afterIdle.CPU - r.atPass.CPU).Seconds(), r.idleReconciles, r.idleRequests, r.idleEvents, r.afterIdle.RSSMiB(), peakMiB(r.atPass, r.afterIdle))
	if r.idleEvents > 0 {
		idle.broken, idle.why = true, fmt.Sprintf("%d Kustos Events while nothing was due", r.idleEvents)
	}
	rows = append(rows, idle)
	if len(r.sched) == 0 {
		return rows
	}

	st, n := r.stats, len(r.sched)
	warn := row{scenario: "(reported) ExpiryWarning seen − (deadline − warning-before)", target: "– (reported)",
		measured: fmt.Sprintf("%d/%d: p50 %s ms, p99 %s ms, max %s ms", len(st.warnLate), n,
			ms(kustosproc.Percentile(st.warnLate, 50)), ms(kustosproc.Percentile(st.warnLate, 99)), ms(kustosproc.Percentile(st.warnLate, 100)))}
	var bad, notes []string
	if st.missingWarn > 0 {
		bad = append(bad, fmt.Sprintf("%d never warned", st.missingWarn))
	}
	if st.earlyWarn > 0 {
		bad = append(bad, fmt.Sprintf("%d warned early", st.earlyWarn))
	}
	if st.dupWarn > 0 {
		notes = append(notes, fmt.Sprintf("%d duplicate warnings", st.dupWarn))
	}
	warn.broken, warn.why = len(bad) > 0, strings.Join(append(bad, notes...), ", ")
	rows = append(rows, warn)

	due := row{scenario: "ExpiryDue seen − due time (the deadline)", target: fmt.Sprintf("p99 ≤ %g s, none early", dueP99.Seconds()),
		measured: fmt.Sprintf("%d/%d: p50 %s ms, p99 %s ms, max %s ms; %d early", len(st.dueLate), n,
			ms(kustosproc.Percentile(st.dueLate, 50)), ms(kustosproc.Percentile(st.dueLate, 99)), ms(kustosproc.Percentile(st.dueLate, 100)), st.earlyDue)}
	due.verdict = judge(len(st.dueLate) > 0 && kustosproc.Percentile(st.dueLate, 99) <= dueP99)
	bad, notes = nil, nil
	if st.missingDue > 0 {
		bad = append(bad, fmt.Sprintf("%d never due", st.missingDue))
	}
	if st.earlyDue > 0 {
		bad = append(bad, fmt.Sprintf("%d due early", st.earlyDue))
	}
	if st.unwarned > 0 {
		bad = append(bad, fmt.Sprintf("%d due without a warning", st.unwarned))
	}
	if st.unknown > 0 {
		bad = append(bad, fmt.Sprintf("%d warned too late to know the due time", st.unknown))
	}
	if st.dupDue > 0 {
		notes = append(notes, fmt.Sprintf("%d duplicate ExpiryDue", st.dupDue))
	}
	due.broken, due.why = len(bad) > 0, strings.Join(append(bad, notes...), ", ")
	rows = append(rows, due)

	if u := r.unexpected + len(r.otherEvents); u > 0 {
		rows = append(rows, row{scenario: "unexpected Kustos Events", target: "none",
			measured: fmt.Sprintf("%d: %s", u, strings.Join(append(append([]string(nil), r.examples...), r.otherEvents...), "; ")),
			broken:   true, why: "Events about idle Deployments, or of other reasons"})
	}
	return rows
}

func render(r result, o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Kustos expiry on a real control plane\n\n")
	fmt.Fprintf(&b, "%d idle Deployments (replicas 0, kustos.io/owner and kustos.io/expires-at %s ahead) in %d namespaces, idle %s; "+
		"%d Deployments with deadlines %s–%s after creation, --expiry-warning-before=%s --notification-interval=%s. Observer mode, Cleaners off.\n\n",
		o.n, days(o.farFuture), o.namespaces, o.idle, o.scheduled, o.from, o.to, o.warningBefore, o.interval)
	b.WriteString("| scenario | measured | target | result |\n|---|---|---|---|\n")
	for _, row := range r.rows(o) {
		res := row.verdict.String()
		if row.broken {
			res = "FAIL: " + row.why
		} else if row.why != "" {
			res += " (" + row.why + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", row.scenario, strings.ReplaceAll(row.measured, "|", `\|`), row.target, res)
	}
	if r.err != nil {
		fmt.Fprintf(&b, "\nRun FAILED: %s\n", strings.ReplaceAll(r.err.Error(), "\n", " "))
	}
	fmt.Fprintf(&b, "\nSetup (namespaces and %d Deployments) took %.1f s; the scheduled group %.1f s. "+
		"The initial pass is over when Kustos's metrics show at least %d Deployment reconciles and an empty expiry queue twice in a row (read every %s). "+
		"Peak RSS is the largest VmHWM read so far and CPU utime+stime of the Kustos process.\n",
		o.n, r.setup.Seconds(), r.schedSetup.Seconds(), o.n, o.poll)
	if r.end.HWMKiB > 0 {
		fmt.Fprintf(&b, "At the end (before SIGTERM): CPU %.2f s, RSS %.1f MiB, peak RSS %.1f MiB; whole life with shutdown: CPU %.2f s; %.0f reconcile errors of the expiry detector.\n",
			r.end.CPU.Seconds(), r.end.RSSMiB(), peakMiB(r.atPass, r.afterIdle, r.end), r.cpuTotal.Seconds(), r.errors)
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// days writes whole days as such ("30d"), anything else as a Go duration.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// peakMiB is the largest VmHWM of the samples, in MiB. Linux updates the high-water mark it
// keeps only at some points (when memory is unmapped, for instance) and reports the larger of
// it and the current RSS, so a later VmHWM can be lower than an earlier reading.
func peakMiB(ss ...kustosproc.Sample) float64 {
	var m int64
	for _, s := range ss {
		m = max(m, s.HWMKiB)
	}
	return float64(m) / 1024
}
