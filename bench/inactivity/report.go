package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

// broken is the first broken row's explanation ("" none).
func (r result) broken(o options) string {
	for _, row := range r.rows(o) {
		if row.Broken {
			return row.Name + ": " + row.Why
		}
	}
	return ""
}

func (r result) table(o options) report.Table {
	return report.Table{Heading: "measure", Rows: r.rows(o)}
}

// rows are the lines of the table; a row is broken when the measurement itself went wrong, or
// the property the bench exists for (one query per source per cycle) does not hold.
func (r result) rows(o options) []report.Row {
	var rows []report.Row
	pass := report.Row{Name: fmt.Sprintf("initial pass over %s targets after Kustos's start", thousands(o.n)), Target: "– (reported)"}
	if r.atPass.HWMKiB == 0 {
		pass.Broken, pass.Why = true, "not measured"
		return append(rows, pass)
	}
	pass.Measured = fmt.Sprintf("done by %.1f s (%.0f reconciles); then CPU %.2f s, RSS %.1f MiB, peak RSS %.1f MiB",
		r.pass.Seconds(), r.passReconciles, r.atPass.CPU.Seconds(), r.atPass.RSSMiB(), r.atPass.HWMMiB())
	rows = append(rows, pass)

	// Queries per cycle, over every cycle the proxy saw (the first, at start, included).
	q := report.Row{Name: "Prometheus queries per check cycle (counted by the proxy)", Target: fmt.Sprintf("= sources (%d)", r.sources)}
	counts := map[int]int{}
	var bad []string
	proxied, other, ranges := 0, 0, 0
	for _, c := range r.cycles {
		counts[c.queries]++
		proxied += c.queries
		other += c.other
		ranges += c.ranges
		for _, m := range sourceMarkers {
			if c.bySource[m.source] != 1 && len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("cycle %d asked %s %d times", c.index, m.source, c.bySource[m.source]))
			}
		}
		if c.queries != r.sources && len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("cycle %d: %d queries", c.index, c.queries))
		}
		if c.failed > 0 && len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("cycle %d: %d answers other than 200", c.index, c.failed))
		}
	}
	var kustosQueries float64
	for _, c := range r.measured {
		kustosQueries += c.kustosQueries
		if c.okQueries != float64(r.sources) && len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("cycle %d: %.0f sources answered ok, want %d", c.index, c.okQueries, r.sources))
		}
	}
	q.Measured = fmt.Sprintf("%s over %d cycles (%s instant, %d range queries; %d requests to other paths); "+
		"in the %d measured cycles Kustos's kustos_activity_queries_total rose by %.0f",
		countsString(counts), len(r.cycles), thousands(proxied-ranges), ranges, other, len(r.measured), kustosQueries)
	switch {
	case len(r.cycles) == 0:
		q.Broken, q.Why = true, "no cycle seen"
	case len(bad) > 0:
		q.Broken, q.Why = true, strings.Join(bad, ", ")
	default:
		q.Verdict = report.Pass
	}
	rows = append(rows, q)

	rows = append(rows, report.Row{Name: "(arithmetic, not measured) a per-target approach",
		Measured: fmt.Sprintf("%s targets × %d sources = %s queries per cycle, %s a second at a %s interval (measured: %d per cycle, %.2f a second)",
			thousands(o.n), r.sources, thousands(o.n*r.sources), thousands(int(float64(o.n*r.sources)/o.interval.Seconds())), o.interval,
			r.sources, float64(r.sources)/o.interval.Seconds()),
		Target: "–"})

	if len(r.cycles) > 0 {
		first := r.cycles[0]
		f := report.Row{Name: fmt.Sprintf("first check, at start (window = --activity-lookback %s)", o.lookback), Target: "– (reported)"}
		f.Measured = fmt.Sprintf("%s; Prometheus answered in %s ms (both queries, at the proxy)", checkString(first), report.MS(first.promTime))
		rows = append(rows, f)
	}

	m := report.Row{Name: fmt.Sprintf("measured cycles (complete, after the initial pass), interval %s", o.interval), Target: fmt.Sprintf("%d", o.cycles),
		Measured: fmt.Sprintf("%d", len(r.measured))}
	if len(r.measured) < o.cycles {
		m.Broken, m.Why = true, "too few cycles measured"
	}
	rows = append(rows, m)
	if len(r.measured) == 0 {
		return rows
	}

	var checks, prom, walls, after, meanRec []time.Duration
	var cpus, cpuDecide []time.Duration
	var recs, api, events, errs, alloc float64
	unsettled := 0
	var periods time.Duration
	for _, c := range r.measured {
		if c.checkKnown {
			checks = append(checks, c.check)
		}
		prom = append(prom, c.promTime)
		if c.settled {
			walls = append(walls, c.decideWall())
			after = append(after, c.afterAnswer())
			meanRec = append(meanRec, c.meanRec)
			cpuDecide = append(cpuDecide, c.cpuDecide)
			recs += c.reconciles
		} else {
			unsettled++
		}
		cpus = append(cpus, c.cpu)
		periods += c.period
		api += c.apiRequests
		events += c.events
		errs += c.errors
		alloc += c.allocated
	}
	k := float64(len(r.measured))
	ch := report.Row{Name: "one check: kustos_activity_check_duration_seconds (Kustos's own)", Target: "– (reported)",
		Measured: fmt.Sprintf("p50 %s ms, max %s ms over %d cycles; of it, Prometheus's answers at the proxy: p50 %s ms, max %s ms",
			report.MS(kustosproc.Percentile(checks, 50)), report.MS(kustosproc.Percentile(checks, 100)), len(checks),
			report.MS(kustosproc.Percentile(prom, 50)), report.MS(kustosproc.Percentile(prom, 100)))}
	if len(checks) < len(r.measured) {
		ch.Why = fmt.Sprintf("%d cycles without exactly one check between two reads", len(r.measured)-len(checks))
	}
	rows = append(rows, ch)

	w := report.Row{Name: fmt.Sprintf("one cycle's wall time: first query → all %s targets decided", thousands(o.n)), Target: fmt.Sprintf("< interval (%s)", o.interval)}
	if len(walls) > 0 {
		w.Measured = fmt.Sprintf("p50 %s s, max %s s (after the last answer: p50 %s s, max %s s); %.0f reconciles per cycle, mean %s µs each",
			sec(kustosproc.Percentile(walls, 50)), sec(kustosproc.Percentile(walls, 100)),
			sec(kustosproc.Percentile(after, 50)), sec(kustosproc.Percentile(after, 100)),
			recs/float64(len(walls)), us(kustosproc.Percentile(meanRec, 50)))
	}
	w.Verdict = report.Judge(unsettled == 0 && len(walls) > 0 && kustosproc.Percentile(walls, 100) < o.interval)
	if unsettled > 0 {
		w.Why = fmt.Sprintf("%d cycles not decided before the next one", unsettled)
	}
	rows = append(rows, w)

	var cpuSum, decideSum time.Duration
	for _, c := range cpus {
		cpuSum += c
	}
	for _, c := range cpuDecide {
		decideSum += c
	}
	cpuRow := report.Row{Name: "Kustos CPU per cycle", Target: "– (reported)",
		Measured: fmt.Sprintf("%.2f s per %.1f s cycle (%.0f%% of one core), of it %.2f s until all were decided",
			cpuSum.Seconds()/k, periods.Seconds()/k, 100*cpuSum.Seconds()/periods.Seconds(), decideSum.Seconds()/max(1, float64(len(cpuDecide))))}
	rows = append(rows, cpuRow)

	mem := report.Row{Name: "Kustos memory", Target: "– (reported)",
		Measured: fmt.Sprintf("RSS %.1f MiB at the end, peak RSS %.1f MiB (largest VmHWM read; largest RSS read %.1f MiB); Go heap %.1f MiB at the end; %.1f MiB allocated per cycle",
			r.end.RSSMiB(), r.peak.HWMMiB(), r.peak.RSSMiB(), r.endHeap/(1<<20), alloc/k/(1<<20))}
	rows = append(rows, mem)

	apiRow := report.Row{Name: "Kustos API requests and Events per cycle", Target: "– (reported)",
		Measured: fmt.Sprintf("%.1f API requests, %.1f Events, %.0f reconcile errors per cycle", api/k, events/k, errs/k)}
	if errs > 0 {
		apiRow.Broken, apiRow.Why = true, "reconcile errors"
	}
	rows = append(rows, apiRow)

	act := report.Row{Name: "activity seen: state Leases holding a last activity", Target: "the targets in use, only them"}
	a := r.activity
	active := min(o.active, o.n)
	act.Measured = fmt.Sprintf("%d/%d targets in use, %d idle ones (%d inactivity Leases)", a.seen, active, a.idleSeen, a.leases)
	var wrong []string
	if a.seen < active {
		wrong = append(wrong, fmt.Sprintf("%d in use without one: %s", active-a.seen, strings.Join(a.missing, ", ")))
	}
	if a.idleSeen > 0 {
		wrong = append(wrong, fmt.Sprintf("%d idle with one: %s", a.idleSeen, strings.Join(a.idleExamples, ", ")))
	}
	if a.leases > active {
		// No target here is idle yet: only those in use have anything to remember.
		wrong = append(wrong, fmt.Sprintf("%d state Leases for %d targets in use: targets with nothing to remember got one", a.leases, active))
	}
	if len(wrong) > 0 {
		act.Broken, act.Why = true, strings.Join(wrong, "; ")
	} else {
		act.Verdict = report.Pass
	}
	rows = append(rows, act)
	return rows
}

