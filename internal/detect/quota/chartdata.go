package quota

import (
	"math/big"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// The usage window a quota's Change carries for its pull request's chart: per resource, the
// daily peaks as the evidence entry "dailyPeaks" ("2026-11-07:6Gi,7Gi,,8Gi": the first day,
// then one peak a day, empty for a day without one), beside the peak, the target, the headroom
// and the gates checked. A window of fewer than minChartDays peaks charts nothing, and then
// the evidence is what it was before windows were charted.
const (
	minChartDays = 2
	// maxChartDays bounds the days a Change carries per resource: the longest window and the
	// day it began in.
	maxChartDays = MaxWindowDays + 1
)

// WindowEvidence is what a grow carries of the usage window of its resource, for the chart.
type WindowEvidence struct {
	Days     []quotahistory.DayPeak
	Peak     quotahistory.Peak
	Complete bool
	// Target is the window's target, max(peak, used) × (1 + headroom), rounded up.
	Target   resource.Quantity
	Headroom *big.Rat
}

// chartDays are the window's days of a resource worth a chart, the last maxChartDays of them;
// nil when there are fewer than minChartDays.
func chartDays(days []quotahistory.DayPeak) []quotahistory.DayPeak {
	if len(days) < minChartDays {
		return nil
	}
	if len(days) > maxChartDays {
		days = days[len(days)-maxChartDays:]
	}
	last := utcDay(days[len(days)-1].Day)
	for len(days) > 0 && last.Sub(utcDay(days[0].Day)) >= maxChartDays*24*time.Hour {
		days = days[1:] // a sparse history that spans more days than the window holds
	}
	if len(days) < minChartDays {
		return nil
	}
	return days
}

// encodeDays is the "dailyPeaks" entry of days (chartDays'): the first UTC day, then each
// day's peak up to the last one, empty for a day without one.
func encodeDays(days []quotahistory.DayPeak) string {
	var b strings.Builder
	first := utcDay(days[0].Day)
	b.WriteString(first.Format(time.DateOnly))
	b.WriteByte(':')
	next := first
	for i, d := range days {
		day := utcDay(d.Day)
		if day.Before(next) {
			continue // two peaks of one day: the sources give one, so keep the first
		}
		for ; next.Before(day); next = next.AddDate(0, 0, 1) {
			b.WriteByte(',')
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.Value.String())
		next = day.AddDate(0, 0, 1)
	}
	return b.String()
}

// heldBackBy are the gates that may hold a shrink back, in the order they are checked: a
// proposed shrink passed every one of them.
var heldBackBy = []Gate{GateFailedCreate, GateWindow, GateRecentGrow, GateCooldown}

// addWindowEvidence adds the chart's entries to e: the daily peaks and the headroom.
func addWindowEvidence(e map[string]string, days []quotahistory.DayPeak, headroom *big.Rat) {
	e["dailyPeaks"] = encodeDays(days)
	e["headroom"] = formatIncrementPct(ratOrZero(headroom))
}

// withWindow gives each grow whose resource's window holds enough daily peaks the window's
// evidence.
func withWindow(s Snapshot, recs []Recommendation) {
	for i := range recs {
		r := &recs[i]
		days := chartDays(s.Window.Days[r.Resource])
		peak, ok := s.Window.Peaks[r.Resource]
		if days == nil || !ok {
			continue
		}
		target, ok := windowTargetFor(s, r.Resource, r.Current)
		if !ok {
			continue
		}
		r.Window = &WindowEvidence{Days: days, Peak: peak, Complete: s.Window.Complete, Target: target,
			Headroom: s.Policy.Settings(r.Resource).Headroom}
	}
}
