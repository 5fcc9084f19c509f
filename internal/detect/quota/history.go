package quota

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// The quota's entries in its state Lease's bag. Without Prometheus, Kustos keeps the usage
// window itself: one peak a UTC day per resource, as many days as the window needs and no more.
const (
	bagLastGrow   = "grew"
	bagLastShrink = "shrunk"
	bagPeakPrefix = "peak."
)

// Bounds of the kept history. The state Lease's bag holds at most 32 entries of 1 KiB each
// (internal/state): the two times above, and one entry per resource for at most
// maxPeakResources resources; a day's token is a quantity and a time, and a month of them fits.
const (
	maxPeakResources  = 30
	maxPeakValueBytes = 1000
)

// daySample is the peak of one UTC day: the highest usage seen and when; ok is false for a
// day without one (Kustos did not look that day, or the entry could not be read).
type daySample struct {
	value resource.Quantity
	at    time.Time
	ok    bool
}

// dayRun is a resource's kept days: first is the UTC midnight of days[0].
type dayRun struct {
	first time.Time
	days  []daySample
}

// DailyPeaks is the usage history the quota's state Lease keeps: the grow and shrink times of
// the gates and each resource's daily peaks. It is read from the bag, fed the usage of every
// look (Record), and written back (Bag); Window answers from it what a history source answers.
type DailyPeaks struct {
	LastGrow, LastShrink time.Time
	runs                 map[corev1.ResourceName]*dayRun
	// unreadable marks resources whose entry had a part that could not be read: their window
	// is incomplete until the days it covered have rolled out.
	unreadable map[corev1.ResourceName]bool
}

// utcDay is the UTC midnight starting t's day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// peakKey is a resource's bag key: peak.<resource> with "/" written "_" (a bag key is an
// annotation name part); ok is false for a resource whose key would not be one.
func peakKey(name corev1.ResourceName) (string, bool) {
	k := bagPeakPrefix + strings.ReplaceAll(string(name), "/", "_")
	return k, len(validation.IsQualifiedName(k)) == 0
}

// ReadDailyPeaks reads the quota's state from its bag, for the resources given (the quota's);
// entries of other resources are dropped, which bounds the bag to the quota as it is. What
// cannot be read is named in problems and reads as missing: a corrupt day is a gap, which
// leaves the window incomplete, never a low peak; the days around it are kept.
func ReadDailyPeaks(bag map[string]string, resources []corev1.ResourceName) (*DailyPeaks, []string) {
	r := lifecycle.BagReader{Bag: bag}
	p := &DailyPeaks{LastGrow: r.Time(bagLastGrow), LastShrink: r.Time(bagLastShrink), runs: map[corev1.ResourceName]*dayRun{}}
	var problems []string
	for _, bad := range r.Bad {
		problems = append(problems, "state bag entry "+bad+" is not a time; read as none")
	}
	for _, name := range resources {
		key, ok := peakKey(name)
		if !ok {
			continue
		}
		v, ok := bag[key]
		if !ok {
			continue
		}
		run, bad := parseDayRun(v)
		if bad != "" {
			problems = append(problems, fmt.Sprintf("state bag entry %s=%q: %s", key, lifecycle.Clip(v, 40), bad))
			if p.unreadable == nil {
				p.unreadable = map[corev1.ResourceName]bool{}
			}
			p.unreadable[name] = true
		}
		if run != nil {
			p.runs[name] = run
		}
	}
	return p, problems
}