func render(r result, o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Kustos inactivity on a real control plane and a real Prometheus\n\n")
	fmt.Fprintf(&b, "%s Deployments (replicas 1, nothing runs them) in %d namespaces, all targets (--inactivity-timeout=%s); "+
		"%d in use (%d by a growing ingress-nginx request counter, %d by an open bastion SSH session), the rest idle. "+
		"Prometheus scrapes %s+%s series every %s; Kustos asks it through a counting proxy with the default sources "+
		"(nginx, bastion), --inactivity-check-interval=%s --activity-min-step=%s --activity-lookback=%s. Observer mode, Cleaners and expiry off.\n\n",
		thousands(o.n), o.namespaces, o.timeout, min(o.active, o.n), (min(o.active, o.n)+1)/2, min(o.active, o.n)/2,
		thousands(o.n), thousands(o.n), o.scrape, o.interval, o.minStep, o.lookback)
	b.WriteString(r.table(o).String())
	if r.err != nil {
		fmt.Fprintf(&b, "\nRun FAILED: %s\n", strings.ReplaceAll(r.err.Error(), "\n", " "))
	}
	fmt.Fprintf(&b, "\nSetup: namespaces and %s Deployments %.1f s; Prometheus with every series scraped %.1f s. "+
		"A cycle is the requests the proxy saw within half an interval of each other. \"Decided\" is the first of two consecutive reads "+
		"of Kustos's /metrics (every %s, %d reads in all), after the cycle's last answer, that show at least %s inactivity reconciles "+
		"(kustos_reconcile_duration_seconds_count{detector=\"inactivity\"}) since the last read before that answer, "+
		"an empty inactivity work queue and no busy worker. CPU is utime+stime of the Kustos process, per cycle from the last read "+
		"before its first query to the last read before the next cycle's.\n",
		thousands(o.n), r.setup.Seconds(), r.promSetup.Seconds(), o.poll, r.obs, thousands(o.n))
	if r.end.HWMKiB > 0 {
		fmt.Fprintf(&b, "Whole life of the Kustos process, shutdown included: CPU %.2f s.\n", r.cpuTotal.Seconds())
	}
	return b.String()
}

