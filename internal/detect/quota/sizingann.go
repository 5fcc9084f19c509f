package quota

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Namespace annotations of sizing from the usage window and of shrinking.
const (
	AnnotationHeadroom       = "resizer.io/headroom"
	AnnotationTolerance      = "resizer.io/tolerance"
	AnnotationWindow         = "resizer.io/window"
	AnnotationShrink         = "resizer.io/shrink"
	AnnotationShrinkCooldown = "resizer.io/shrink-cooldown"
	AnnotationMaxShrink      = "resizer.io/max-shrink"
)

// Per-resource suffixes of the window settings: resizer.io/memory-headroom, resizer.io/cpu-min.
const (
	annHeadroomSuffix  = "-headroom"
	annToleranceSuffix = "-tolerance"
	annMinSuffix       = "-min"
)

// MaxWindowDays bounds resizer.io/window: the state Lease keeps one value a day per resource,
// and a month of them is what fits its bounded bag.
const MaxWindowDays = 31

// The built-in defaults of the window settings (the flags' defaults).
const (
	DefaultWindow         = 14 * 24 * time.Hour
	DefaultShrinkCooldown = 7 * 24 * time.Hour
)

// DefaultHeadroom, DefaultTolerance and DefaultMaxShrink are 25 %, 15 % and 25 %; each call
// returns a new number.
func DefaultHeadroom() *big.Rat  { return big.NewRat(1, 4) }
func DefaultTolerance() *big.Rat { return big.NewRat(15, 100) }
func DefaultMaxShrink() *big.Rat { return big.NewRat(1, 4) }

// The built-in defaults as ParsePolicyWith hands them out when no flag gave one: shared, so
// that a namespace without annotations costs no allocation, and never modified.
var (
	builtinHeadroom  = DefaultHeadroom()
	builtinTolerance = DefaultTolerance()
	builtinMaxShrink = DefaultMaxShrink()
)

// DefaultWindowPolicy is the window policy without flags: a 14-day window, shrinking not
// opted in, a 7-day shrink cooldown and at most 25 % less per proposal.
func DefaultWindowPolicy() WindowPolicy {
	return WindowPolicy{Length: DefaultWindow, ShrinkCooldown: DefaultShrinkCooldown, MaxShrink: DefaultMaxShrink()}
}

// annMaxQuantityLen bounds the text of resizer.io/<alias>-min: no floor is longer, and
// ParseQuantity is not fed hostile lengths.
const annMaxQuantityLen = 64

var (
	errAnnHeadroomRange   = errors.New("must be between 0 and 1000% (a value without % is a fraction: 0.25 means 25%)")
	errAnnToleranceRange  = errors.New("must be between 0 and 100% (a value without % is a fraction: 0.15 means 15%)")
	errAnnMaxShrinkRange  = errors.New("must be greater than 0 and at most 100% (a value without % is a fraction: 0.25 means 25%)")
	errAnnWindowRange     = fmt.Errorf("must be between 1d and %dd", MaxWindowDays)
	errAnnWindowDays      = errors.New("must be whole days (7d, 2w)")
	errAnnNotDuration     = errors.New("not a cooldown: want a length with a unit (12h, 7d)")
	errAnnNotQuantity     = errors.New("not a quantity (4Gi, 500m, 10)")
	errAnnNegativeFloor   = errors.New("must not be negative")
	annHundredPercentRat  = big.NewRat(1, 1)
	annThousandPercentRat = big.NewRat(10, 1)
)

// parseFraction reads a percentage ("25%") or a fraction ("0.25") and checks lo ≤ r ≤ hi
// (r > 0 as well when positive).
func parseFraction(s string, hi *big.Rat, positive bool, errRange error) (*big.Rat, error) {
	r, percent, err := parseDecimalPercent(s)
	if err != nil {
		return nil, err
	}
	if percent {
		r.Quo(r, annHundred)
	}
	if r.Sign() < 0 || positive && r.Sign() == 0 || r.Cmp(hi) > 0 {
		return nil, errRange
	}
	return r, nil
}

// ParseHeadroom parses resizer.io/headroom: "25%" or "0.25", 0 to 1000 %.
func ParseHeadroom(s string) (*big.Rat, error) {
	return parseFraction(s, annThousandPercentRat, false, errAnnHeadroomRange)
}

// ParseTolerance parses resizer.io/tolerance: "15%" or "0.15", 0 to 100 %.
func ParseTolerance(s string) (*big.Rat, error) {
	return parseFraction(s, annHundredPercentRat, false, errAnnToleranceRange)
}

// ParseMaxShrink parses resizer.io/max-shrink: "25%" or "0.25", more than 0 and at most 100 %.
func ParseMaxShrink(s string) (*big.Rat, error) {
	return parseFraction(s, annHundredPercentRat, true, errAnnMaxShrinkRange)
}

