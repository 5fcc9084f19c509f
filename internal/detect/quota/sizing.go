package quota

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/quotahistory"
)

// Gate names what holds a shrink back, or what shaped the value it proposes. The names are part
// of the user interface: Events, log lines and PR bodies list them.
type Gate string

const (
	// GateWindow: the history does not cover the whole window (or this resource has none);
	// usage not seen is never taken for low usage.
	GateWindow Gate = "window"
	// GateRecentGrow: the quota was raised inside the window; what it needed then may come back.
	GateRecentGrow Gate = "recent-grow"
	// GateCooldown: the quota was shrunk less than the shrink cooldown ago.
	GateCooldown Gate = "cooldown"
	// GateFailedCreate: workloads fail to create pods for want of this quota right now.
	GateFailedCreate Gate = "failed-create"
	// GateFloor: the floor (resizer.io/<alias>-min, or used × (1 + headroom)) raised the value;
	// it holds the shrink back when nothing is left to shrink above it.
	GateFloor Gate = "floor"
	// GateStep: the value was cut to at most max-shrink less than the hard value.
	GateStep Gate = "step"
)

// Shrink is one resource whose hard value lies above the tolerance band around the window's
// target: what it could shrink to, and what holds that back.
type Shrink struct {
	Namespace, Quota string
	Resource         corev1.ResourceName
	Current, Used    resource.Quantity
	// Peak is the window's peak of the resource; HasPeak is false when the history has none.
	Peak    quotahistory.Peak
	HasPeak bool
	// WindowComplete is the history's word that it covers the whole window.
	WindowComplete bool
	// Days are the window's daily peaks of the resource, for the pull request's chart; nil
	// when too few (chartDays). Headroom is the resource's.
	Days     []quotahistory.DayPeak
	Headroom *big.Rat
	// Target is max(peak, used) × (1 + headroom), rounded up as a grow is.
	Target resource.Quantity
	// Goal is the target raised to the floor, rounded as Recommended is: where the steps of
	// successive shrinks end; Current − Goal is what the quota could give back.
	Goal resource.Quantity
	// Recommended is the target after the floor and the step; below Current.
	Recommended resource.Quantity
	// Applied are the gates that shaped Recommended (floor, step).
	Applied []Gate
	// Blocked are the gates that hold the shrink back; empty: it may be proposed.
	Blocked []Gate
	Message string
}

// Proposable reports whether no gate holds the shrink back.
func (sh Shrink) Proposable() bool { return len(sh.Blocked) == 0 }

// SizeShrinks is the shrink half of sizing from the usage window, pure. For each resource of
// the quota, target = max(peak over the window, used) × (1 + headroom); a resource whose hard
// value is at most target × (1 + tolerance) lies within the band and is left alone (a hard
// value below the target is the threshold's business, not the window's). Above the band the
// value is the target, raised to the floor (resizer.io/<alias>-min; the target is never below
// used × (1 + headroom), the other floor) and to hard × (1 − max-shrink) (the step), rounded
// up in the hard value's unit. The gates failed-create, window, recent-grow and cooldown hold
// it back; floor holds it back when the floor leaves nothing below the hard value.
// Problems are per-resource arithmetic problems that skipped that resource only.
func SizeShrinks(s Snapshot) ([]Shrink, []string) {
	names := make([]corev1.ResourceName, 0, len(s.Hard))
	for name := range s.Hard {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })

	failing := failingCreate(s)
	var out []Shrink
	var problems []string
	for _, name := range names {
		hard := s.Hard[name]
		if hard.Sign() <= 0 {
			continue
		}
		sh, ok, err := sizeShrink(s, name, hard, failing)
		if err != nil {
			problems = append(problems, string(name)+": "+err.Error())
			continue
		}
		if ok {
			out = append(out, sh)
		}
	}
	return out, problems
}

