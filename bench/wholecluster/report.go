package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

// The targets of issue 19 for the full-size shape, and each detector's own latency target
// (from its bench's doc.go).
const (
	maxPeakMiB   = 196                   // the reference quota controller's peak RSS at 10,000 namespaces
	maxAnonMiB   = 120                   // anonymous RSS
	maxIdleCPU   = 2.0                   // % of one core over the idle period
	quotaRefP99  = 49 * time.Millisecond // bench/controlplane: the reference's p99 at 10,000 namespaces; Kustos must be faster
	expiryDueP99 = time.Second           // bench/expiry: ExpiryDue p99 ≤ 1 s after the deadline
	cleanerP99   = 50 * time.Millisecond // bench/cleaners: re-evaluation p99 ≤ 50 ms
)

// cpuPercent is CPU time over a span as % of one core.
func cpuPercent(cpu, span time.Duration) float64 {
	if span <= 0 {
		return 0
	}
	return 100 * cpu.Seconds() / span.Seconds()
}

// judge is the verdict of ok for the full-size shape, none for another.
func judge(o options, ok bool) report.Verdict {
	if !o.fullSize() {
		return report.None
	}
	return report.Judge(ok)
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// table is the result as rows: measure | measured | target | result.
func (r result) table(o options) report.Table {
	t := report.Table{Heading: "measure"}
	add := func(row report.Row) { t.Rows = append(t.Rows, row) }
	if r.atPass.HWMKiB == 0 {
		add(report.Row{Name: "run", Measured: "–", Target: "–", Broken: true, Why: errString(r.err)})
		return t
	}
	add(report.Row{Name: "initial pass: Kustos's start until every target was looked at once", Target: "– (reported)",
		Measured: fmt.Sprintf("%.1f s (reconciles %s)", r.pass.Seconds(), reconcileString(r.passReconciles))})

	steady := "none within two check intervals and a minute"
	if r.steady > 0 {
		steady = fmt.Sprintf("%.1f s; the idle period starts after it", r.steady.Seconds())
	}
	add(report.Row{Name: "inactivity's first check after the pass decided, after Kustos's start (start-up work over)", Target: "– (reported)", Measured: steady})

	peak := max(r.atPass.HWMKiB, r.afterIdle.HWMKiB)
	add(report.Row{Name: "peak RSS (VmHWM) after the pass / after idle", Target: fmt.Sprintf("≤ %d MiB", maxPeakMiB),
		Measured: fmt.Sprintf("%.1f / %.1f MiB", mib(r.atPass.HWMKiB), mib(peak)),
		Verdict:  judge(o, mib(peak) <= maxPeakMiB)})
	anon := max(r.atPass.AnonKiB, r.afterIdle.AnonKiB)
	add(report.Row{Name: "anonymous RSS (RssAnon) after the pass / after idle", Target: fmt.Sprintf("≤ %d MiB", maxAnonMiB),
		Measured: fmt.Sprintf("%.1f / %.1f MiB", mib(r.atPass.AnonKiB), mib(r.afterIdle.AnonKiB)),
		Verdict:  judge(o, r.afterIdle.AnonKiB > 0 && mib(anon) <= maxAnonMiB)})
	add(report.Row{Name: "Go heap after GC (" + metricHeapLive + ") after the pass / after idle", Target: "– (reported)",
		Measured: fmt.Sprintf("%s / %s", r.heapPass, r.heapIdle)})
	idleCPU := r.afterIdle.CPU - r.beforeIdle.CPU
	add(report.Row{Name: "CPU over the idle period", Target: fmt.Sprintf("≤ %g%% of a core", maxIdleCPU),
		Measured: fmt.Sprintf("%.2f s over %.0f s: %.2f%% of a core", idleCPU.Seconds(), r.idle.Seconds(), cpuPercent(idleCPU, r.idle)),
		Verdict:  judge(o, r.idle > 0 && cpuPercent(idleCPU, r.idle) <= maxIdleCPU)})
	idleRow := report.Row{Name: "Kustos Events while idle", Target: "none", Measured: fmt.Sprint(r.idleEvents)}
	if r.idleEvents > 0 {
		idleRow.Broken, idleRow.Why = true, "nothing was due"
	} else {
		idleRow.Verdict = report.Pass
	}
	add(idleRow)
	if r.afterIdle.HWMKiB == 0 {
		return t
	}

	add(latencyRow("quota: raised to 95% → QuotaResizeRecommended Event", r.quota,
		fmt.Sprintf("p99 < %s ms", report.MS(quotaRefP99)), func(p99 time.Duration) bool { return p99 < quotaRefP99 }, o))
	add(expiryRow(r, o))
	if o.cleanerSamples > 0 {
		add(latencyRow("Cleaners: target scaled to 0 → status due", r.cleaner,
			fmt.Sprintf("p99 ≤ %s ms", report.MS(cleanerP99)), func(p99 time.Duration) bool { return p99 <= cleanerP99 }, o))
	}
	add(cycleRow(r.cycles, o))
	if r.churn != nil {
		add(churnRow(*r.churn, o))
	}
	return t
}

func errString(err error) string {
	if err == nil {
		return "not measured"
	}
	return strings.ReplaceAll(err.Error(), "|", `\|`)
}

func reconcileString(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func latencyString(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	return report.Latency(ds)
}

// latencyRow: a sample without its answer, an answer about an unsampled object or a failed
// write breaks the measurement; the p99 is judged by ok.
func latencyRow(name string, s samples, target string, ok func(p99 time.Duration) bool, o options) report.Row {
	row := report.Row{Name: name, Target: target,
		Measured: fmt.Sprintf("%d/%d: %s", len(s.latencies), s.expected, latencyString(s.latencies))}
	row.Verdict = judge(o, len(s.latencies) > 0 && ok(kustosproc.Percentile(s.latencies, 99)))
	var bad []string
	if m := s.missing(); m > 0 {
		bad = append(bad, fmt.Sprintf("%d never answered within %s", m, o.timeout))
	}
	if s.unexpected > 0 {
		bad = append(bad, fmt.Sprintf("%d about objects not sampled", s.unexpected))
	}
	if s.errors > 0 {
		bad = append(bad, fmt.Sprintf("%d writes failed", s.errors))
	}
	row.Broken, row.Why = len(bad) > 0, strings.Join(bad, ", ")
	return row
}

func expiryRow(r result, o options) report.Row {
	st := r.expiry.Stats
	row := report.Row{Name: "expiry: ExpiryDue seen − deadline", Target: fmt.Sprintf("p99 ≤ %g s, none early", expiryDueP99.Seconds()),
		Measured: fmt.Sprintf("%d/%d: %s; %d early", len(st.DueLate), len(r.expiry.Scheduled), latencyString(st.DueLate), st.EarlyDue)}
	row.Verdict = judge(o, len(st.DueLate) > 0 && kustosproc.Percentile(st.DueLate, 99) <= expiryDueP99)
	bad, notes := st.Broken()
	if len(r.expiry.Scheduled) == 0 {
		bad = append(bad, "not measured")
	}
	row.Broken, row.Why = len(bad) > 0, strings.Join(append(bad, notes...), ", ")
	return row
}

// cycleRow: the inactivity detector's check cycles after the pass; the wall time from the last
// read before its queries were counted to the read that showed every target decided must stay
// below the check interval (bench/inactivity's target). No complete cycle breaks the measurement.
func cycleRow(cs []cycle, o options) report.Row {
	var walls []time.Duration
	for _, c := range cs {
		if c.complete {
			walls = append(walls, c.wall())
		}
	}
	row := report.Row{Name: "inactivity: check cycle, first query → every target decided", Target: fmt.Sprintf("p99 < %s (the check interval)", o.checkInterval),
		Measured: fmt.Sprintf("%d cycles (%d complete): %s; resolution %s", len(cs), len(walls), latencyString(walls), o.poll)}
	if len(walls) == 0 {
		row.Broken, row.Why = true, "no complete check cycle after the idle period"
	} else {
		row.Verdict = judge(o, kustosproc.Percentile(walls, 99) < o.checkInterval)
	}
	return row
}

func churnRow(c churnResult, o options) report.Row {
	ref, end, g, ok := growth(c.heap, o.churn)
	row := report.Row{Name: fmt.Sprintf("churn %s: heap after GC, median from %s to %s → median of the last %s", o.churn,
		ref.at.Round(time.Second), (o.churn / 3).Round(time.Second), (o.churn / 6).Round(time.Second)),
		Target: fmt.Sprintf("≤ +%.0f%%", maxGrowth*100)}
	if !ok {
		row.Measured, row.Broken, row.Why = fmt.Sprintf("%d readings", len(c.heap)), true, "too few heap readings to compare"
		return row
	}
	row.Measured = fmt.Sprintf("%.1f → %.1f MiB (%+.1f%%); %d tenants created, %d deleted", ref.live/(1<<20), end.live/(1<<20), g*100, c.created, c.deleted)
	// Growth is judged at any size: it is the property churn exists for.
	row.Verdict = report.Judge(end.live <= ref.live*(1+maxGrowth))
	return row
}

func render(r result, o options, t report.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Kustos on a whole cluster, every detector on\n\n")
	fmt.Fprintf(&b, "%d namespaces with quotas at 20%%; %d Deployments (%d expiry, %d inactivity targets); %d Cleaners (9 in 10 share one condition); %d noise Events. "+
		"Observer mode; idle %s; inactivity checks every %s.",
		o.namespaces, o.deployments, o.deployments/10, o.deployments/10, o.cleaners, o.events, o.idle, o.checkInterval)
	if !o.fullSize() {
		b.WriteString(" Not the full-size shape: reported without verdicts (churn growth excepted).")
	}
	b.WriteString("\n\n")
	b.WriteString(t.String())
	fmt.Fprintf(&b, "\nSetup %.1f s, Prometheus %.1f s. Peak RSS over the whole run %.1f MiB; at the end RSS %.1f MiB (anonymous %.1f MiB), CPU %.2f s (%.2f s with shutdown).\n",
		r.setup.Seconds(), r.promSetup.Seconds(), mib(r.peakHWM), r.end.RSSMiB(), r.end.AnonMiB(), r.end.CPU.Seconds(), r.cpuTotal.Seconds())
	return b.String()
}
