package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

// dueP99 is the Target: ExpiryDue is seen at most this long after it is due (p99, nearest rank:
// with 50 samples, the largest).
const dueP99 = time.Second

func (r result) table(o options) report.Table {
	return report.Table{Heading: "scenario", Rows: r.rows(o)}
}

// rows are the lines of the table; a row is broken when the measurement itself went wrong (an
// Event missing, early, or not expected at all).
func (r result) rows(o options) []report.Row {
	var rows []report.Row
	pass := report.Row{Name: fmt.Sprintf("initial pass over %d idle Deployments", o.n), Target: "– (reported)"}
	if r.atPass.HWMKiB == 0 {
		pass.Broken, pass.Why = true, "not measured"
		return append(rows, pass)
	}
	pass.Measured = fmt.Sprintf("done by %.1f s after start (%.0f reconciles); then CPU %.2f s, RSS %.1f MiB, peak RSS %.1f MiB",
		r.pass.Seconds(), r.passReconciles, r.atPass.CPU.Seconds(), r.atPass.RSSMiB(), r.atPass.HWMMiB())
	rows = append(rows, pass)

	idle := report.Row{Name: fmt.Sprintf("idle period (%s, nothing due)", o.idle), Target: "– (reported)"}
	if r.afterIdle.HWMKiB == 0 {
		idle.Broken, idle.Why = true, "not measured"
		return append(rows, idle)
	}
	idle.Measured = fmt.Sprintf("CPU +%.2f s; %.0f reconciles, %.0f API requests, %d Events; after it RSS %.1f MiB, peak RSS %.1f MiB",
		(r.afterIdle.CPU - r.atPass.CPU).Seconds(), r.idleReconciles, r.idleRequests, r.idleEvents, r.afterIdle.RSSMiB(), peakMiB(r.atPass, r.afterIdle))
	if r.idleEvents > 0 {
		idle.Broken, idle.Why = true, fmt.Sprintf("%d Kustos Events while nothing was due", r.idleEvents)
	}
	rows = append(rows, idle)
	if len(r.sched) == 0 {
		return rows
	}

	st, n := r.stats, len(r.sched)
	warn := report.Row{Name: "(reported) ExpiryWarning seen − (deadline − warning-before)", Target: "– (reported)",
		Measured: fmt.Sprintf("%d/%d: %s", len(st.WarnLate), n,
			report.Latency(st.WarnLate))}
	var bad, notes []string
	if st.MissingWarn > 0 {
		bad = append(bad, fmt.Sprintf("%d never warned", st.MissingWarn))
	}
	if st.EarlyWarn > 0 {
		bad = append(bad, fmt.Sprintf("%d warned early", st.EarlyWarn))
	}
	if st.DupWarn > 0 {
		notes = append(notes, fmt.Sprintf("%d duplicate warnings", st.DupWarn))
	}
	warn.Broken, warn.Why = len(bad) > 0, strings.Join(append(bad, notes...), ", ")
	rows = append(rows, warn)

	due := report.Row{Name: "ExpiryDue seen − due time (the deadline)", Target: fmt.Sprintf("p99 ≤ %g s, none early", dueP99.Seconds()),
		Measured: fmt.Sprintf("%d/%d: %s; %d early", len(st.DueLate), n,
			report.Latency(st.DueLate), st.EarlyDue)}
	due.Verdict = report.Judge(len(st.DueLate) > 0 && kustosproc.Percentile(st.DueLate, 99) <= dueP99)
	bad, notes = st.Broken()
	due.Broken, due.Why = len(bad) > 0, strings.Join(append(bad, notes...), ", ")
	rows = append(rows, due)

	if u := r.unexpected; u > 0 {
		rows = append(rows, report.Row{Name: "unexpected Kustos Events", Target: "none",
			Measured: fmt.Sprintf("%d: %s", u, strings.Join(r.examples, "; ")),
			Broken:   true, Why: "Events about idle Deployments, or of other reasons"})
	}
	return rows
}

func render(r result, o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Kustos expiry on a real control plane\n\n")
	fmt.Fprintf(&b, "%d idle Deployments (replicas 0, kustos.io/owner and kustos.io/expires-at %s ahead) in %d namespaces, idle %s; "+
		"%d Deployments with deadlines %s–%s after creation, --expiry-warning-before=%s --notification-interval=%s. Observer mode, Cleaners off.\n\n",
		o.n, days(o.farFuture), o.namespaces, o.idle, o.scheduled, o.from, o.to, o.warningBefore, o.interval)
	b.WriteString(r.table(o).String())
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
