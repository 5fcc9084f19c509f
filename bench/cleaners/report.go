package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/bench/internal/kustosproc"
	"github.com/kustos-dev/kustos/bench/internal/report"
)

// Targets.
const (
	reevalP99    = 50 * time.Millisecond // p99 from the target's update to the due status
	monotonicMax = time.Second           // a monotonic Cleaner is seen due at most this late
)

func (r result) table() report.Table { return report.Table{Heading: "scenario", Rows: r.rows()} }

// rows are the lines of the table; a row is broken when the measurement itself went wrong (a
// Cleaner missing, due too early, deleted...).
func (r result) rows() []report.Row {
	var rows []report.Row
	// Idle cost: reported; broken if not every Cleaner was evaluated, or one was due or deleted.
	idle := report.Row{Name: "idle cost", Target: "– (reported)"}
	if r.atEval.HWMKiB > 0 {
		idle.Measured = fmt.Sprintf("%d evaluated: first %.1f s, all %.1f s after start, CPU %.2f s then",
			r.evaluated, r.firstEval.Seconds(), r.allEval.Seconds(), r.atEval.CPU.Seconds())
	}
	if r.afterIdle.HWMKiB > 0 {
		idle.Measured += fmt.Sprintf("; after idle: CPU %.2f s (+%.2f s idle), RSS %.1f MiB, peak RSS %.1f MiB; %d status writes while idle",
			r.afterIdle.CPU.Seconds(), (r.afterIdle.CPU - r.atEval.CPU).Seconds(), r.afterIdle.RSSMiB(), r.afterIdle.HWMMiB(), r.idleWrites)
		if r.idleWrites > 0 {
			idle.Measured += fmt.Sprintf(", the last %.1f s into it", r.idleLastWrite.Seconds())
		}
	}
	switch {
	case r.afterIdle.HWMKiB == 0:
		idle.Broken, idle.Why = true, "not measured"
	case r.dueEarly > 0:
		idle.Broken, idle.Why = true, fmt.Sprintf("%d due before any change", r.dueEarly)
	case r.deleted > 0:
		idle.Broken, idle.Why = true, fmt.Sprintf("%d deleted in observer mode", r.deleted)
	}
	rows = append(rows, idle)
	if r.afterIdle.HWMKiB == 0 {
		return rows
	}

	if len(r.probe) > 0 {
		rows = append(rows, report.Row{Name: "(reference) API server: one Cleaner status write", Target: "– (reported)",
			Measured: fmt.Sprintf("%d round trips: p50 %s ms, max %s ms", len(r.probe), report.MS(kustosproc.Percentile(r.probe, 50)), report.MS(kustosproc.Percentile(r.probe, 100)))})
	}
	re := report.Row{Name: "re-evaluation on a target change", Target: fmt.Sprintf("p99 ≤ %s ms", report.MS(reevalP99))}
	expected := len(r.latencies) + r.missingSamples()
	re.Measured = fmt.Sprintf("%d/%d due: %s", len(r.latencies), expected,
		report.Latency(r.latencies))
	re.Verdict = report.Judge(len(r.latencies) > 0 && kustosproc.Percentile(r.latencies, 99) <= reevalP99)
	var bad []string
	if m := r.missingSamples(); m > 0 {
		bad = append(bad, fmt.Sprintf("%d never due", m))
	}
	if r.unexpected > 0 {
		bad = append(bad, fmt.Sprintf("%d unchanged Cleaners due", r.unexpected))
	}
	if r.patchErrors > 0 {
		bad = append(bad, fmt.Sprintf("%d update errors", r.patchErrors))
	}
	re.Broken, re.Why = len(bad) > 0, strings.Join(bad, ", ")
	rows = append(rows, re)

	for _, g := range []struct {
		name   string
		l      lateness
		target string
		max    time.Duration // 0: reported only
	}{
		{"lateness, monotonic (period 1h)", r.mono, fmt.Sprintf("≤ %g s", monotonicMax.Seconds()), monotonicMax},
		{"lateness, periodic", r.periodic, "up to the period (reported)", 0},
	} {
		lr := report.Row{Name: g.name, Target: g.target}
		if len(g.l.wall) == 0 && g.l.missing == 0 {
			continue
		}
		lr.Measured = fmt.Sprintf("%d/%d seen due after T: p50 %s ms, max %s ms; lastEvaluation.time − T: p50 %.0f s, max %.0f s",
			len(g.l.wall), len(g.l.wall)+g.l.missing, report.MS(kustosproc.Percentile(g.l.wall, 50)), report.MS(kustosproc.Percentile(g.l.wall, 100)),
			kustosproc.Percentile(g.l.evalAt, 50).Seconds(), kustosproc.Percentile(g.l.evalAt, 100).Seconds())
		if g.max > 0 {
			lr.Verdict = report.Judge(len(g.l.wall) > 0 && kustosproc.Percentile(g.l.wall, 100) <= g.max)
		}
		var bad []string
		if g.l.missing > 0 {
			bad = append(bad, fmt.Sprintf("%d never due", g.l.missing))
		}
		if g.l.early > 0 {
			bad = append(bad, fmt.Sprintf("%d due before T", g.l.early))
		}
		lr.Broken, lr.Why = len(bad) > 0, strings.Join(bad, ", ")
		rows = append(rows, lr)
	}
	return rows
}

// missingSamples counts the sampled Cleaners never seen due (0 before the samples ran).
func (r result) missingSamples() int { return r.sampled - len(r.latencies) }

func render(r result, o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Kustos Cleaners on a real control plane\n\n")
	fmt.Fprintf(&b, "%d idle Cleaners (3 ConfigMap targets each) in %d namespaces, idle %s; %d samples %s apart, seed %d; "+
		"%d monotonic and %d periodic (period %s) Cleaners due %s–%s after creation. Observer mode.\n\n",
		o.n, o.namespaces, o.idle, o.samples, o.interval, o.seed, o.late, o.late, o.latePeriod, o.lateFrom, o.lateTo)
	b.WriteString(r.table().String())
	if r.err != nil {
		fmt.Fprintf(&b, "\nRun FAILED: %s\n", r.err)
	}
	fmt.Fprintf(&b, "\nSetup (namespaces, %d ConfigMaps, %d Cleaners) took %.1f s. Peak RSS is VmHWM and CPU utime+stime of the Kustos process.\n",
		3*o.n, o.n, r.setup.Seconds())
	if r.end.HWMKiB > 0 {
		fmt.Fprintf(&b, "At the end (before SIGTERM): CPU %.2f s, RSS %.1f MiB, peak RSS %.1f MiB; whole life with shutdown: CPU %.2f s; %d idle Cleaners deleted.\n",
			r.end.CPU.Seconds(), r.end.RSSMiB(), r.end.HWMMiB(), r.cpuTotal.Seconds(), r.deleted)
	}
	return b.String()
}
