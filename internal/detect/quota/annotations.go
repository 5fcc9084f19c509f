package quota

import (
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Namespace annotations that tune the detector. The model is opt-out: every namespace is
// watched with the flag defaults unless its annotations say otherwise.
const (
	AnnotationPrefix          = "resizer.io/"
	AnnotationEnabled         = "resizer.io/enabled"
	AnnotationThreshold       = "resizer.io/threshold"
	AnnotationIncrement       = "resizer.io/increment"
	AnnotationCooldownMinutes = "resizer.io/cooldown-minutes"
	AnnotationLastModified    = "resizer.io/last-modified" // lives on the state Lease, not the namespace
	AnnotationAutoMerge       = "resizer.io/auto-merge"    // PR mode: "false" opts the namespace out of auto-merge
	AnnotationGitPath         = "resizer.io/git-path"      // PR mode: a file or directory that replaces manifest discovery
)

// Per-resource annotations are AnnotationPrefix + Alias(resource) + one of these suffixes,
// e.g. resizer.io/cpu-threshold.
const (
	annThresholdSuffix = "-threshold"
	annIncrementSuffix = "-increment"
)

// FallbackIgnored is the AnnotationProblem.Fallback of an annotation that is dropped rather
// than replaced by another value.
const FallbackIgnored = "ignored"

// MaxCooldownMinutes bounds resizer.io/cooldown-minutes (one year); a larger cooldown is
// almost certainly a typo and would silence the detector for good.
const MaxCooldownMinutes = 525600

// Limits on the numbers ParseThreshold and ParseIncrement read. Thresholds are at most 100 and
// increments at most 1000%, so more than 4 significant integer digits is always out of range and
// never needs to be turned into a big number; 32 decimal places is far beyond any sensible
// value and keeps hostile input (annotations can be up to 256 KiB) from costing anything.
const (
	annMaxIntDigits  = 4
	annMaxFracDigits = 32
)

// annMaxProblemValue is how many characters of an annotation value an AnnotationProblem keeps.
const annMaxProblemValue = 64

var (
	errAnnNotANumber      = errors.New("not a number")
	errAnnThresholdRange  = errors.New("must be between 0 and 100")
	errAnnIncrementZero   = errors.New("must be greater than 0")
	errAnnIncrementRange  = errors.New("must be at most 1000% (a value without % is a fraction: 0.2 means 20%)")
	errAnnTooManyDecimals = fmt.Errorf("has more than %d decimal places", annMaxFracDigits)
	errAnnNotMinutes      = errors.New("not a cooldown: want minutes (90) or a length with a unit (90m, 1h30m, 1d)")
	errAnnCooldownRange   = fmt.Errorf("must be between 0 and %d minutes (365d)", MaxCooldownMinutes)
	errAnnNotBool         = errors.New(`must be "true" or "false"`)
	errAnnEmpty           = errors.New("must not be empty")
	errAnnUnknown         = errors.New("unknown annotation (typo?)")
)

var (
	annHundred = big.NewRat(100, 1)
	annTen     = big.NewRat(10, 1)
)

// ParseThreshold parses a threshold in percent: "90", "90%", "87.5", " 90 % ". The percent sign
// is optional because a threshold is always a percentage. The result is 0 ≤ t ≤ 100.
func ParseThreshold(s string) (*big.Rat, error) {
	r, _, err := parseDecimalPercent(s)
	if err != nil {
		return nil, err
	}
	if r.Sign() < 0 || r.Cmp(annHundred) > 0 {
		return nil, errAnnThresholdRange
	}
	return r, nil
}

// ParseIncrement parses an increment: "10%" is 1/10, and a value without a percent sign is a
// fraction ("0.1" is 1/10, "1.5" is 3/2, i.e. +150%). The result is 0 < i ≤ 10 (1000%).
func ParseIncrement(s string) (*big.Rat, error) {
	r, percent, err := parseDecimalPercent(s)
	if err != nil {
		return nil, err
	}
	if percent {
		r.Quo(r, annHundred)
	}
	if r.Sign() <= 0 {
		return nil, errAnnIncrementZero
	}
	if r.Cmp(annTen) > 0 {
		return nil, errAnnIncrementRange
	}
	return r, nil
}

// ParseCooldownMinutes parses resizer.io/cooldown-minutes: a whole number of minutes, as the
// annotation's name says and as it always took, or a length in Kustos's one duration grammar
// (lifecycle.ParseDuration: 90m, 1h30m, 1d), between 0 and MaxCooldownMinutes. "never" is
// refused: a cooldown without end would silence the detector for good.
func ParseCooldownMinutes(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s != "" && strings.Trim(s, "+-0123456789") == "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return 0, errAnnCooldownRange
			}
			return 0, errAnnNotMinutes
		}
		if n < 0 || n > MaxCooldownMinutes {
			return 0, errAnnCooldownRange
		}
		return time.Duration(n) * time.Minute, nil
	}
	d, err := lifecycle.ParseDuration(s)
	if err != nil {
		if strings.EqualFold(s, lifecycle.Never) {
			return 0, fmt.Errorf("%w (never is not accepted: a cooldown needs an end)", errAnnNotMinutes)
		}
		return 0, errAnnNotMinutes
	}
	if d > MaxCooldownMinutes*time.Minute {
		return 0, errAnnCooldownRange
	}
	return d, nil
}