// parseDayRun reads "2026-11-15:8Gi@1432,,9Gi@0010": the first day, then one token a day,
// empty for a day without a peak. A token that cannot be read is a gap (bad says which); a
// first day that cannot be read loses the entry, since its days cannot be placed.
func parseDayRun(v string) (run *dayRun, bad string) {
	date, list, ok := strings.Cut(v, ":")
	first, err := time.Parse(time.DateOnly, date)
	if !ok || err != nil {
		return nil, "its first day cannot be read; the history of this resource starts afresh"
	}
	tokens := strings.Split(list, ",")
	if len(tokens) > MaxWindowDays+2 {
		tokens = tokens[len(tokens)-(MaxWindowDays+2):]
		first = first.AddDate(0, 0, len(strings.Split(list, ","))-(MaxWindowDays+2))
	}
	run = &dayRun{first: first, days: make([]daySample, len(tokens))}
	var unreadable []string
	for i, tok := range tokens {
		if tok == "" {
			continue
		}
		s, ok := parseDaySample(first.AddDate(0, 0, i), tok)
		if !ok {
			unreadable = append(unreadable, first.AddDate(0, 0, i).Format(time.DateOnly))
			continue
		}
		run.days[i] = s
	}
	if len(unreadable) > 0 {
		bad = "the peaks of " + strings.Join(unreadable, ", ") + " cannot be read; those days count as missing"
	}
	return run, bad
}

// parseDaySample reads "8Gi@1432": a non-negative quantity and the UTC hour and minute.
func parseDaySample(day time.Time, tok string) (daySample, bool) {
	val, hhmm, ok := strings.Cut(tok, "@")
	if !ok || len(hhmm) != 4 || !isDigits(hhmm) || len(val) > annMaxQuantityLen || !evExponentOK(val) {
		return daySample{}, false
	}
	h, _ := strconv.Atoi(hhmm[:2])
	m, _ := strconv.Atoi(hhmm[2:])
	if h > 23 || m > 59 {
		return daySample{}, false
	}
	q, err := resource.ParseQuantity(val)
	if err != nil || q.Sign() < 0 {
		return daySample{}, false
	}
	return daySample{value: q, at: day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute), ok: true}, true
}

// keepFrom is the first day kept for a window of length at now: the day before the window's
// first day, whose peak says that the history began before the window did.
func keepFrom(now time.Time, length time.Duration) time.Time {
	return utcDay(now.Add(-length)).AddDate(0, 0, -1)
}