// ParseWindow parses resizer.io/window: whole days (14d, 2w), 1d to MaxWindowDays. The peaks
// are kept a day at a time, so a part of a day would promise what no history holds.
func ParseWindow(s string) (time.Duration, error) {
	d, err := lifecycle.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, errAnnWindowRange
	}
	if d < 24*time.Hour || d > MaxWindowDays*24*time.Hour {
		return 0, errAnnWindowRange
	}
	if d%(24*time.Hour) != 0 {
		return 0, errAnnWindowDays
	}
	return d, nil
}

// ParseShrinkCooldown parses resizer.io/shrink-cooldown: a length (12h, 7d), 0 to 365d.
// "never" is refused: it would mean "never shrink again", which resizer.io/shrink says.
func ParseShrinkCooldown(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := lifecycle.ParseDuration(s)
	if err != nil {
		if strings.EqualFold(s, lifecycle.Never) {
			return 0, fmt.Errorf("%w (never is not accepted: a cooldown needs an end)", errAnnNotDuration)
		}
		return 0, errAnnNotDuration
	}
	if d < 0 || d > MaxCooldownMinutes*time.Minute {
		return 0, errAnnCooldownRange
	}
	return d, nil
}

// ParseMin parses resizer.io/<alias>-min: a non-negative quantity in the resource's own
// units (4Gi, 500m, 10).
func ParseMin(s string) (resource.Quantity, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > annMaxQuantityLen || !evExponentOK(s) {
		return resource.Quantity{}, errAnnNotQuantity
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, errAnnNotQuantity
	}
	if q.Sign() < 0 {
		return resource.Quantity{}, errAnnNegativeFloor
	}
	return q, nil
}

// parseWindowAnnotations applies the namespace-wide window annotations to p.
func parseWindowAnnotations(annotations map[string]string, p *Policy, report func(key, value string, err error, fallback string)) {
	if v, ok := annotations[AnnotationHeadroom]; ok {
		if h, err := ParseHeadroom(v); err != nil {
			report(AnnotationHeadroom, v, err, formatIncrementPct(p.Namespace.Headroom))
		} else {
			p.Namespace.Headroom = h
		}
	}
	if v, ok := annotations[AnnotationTolerance]; ok {
		if t, err := ParseTolerance(v); err != nil {
			report(AnnotationTolerance, v, err, formatIncrementPct(p.Namespace.Tolerance))
		} else {
			p.Namespace.Tolerance = t
		}
	}
	if v, ok := annotations[AnnotationWindow]; ok {
		if d, err := ParseWindow(v); err != nil {
			report(AnnotationWindow, v, err, formatCooldown(p.Window.Length))
		} else {
			p.Window.Length = d
		}
	}
	if v, ok := annotations[AnnotationShrink]; ok {
		if b, err := parseAnnotationBool(v); err != nil {
			report(AnnotationShrink, v, err, fmt.Sprint(p.Window.Shrink))
		} else {
			p.Window.Shrink = b
		}
	}
	if v, ok := annotations[AnnotationShrinkCooldown]; ok {
		if d, err := ParseShrinkCooldown(v); err != nil {
			report(AnnotationShrinkCooldown, v, err, formatCooldown(p.Window.ShrinkCooldown))
		} else {
			p.Window.ShrinkCooldown = d
		}
	}
	if v, ok := annotations[AnnotationMaxShrink]; ok {
		if m, err := ParseMaxShrink(v); err != nil {
			report(AnnotationMaxShrink, v, err, formatIncrementPct(p.Window.MaxShrink))
		} else {
			p.Window.MaxShrink = m
		}
	}
}

// isWindowAnnotation reports the namespace-wide window annotations (parsed above).
func isWindowAnnotation(key string) bool {
	switch key {
	case AnnotationHeadroom, AnnotationTolerance, AnnotationWindow, AnnotationShrink, AnnotationShrinkCooldown, AnnotationMaxShrink:
		return true
	}
	return false
}

// parseWindowResourceAnnotation applies one per-resource window annotation (name is the key
// without the prefix); ok is false when name is not one.
func parseWindowResourceAnnotation(p *Policy, key, name, v string, report func(key, value string, err error, fallback string)) bool {
	if alias, ok := strings.CutSuffix(name, annHeadroomSuffix); ok && alias != "" {
		if h, err := ParseHeadroom(v); err != nil {
			report(key, v, err, formatIncrementPct(p.Namespace.Headroom))
		} else {
			p.setResourceOverride(alias, func(s *Settings) { s.Headroom = h })
		}
		return true
	}
	if alias, ok := strings.CutSuffix(name, annToleranceSuffix); ok && alias != "" {
		if t, err := ParseTolerance(v); err != nil {
			report(key, v, err, formatIncrementPct(p.Namespace.Tolerance))
		} else {
			p.setResourceOverride(alias, func(s *Settings) { s.Tolerance = t })
		}
		return true
	}
	if alias, ok := strings.CutSuffix(name, annMinSuffix); ok && alias != "" {
		if q, err := ParseMin(v); err != nil {
			report(key, v, err, FallbackIgnored)
		} else {
			p.setResourceOverride(alias, func(s *Settings) { s.Min = &q })
		}
		return true
	}
	return false
}