func sizeShrink(s Snapshot, name corev1.ResourceName, hard resource.Quantity, failing bool) (Shrink, bool, error) {
	used := s.Used[name]
	set := s.Policy.Settings(name)
	peak, hasPeak := s.Window.Peaks[name]
	exactTarget := windowTarget(used, peak, hasPeak, set.Headroom)
	hardR := RatOf(hard)
	band := new(big.Rat).Mul(exactTarget, new(big.Rat).Add(ratOne, ratOrZero(set.Tolerance)))
	if hardR.Cmp(band) <= 0 {
		return Shrink{}, false, nil // within the band, or below the target
	}
	target, err := roundTarget(exactTarget, hard, name)
	if err != nil {
		return Shrink{}, false, err
	}
	sh := Shrink{
		Namespace: s.Namespace, Quota: s.Quota, Resource: name, Current: hard, Used: used,
		Peak: peak, HasPeak: hasPeak, WindowComplete: s.Window.Complete, Target: target,
		Days: chartDays(s.Window.Days[name]), Headroom: set.Headroom,
	}
	value := RatOf(target)
	if set.Min != nil && RatOf(*set.Min).Cmp(value) > 0 {
		value = RatOf(*set.Min)
		sh.Applied = append(sh.Applied, GateFloor)
	}
	goal, err := roundTarget(value, hard, name)
	if err != nil {
		return Shrink{}, false, err
	}
	sh.Goal = goal
	if maxShrink := s.Policy.Window.MaxShrink; maxShrink != nil {
		lowest := new(big.Rat).Mul(hardR, new(big.Rat).Sub(ratOne, maxShrink))
		if lowest.Cmp(value) > 0 {
			value = lowest
			sh.Applied = append(sh.Applied, GateStep)
		}
	}
	rec, err := roundTarget(value, hard, name)
	if err != nil {
		return Shrink{}, false, err
	}
	if rec.Cmp(hard) >= 0 {
		if len(sh.Applied) == 0 || sh.Applied[0] != GateFloor {
			return Shrink{}, false, nil // the step's rounding leaves nothing to take
		}
		// The floor leaves nothing to shrink: said so, since the window alone would shrink it.
		sh.Recommended = hard
		sh.Blocked = []Gate{GateFloor}
		sh.Message = shrinkMessage(s, sh)
		return sh, true, nil
	}
	sh.Recommended = rec

	if failing {
		sh.Blocked = append(sh.Blocked, GateFailedCreate)
	}
	if !s.Window.Complete || !hasPeak {
		sh.Blocked = append(sh.Blocked, GateWindow)
	}
	if g := s.State.lastGrow(); !g.IsZero() && g.After(s.Now.Add(-s.Policy.Window.Length)) {
		sh.Blocked = append(sh.Blocked, GateRecentGrow)
	}
	// A shrink on record at this very look's time is the one being decided: the state is
	// written before the decision is committed, and the look then repeats on the newer Lease.
	if last := s.State.LastShrink; !last.IsZero() && !last.Equal(s.Now) && s.Now.Before(last.Add(s.Policy.Window.ShrinkCooldown)) {
		sh.Blocked = append(sh.Blocked, GateCooldown)
	}
	sh.Message = shrinkMessage(s, sh)
	return sh, true, nil
}

// windowTarget is max(peak, used) × (1 + headroom), exactly.
func windowTarget(used resource.Quantity, peak quotahistory.Peak, hasPeak bool, headroom *big.Rat) *big.Rat {
	base := RatOf(used)
	if hasPeak {
		if p := RatOf(peak.Value); p.Cmp(base) > 0 {
			base = p
		}
	}
	return new(big.Rat).Mul(base, new(big.Rat).Add(ratOne, ratOrZero(headroom)))
}

func ratOrZero(r *big.Rat) *big.Rat {
	if r == nil {
		return new(big.Rat)
	}
	return r
}

// roundTarget rounds exact up the way RoundUp rounds a grow — in the unit current is written in,
// whole units from 10 of them, else whole units of the next finer one; counts and extended
// resources whole — but without RoundUp's rule that the result exceeds current: a shrink's
// value lies below it.
func roundTarget(exact *big.Rat, current resource.Quantity, name corev1.ResourceName) (resource.Quantity, error) {
	if exact.Sign() < 0 {
		return resource.Quantity{}, fmt.Errorf("target %s is negative", roundApprox(exact))
	}
	if exact.Cmp(maxRoundedValue) > 0 {
		return resource.Quantity{}, roundTooLarge(roundApprox(exact))
	}
	unit := roundUnitOf(current)
	step := unit
	if new(big.Rat).Quo(exact, unit.value()).Cmp(big.NewRat(10, 1)) < 0 {
		step = unit.smaller()
	}
	if step.exp < 0 && isIntegerResource(name) {
		step = roundBaseUnit
	}
	n := ratCeil(exact, step.value())
	out, err := resource.ParseQuantity(n.String() + step.suffix)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("target %s%s: %w", n, step.suffix, err)
	}
	return out, nil
}

// windowTargetFor is the rounded window target of a resource that has a peak, for the grow
// rule (a grow never proposes less); ok is false without a peak.
func windowTargetFor(s Snapshot, name corev1.ResourceName, current resource.Quantity) (resource.Quantity, bool) {
	peak, ok := s.Window.Peaks[name]
	if !ok {
		return resource.Quantity{}, false
	}
	t, err := roundTarget(windowTarget(s.Used[name], peak, true, s.Policy.Settings(name).Headroom), current, name)
	if err != nil {
		return resource.Quantity{}, false
	}
	return t, true
}