// Record takes in the usage seen at now: each resource's peak of today rises to it. Days
// before the window's reach are dropped, so the history never outgrows the window. Resources
// beyond maxPeakResources, or whose name makes no bag key, keep no history (problems say so).
func (p *DailyPeaks) Record(used corev1.ResourceList, resources []corev1.ResourceName, now time.Time, length time.Duration) []string {
	var problems []string
	today := utcDay(now)
	from := keepFrom(now, length)
	sorted := append([]corev1.ResourceName(nil), resources...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	kept := 0
	for _, name := range sorted {
		if _, ok := peakKey(name); !ok {
			problems = append(problems, fmt.Sprintf("%s: its name makes no state bag key; no usage history is kept for it", name))
			continue
		}
		if kept == maxPeakResources {
			problems = append(problems, fmt.Sprintf("%s: the state Lease keeps the history of at most %d resources of a quota; none is kept for it", name, maxPeakResources))
			delete(p.runs, name)
			continue
		}
		kept++
		run := p.runs[name]
		if run == nil || len(run.days) == 0 || run.first.After(today) {
			// No history yet, or one from a clock ahead of ours: start with today.
			run = &dayRun{first: today}
			p.runs[name] = run
		}
		idx := int(today.Sub(run.first) / (24 * time.Hour))
		for len(run.days) <= idx {
			run.days = append(run.days, daySample{})
		}
		u := used[name] // a resource not in used is at 0
		if d := &run.days[idx]; !d.ok || u.Cmp(d.value) > 0 {
			*d = daySample{value: u.DeepCopy(), at: now.UTC().Truncate(time.Minute), ok: true}
		}
		if drop := int(from.Sub(run.first) / (24 * time.Hour)); drop > 0 {
			run.days = run.days[min(drop, len(run.days)):]
			run.first = run.first.AddDate(0, 0, drop)
		}
		for len(encodeDayRun(run)) > maxPeakValueBytes && len(run.days) > 1 {
			run.days, run.first = run.days[1:], run.first.AddDate(0, 0, 1)
		}
	}
	for name := range p.runs {
		if !contains(sorted, name) {
			delete(p.runs, name)
		}
	}
	return problems
}

func contains(names []corev1.ResourceName, n corev1.ResourceName) bool {
	for _, m := range names {
		if m == n {
			return true
		}
	}
	return false
}

func encodeDayRun(run *dayRun) string {
	var b strings.Builder
	b.WriteString(run.first.Format(time.DateOnly))
	b.WriteByte(':')
	for i, d := range run.days {
		if i > 0 {
			b.WriteByte(',')
		}
		if d.ok {
			b.WriteString(d.value.String())
			b.WriteString(d.at.UTC().Format("@1504"))
		}
	}
	return b.String()
}

// Bag is the state to write back: the gate times and every resource's days.
func (p *DailyPeaks) Bag() map[string]string {
	w := lifecycle.BagWriter{}
	w.Time(bagLastGrow, p.LastGrow)
	w.Time(bagLastShrink, p.LastShrink)
	for name, run := range p.runs {
		if key, ok := peakKey(name); ok && len(run.days) > 0 {
			w[key] = encodeDayRun(run)
		}
	}
	return w
}

// Window is the history's answer for [now − length, now]: each resource's peak over the days
// the window touches (its first day whole: a little more than the window, never less) and the
// peak of each of those days that has one, and
// Complete only when every resource has a peak on each of those days and on the day before
// them — a history that began on the window's first day began part-way through it.
func (p *DailyPeaks) Window(now time.Time, length time.Duration) quotahistory.Window {
	w := quotahistory.Window{Start: now.Add(-length), End: now, Peaks: map[corev1.ResourceName]quotahistory.Peak{},
		Days: map[corev1.ResourceName][]quotahistory.DayPeak{}, Complete: true}
	from, first, today := keepFrom(now, length), utcDay(now.Add(-length)), utcDay(now)
	names := make([]corev1.ResourceName, 0, len(p.runs))
	for name := range p.runs {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	var why []string
	for _, name := range names {
		run := p.runs[name]
		var peak *daySample
		var missing []string
		var days []quotahistory.DayPeak
		for day := from; !day.After(today); day = day.AddDate(0, 0, 1) {
			idx := int(day.Sub(run.first) / (24 * time.Hour))
			if day.Before(run.first) || idx >= len(run.days) || !run.days[idx].ok {
				missing = append(missing, day.Format(time.DateOnly))
				continue
			}
			if day.Before(first) {
				continue
			}
			d := &run.days[idx]
			if peak == nil || d.value.Cmp(peak.value) > 0 {
				peak = d
			}
			days = append(days, quotahistory.DayPeak{Day: day, Value: d.value.DeepCopy()})
		}
		if peak != nil {
			w.Peaks[name] = quotahistory.Peak{Value: peak.value.DeepCopy(), At: peak.at}
			w.Days[name] = days
		}
		switch {
		case len(missing) > 0 && run.first.After(from):
			why = append(why, fmt.Sprintf("%s: the state Lease's daily peaks begin %s, the window needs them from %s", name, run.first.Format(time.DateOnly), from.Format(time.DateOnly)))
		case len(missing) > 0:
			why = append(why, fmt.Sprintf("%s: no daily peak on %s", name, strings.Join(missing, ", ")))
		case p.unreadable[name]:
			why = append(why, fmt.Sprintf("%s: part of its kept history could not be read", name))
		}
	}
	if len(why) > 0 {
		w.Complete = false
		w.Incomplete = strings.Join(why, "; ")
	}
	if len(names) == 0 {
		w.Complete, w.Incomplete = false, "the state Lease keeps no usage history yet"
	}
	return w
}

// growNoteInterval is how old the last grow on record must be before a grow decided again
// moves it: a grow is decided again on every look while its proposal waits, and the gates
// that read the time count in days, so an hour's precision costs nothing and spares the
// Lease a write at every look.
const growNoteInterval = time.Hour

// Note records the time of a Change about to be committed, for the gates: a shrink's, and a
// grow's when the last grow on record is growNoteInterval old or more.
func (p *DailyPeaks) Note(c *lifecycle.Change, now time.Time) {
	switch {
	case c == nil:
	case IsShrink(*c):
		p.LastShrink = now
	case p.LastGrow.IsZero() || now.Sub(p.LastGrow) >= growNoteInterval:
		p.LastGrow = now
	}
}