func checkString(c cycle) string {
	if !c.checkKnown {
		return "check duration not known"
	}
	return "check " + report.MS(c.check) + " ms"
}

// cycleString says when a cycle's targets were all decided and what the cycle cost.
func cycleString(c cycle) string {
	s := "not decided before the next cycle"
	if c.settled {
		s = fmt.Sprintf("all decided %s s after the first query (%s s after the last answer), %.0f reconciles, CPU %.2f s",
			sec(c.decideWall()), sec(c.afterAnswer()), c.reconciles, c.cpuDecide.Seconds())
	}
	if c.complete {
		s += fmt.Sprintf("; over the %.1f s cycle CPU %.2f s, %.0f API requests, %.1f MiB allocated", c.period.Seconds(), c.cpu.Seconds(), c.apiRequests, c.allocated/(1<<20))
	}
	return s
}

// countsString is "2 in each" or "2 in 5, 3 in 1".
func countsString(counts map[int]int) string {
	if len(counts) == 1 {
		for n := range counts {
			return fmt.Sprintf("%d in each", n)
		}
	}
	keys := make([]int, 0, len(counts))
	for n := range counts {
		keys = append(keys, n)
	}
	sort.Ints(keys)
	parts := make([]string, 0, len(keys))
	for _, n := range keys {
		parts = append(parts, fmt.Sprintf("%d in %d", n, counts[n]))
	}
	return strings.Join(parts, ", ")
}

func us(d time.Duration) string  { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }
func sec(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

// thousands writes n with comma separators: 10000 → "10,000".
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