// failingCreate reports whether workloads fail to create pods for want of this quota now:
// an "exceeded quota" failure whose owner still lacks pods (or whose owner is unknown).
func failingCreate(s Snapshot) bool {
	for _, f := range s.Failures {
		if f.Parsed.Kind == FailureExceeded && f.Parsed.Quota == s.Quota && (!f.Owner.Known || f.Owner.Missing > 0) {
			return true
		}
	}
	return false
}

func shrinkMessage(s Snapshot, sh Shrink) string {
	var b strings.Builder
	if sh.Recommended.Cmp(sh.Current) < 0 {
		fmt.Fprintf(&b, "%s could shrink from %s to %s", sh.Resource, sh.Current.String(), sh.Recommended.String())
	} else {
		fmt.Fprintf(&b, "%s stays at %s", sh.Resource, sh.Current.String())
	}
	peak := "no history"
	if sh.HasPeak {
		peak = "peak " + sh.Peak.Value.String()
		if !sh.Peak.At.IsZero() {
			peak += " at " + sh.Peak.At.UTC().Format(time.RFC3339)
		}
	}
	fmt.Fprintf(&b, " (%s over %s, used %s, target %s", peak, formatCooldown(s.Policy.Window.Length), sh.Used.String(), sh.Target.String())
	for _, g := range sh.Applied {
		switch g {
		case GateFloor:
			fmt.Fprintf(&b, "; raised to the floor %s", s.Policy.Settings(sh.Resource).Min.String())
		case GateStep:
			fmt.Fprintf(&b, "; cut to at most %s less per step", formatIncrementPct(s.Policy.Window.MaxShrink))
		}
	}
	b.WriteString(")")
	if len(sh.Blocked) > 0 {
		gates := make([]string, len(sh.Blocked))
		for i, g := range sh.Blocked {
			gates[i] = string(g)
		}
		b.WriteString("; held back by " + strings.Join(gates, ", "))
	}
	return b.String()
}

// ReasonQuotaShrinkRecommended: a quota could shrink to the window's target (Warning, on the
// ResourceQuota, as its grow counterpart); the message names the gates that hold it back.
const ReasonQuotaShrinkRecommended = "QuotaShrinkRecommended"

// IsShrink reports whether c is a shrink Change.
func IsShrink(c lifecycle.Change) bool { return c.Reason == ReasonQuotaShrinkRecommended }

// ShrinkChange bundles the shrinks no gate holds back into one Change (one field change,
// spec.hard.<resource>, each); nil when there is none.
func (d Verdict) ShrinkChange() *lifecycle.Change {
	var c *lifecycle.Change
	var msgs []string
	for _, sh := range d.Shrinks {
		if !sh.Proposable() {
			continue
		}
		if c == nil {
			c = &lifecycle.Change{
				Key:      lifecycle.NewKey(DetectorName, sh.Namespace, sh.Quota),
				Detector: DetectorName,
				Target:   quotaTarget(sh.Namespace, sh.Quota),
				Edit:     lifecycle.Edit{Op: lifecycle.EditSetFields},
				Reason:   ReasonQuotaShrinkRecommended,
			}
		}
		c.Edit.Fields = append(c.Edit.Fields, lifecycle.FieldChange{
			Path: []string{"spec", "hard", string(sh.Resource)}, From: sh.Current.String(), To: sh.Recommended.String(),
		})
		c.Evidence = append(c.Evidence, sh.Evidence())
		msgs = append(msgs, sh.Message)
	}
	if c != nil {
		c.Summary = strings.Join(msgs, "; ")
	}
	return c
}

// Evidence is the shrink as stable string fields, for log lines, Events and PR bodies.
func (sh Shrink) Evidence() map[string]string {
	e := map[string]string{
		"namespace":      sh.Namespace,
		"quota":          sh.Quota,
		"resource":       string(sh.Resource),
		"current":        sh.Current.String(),
		"used":           sh.Used.String(),
		"target":         sh.Target.String(),
		"recommended":    sh.Recommended.String(),
		"windowComplete": strconv.FormatBool(sh.WindowComplete),
		"trigger":        "shrink",
		"detector":       DetectorName,
		"message":        sh.Message,
		"gates":          joinGates(sh.Applied),
		"blocked":        joinGates(sh.Blocked),
	}
	if sh.Days != nil {
		addWindowEvidence(e, sh.Days, sh.Headroom)
		e["checked"] = joinGates(heldBackBy)
	}
	if sh.HasPeak {
		e["peak"] = sh.Peak.Value.String()
		if !sh.Peak.At.IsZero() {
			e["peakAt"] = sh.Peak.At.UTC().Format(time.RFC3339)
		}
	}
	return e
}

func joinGates(gs []Gate) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = string(g)
	}
	return strings.Join(s, ",")
}
