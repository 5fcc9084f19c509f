package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// render is the report: Markdown on standard output.
func render(o outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Soak: seed %d, %s (the last %s without faults or new workload)\n\n", o.seed, o.duration.Round(time.Second), o.settle)
	fmt.Fprintf(&b, "| what | figure |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	row("faults injected", counts(o.faults))
	row("workload actions", counts(o.actions))
	row("pull requests", counts(o.prs))
	if len(o.outageExits) > 0 {
		row("replica exits in an API server outage (restarted, not violations)", counts(o.outageExits))
	}
	if n := len(o.mergeLatency); n > 0 {
		row("PR opened → merged", fmt.Sprintf("median %s, max %s (%d merged)", o.mergeLatency[n/2].Round(time.Second), o.mergeLatency[n-1].Round(time.Second), n))
	}
	row("owners' mail received (warnings and removal notices)", fmt.Sprint(o.mails))
	row("GitHub REST requests", fmt.Sprintf("%d (%d answered by an injected fault)", o.ghRequests, o.ghFaulted))
	sec := 0
	for _, n := range o.secondary {
		sec += n
	}
	row("secondary-limit answers (the server's own limits)", fmt.Sprintf("%d %s", sec, counts(o.secondary)))
	switch {
	case o.converged >= 0:
		row("converged after the last fault", o.converged.Round(time.Second).String())
	default:
		row("converged after the last fault", "never")
	}
	for _, h := range o.heaps {
		verdict := "not judged (under 8 minutes)"
		if h.judged {
			verdict = "judged"
		}
		row(fmt.Sprintf("heap after GC, replica %d life %d", h.replica, h.life),
			fmt.Sprintf("%.1f → %.1f MiB, max %.1f, %d readings, %s", h.first, h.last, h.max, h.readings, verdict))
	}
	row("invariant violations", fmt.Sprint(len(o.violations)))
	b.WriteString("\n")
	if len(o.violations) > 0 {
		b.WriteString("Violations:\n\n")
		for _, v := range o.violations {
			fmt.Fprintf(&b, "- %s %s: %s\n", v.At.Format("15:04:05.000"), v.Invariant, v.Detail)
		}
		fmt.Fprintf(&b, "\nReplay: `make soak SOAK_SEED=%d SOAK_DURATION=%s`\n", o.seed, o.duration.Round(time.Minute))
	}
	return b.String()
}

// counts is "a 3, b 1", by name.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