// parseDecimalPercent reads an optionally signed decimal number with an optional trailing "%",
// ignoring surrounding spaces. It is hand-written rather than big.Rat.SetString because that
// accepts fractions, hex and exponents ("1e1000000000" would allocate without bound).
// The sign is accepted so that "-5" is reported as out of range rather than as not a number.
func parseDecimalPercent(s string) (r *big.Rat, percent bool, err error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutSuffix(s, "%"); ok {
		s, percent = strings.TrimSpace(rest), true
	}
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	intPart, fracPart, _ := strings.Cut(s, ".")
	if intPart == "" && fracPart == "" || !isDigits(intPart) || !isDigits(fracPart) {
		return nil, false, errAnnNotANumber
	}
	intPart = strings.TrimLeft(intPart, "0")
	fracPart = strings.TrimRight(fracPart, "0")
	if len(intPart) > annMaxIntDigits {
		// ≥ 10000: out of range for every caller. Report the range, not the size.
		if neg {
			return big.NewRat(-1, 1), percent, nil
		}
		return big.NewRat(10000, 1), percent, nil
	}
	if len(fracPart) > annMaxFracDigits {
		return nil, false, errAnnTooManyDecimals
	}
	digits := intPart + fracPart
	if digits == "" {
		digits = "0" // "0", "0.000"
	}
	num, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, false, errAnnNotANumber // unreachable: only digits
	}
	if neg {
		num.Neg(num)
	}
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(fracPart))), nil)
	return new(big.Rat).SetFrac(num, den), percent, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Alias is the name a resource goes by in per-resource annotations: the quota prefix
// "requests." or "limits." is dropped (one annotation tunes both) and "/" becomes "-" because
// an annotation name cannot contain "/". requests.cpu → cpu, count/pods → count-pods,
// requests.nvidia.com/gpu → nvidia.com-gpu.
func Alias(resource corev1.ResourceName) string {
	s := string(resource)
	if rest, ok := strings.CutPrefix(s, "requests."); ok {
		s = rest
	} else if rest, ok := strings.CutPrefix(s, "limits."); ok {
		s = rest
	}
	return strings.ReplaceAll(s, "/", "-")
}

// ParsePolicy applies a namespace's annotations to the flag defaults. It never fails: every
// annotation that cannot be used is reported as an AnnotationProblem (sorted by key) and the
// value it would have replaced stays in effect, so one typo does not disable the namespace.
// The returned Policy owns its numbers; defaults are copied, never aliased.
func ParsePolicy(annotations map[string]string, defaults Settings, defaultCooldown time.Duration) (Policy, []AnnotationProblem) {
	return ParsePolicyWith(annotations, defaults, defaultCooldown, WindowPolicy{Length: DefaultWindow, ShrinkCooldown: DefaultShrinkCooldown})
}

// ParsePolicyWith is ParsePolicy with the window flags: window gives the defaults of the
// window annotations, and defaults' Headroom and Tolerance those of resizer.io/headroom and
// resizer.io/tolerance (nil: DefaultHeadroom, DefaultTolerance; window.MaxShrink nil:
// DefaultMaxShrink). The built-in numbers are shared by every Policy, which is why a Policy's
// numbers are never modified.
func ParsePolicyWith(annotations map[string]string, defaults Settings, defaultCooldown time.Duration, window WindowPolicy) (Policy, []AnnotationProblem) {
	p := Policy{
		Enabled: true,
		Namespace: Settings{Threshold: cloneRat(defaults.Threshold), Increment: cloneRat(defaults.Increment),
			Headroom: cloneRat(defaults.Headroom), Tolerance: cloneRat(defaults.Tolerance)},
		Cooldown: defaultCooldown,
		Window:   window,
	}
	if p.Namespace.Headroom == nil {
		p.Namespace.Headroom = builtinHeadroom
	}
	if p.Namespace.Tolerance == nil {
		p.Namespace.Tolerance = builtinTolerance
	}
	if p.Window.MaxShrink == nil {
		p.Window.MaxShrink = builtinMaxShrink
	} else {
		p.Window.MaxShrink = cloneRat(p.Window.MaxShrink)
	}
	var problems []AnnotationProblem
	report := func(key, value string, err error, fallback string) {
		problems = append(problems, AnnotationProblem{Key: key, Value: clipValue(value, annMaxProblemValue), Problem: err.Error(), Fallback: fallback})
	}

	// Namespace-wide keys first: they are the fallback of the per-resource keys below.
	if v, ok := annotations[AnnotationEnabled]; ok {
		if b, err := parseAnnotationBool(v); err != nil {
			report(AnnotationEnabled, v, err, "true") // opt-out model: stay watched
		} else {
			p.Enabled = b
		}
	}
	if v, ok := annotations[AnnotationThreshold]; ok {
		if t, err := ParseThreshold(v); err != nil {
			report(AnnotationThreshold, v, err, formatThresholdPct(p.Namespace.Threshold))
		} else {
			p.Namespace.Threshold = t
		}
	}
	if v, ok := annotations[AnnotationIncrement]; ok {
		if i, err := ParseIncrement(v); err != nil {
			report(AnnotationIncrement, v, err, formatIncrementPct(p.Namespace.Increment))
		} else {
			p.Namespace.Increment = i
		}
	}
	if v, ok := annotations[AnnotationCooldownMinutes]; ok {
		if d, err := ParseCooldownMinutes(v); err != nil {
			report(AnnotationCooldownMinutes, v, err, formatCooldown(p.Cooldown))
		} else {
			p.Cooldown = d
		}
	}

	parseWindowAnnotations(annotations, &p, report)

	for key, v := range annotations {
		name, ok := strings.CutPrefix(key, AnnotationPrefix)
		if !ok {
			continue
		}
		switch key {
		case AnnotationEnabled, AnnotationThreshold, AnnotationIncrement, AnnotationCooldownMinutes:
			continue // handled above
		}
		if isWindowAnnotation(key) {
			continue // handled above
		}
		switch key {
		case AnnotationLastModified:
			continue // known; belongs to the state Lease and means nothing here
		case AnnotationAutoMerge:
			if _, err := parseAnnotationBool(v); err != nil {
				report(key, v, err, FallbackIgnored)
			}
			continue
		case AnnotationGitPath:
			if strings.TrimSpace(v) == "" {
				report(key, v, errAnnEmpty, FallbackIgnored)
			}
			continue
		}
		if alias, ok := strings.CutSuffix(name, annThresholdSuffix); ok && alias != "" {
			t, err := ParseThreshold(v)
			if err != nil {
				report(key, v, err, formatThresholdPct(p.Namespace.Threshold))
				continue
			}
			p.setResourceOverride(alias, func(s *Settings) { s.Threshold = t })
			continue
		}
		if alias, ok := strings.CutSuffix(name, annIncrementSuffix); ok && alias != "" {
			i, err := ParseIncrement(v)
			if err != nil {
				report(key, v, err, formatIncrementPct(p.Namespace.Increment))
				continue
			}
			p.setResourceOverride(alias, func(s *Settings) { s.Increment = i })
			continue
		}
		if parseWindowResourceAnnotation(&p, key, name, v, report) {
			continue
		}
		report(key, v, errAnnUnknown, FallbackIgnored)
	}

	// Map iteration order is random; callers log and emit events from this list.
	sort.Slice(problems, func(i, j int) bool { return problems[i].Key < problems[j].Key })
	return p, problems
}

// setResourceOverride changes one field of alias's override, creating the map on first use so that a
// namespace without overrides costs no map.
func (p *Policy) setResourceOverride(alias string, set func(*Settings)) {
	if p.PerResource == nil {
		p.PerResource = make(map[string]Settings)
	}
	s := p.PerResource[alias]
	set(&s)
	p.PerResource[alias] = s
}

// Settings returns the effective settings of one resource: its per-resource annotation
// (looked up by Alias), else the namespace annotation, else the flag default (already folded
// into p.Namespace). The returned numbers are shared with p; do not modify them.
func (p Policy) Settings(resource corev1.ResourceName) Settings {
	s := p.Namespace
	if o, ok := p.PerResource[Alias(resource)]; ok {
		if o.Threshold != nil {
			s.Threshold = o.Threshold
		}
		if o.Increment != nil {
			s.Increment = o.Increment
		}
		if o.Headroom != nil {
			s.Headroom = o.Headroom
		}
		if o.Tolerance != nil {
			s.Tolerance = o.Tolerance
		}
		s.Min = o.Min
	}
	return s
}

// Error formats the problem for logs and events, e.g.
// annotation resizer.io/cpu-threshold="abc": not a number; using 80%.
func (a AnnotationProblem) Error() string {
	if a.Fallback == FallbackIgnored {
		return fmt.Sprintf("annotation %s=%q: %s; ignored", a.Key, a.Value, a.Problem)
	}
	return fmt.Sprintf("annotation %s=%q: %s; using %s", a.Key, a.Value, a.Problem, a.Fallback)
}

// parseAnnotationBool accepts "true" and "false" in any case; strconv.ParseBool would also take "1",
// "t" and friends, which are not what we document.
func parseAnnotationBool(s string) (bool, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.EqualFold(s, "true"):
		return true, nil
	case strings.EqualFold(s, "false"):
		return false, nil
	}
	return false, errAnnNotBool
}

// FormatRat prints r as the shortest decimal that represents it exactly: 80, 87.5, 0.2.
// A value without a short exact decimal (1/3, or more than 64 decimal places) is rounded to
// 12 decimal places. It is meant for messages; nil prints as "<nil>".
func FormatRat(r *big.Rat) string {
	if r == nil {
		return "<nil>"
	}
	places := 12
	if p, ok := finiteDecimalPlaces(r.Denom()); ok {
		places = p
	}
	s := r.FloatString(places)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// finiteDecimalPlaces returns how many decimal places 1/den needs, if that is a finite number no
// larger than 64 (den = 2^a·5^b).
func finiteDecimalPlaces(den *big.Int) (int, bool) {
	d := new(big.Int).Set(den)
	twos := int(d.TrailingZeroBits())
	if twos > 64 {
		return 0, false
	}
	d.Rsh(d, uint(twos))
	five, rem := big.NewInt(5), new(big.Int)
	fives := 0
	for d.Cmp(big.NewInt(1)) != 0 {
		q, m := new(big.Int).QuoRem(d, five, rem)
		if m.Sign() != 0 || fives == 64 {
			return 0, false
		}
		d = q
		fives++
	}
	return max(twos, fives), true
}

// formatThresholdPct prints a threshold: 80 → "80%".
func formatThresholdPct(r *big.Rat) string {
	if r == nil {
		return "<nil>"
	}
	return FormatRat(r) + "%"
}

// formatIncrementPct prints an increment as a percentage: 1/5 → "20%".
func formatIncrementPct(r *big.Rat) string {
	if r == nil {
		return "<nil>"
	}
	return FormatRat(new(big.Rat).Mul(r, annHundred)) + "%"
}

// formatCooldown prints a cooldown the way the annotation and --cooldown take it: 1h.
func formatCooldown(d time.Duration) string { return lifecycle.FormatDuration(d) }

// cloneRat returns a copy of r, or nil.
func cloneRat(r *big.Rat) *big.Rat {
	if r == nil {
		return nil
	}
	return new(big.Rat).Set(r)
}

// clipValue shortens s to at most n characters (runes; invalid bytes count as one) and marks the cut
// with "…", so hostile values cannot flood logs and events.
func clipValue(s string, n int) string {
	if len(s) <= n {
		return s // n bytes are at most n characters
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + "…"
		}
		count++
	}
	return s
}
