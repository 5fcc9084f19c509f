package lifecycle

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrDuration is wrapped by every ParseDuration error.
var ErrDuration = errors.New("invalid duration")

// durationUnits are the units ParseDuration accepts, longest first where one is a prefix of
// another ("ms" before "m").
var durationUnits = []struct {
	name string
	size time.Duration
}{
	{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"µs", time.Microsecond}, {"ms", time.Millisecond},
	{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour},
}

// ParseDuration parses the lifetime grammar Kustos's annotations and Cleaners share: Go's
// time.ParseDuration grammar without signs, plus days (d = 24h) and weeks (w = 7d), e.g. "90m",
// "360h", "15d", "1w2d", "1.5d". Go's own parser stops at hours, which the cleaner seed calls a
// limitation. A day is 24 hours whatever the calendar says (no daylight saving). The result is
// at most math.MaxInt64 nanoseconds (about 292 years); more is an error, not a wrap-around.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty (want e.g. 90m, 36h, 15d, 1w2d)", ErrDuration)
	}
	rest := s
	var total float64
	var sum time.Duration
	for rest != "" {
		n := 0
		for n < len(rest) && (rest[n] >= '0' && rest[n] <= '9' || rest[n] == '.') {
			n++
		}
		if n == 0 {
			return 0, fmt.Errorf("%w: %q: expected a number at %q (want e.g. 90m, 36h, 15d, 1w2d)", ErrDuration, s, rest)
		}
		num := rest[:n]
		if strings.Count(num, ".") > 1 || num[0] == '.' || num[len(num)-1] == '.' {
			return 0, fmt.Errorf("%w: %q: %q is not a number", ErrDuration, s, num)
		}
		rest = rest[n:]
		var unit time.Duration
		for _, u := range durationUnits {
			if strings.HasPrefix(rest, u.name) {
				unit, rest = u.size, rest[len(u.name):]
				break
			}
		}
		if unit == 0 {
			return 0, fmt.Errorf("%w: %q: %q needs a unit (ns, us, ms, s, m, h, d or w)", ErrDuration, s, num)
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q: %q is not a number", ErrDuration, s, num)
		}
		// Whole numbers are exact; fractions go through float64, as in time.ParseDuration,
		// which is exact to the nanosecond for any realistic value.
		part := v * float64(unit)
		total += part
		if total >= math.MaxInt64 {
			return 0, fmt.Errorf("%w: %q is longer than 292 years", ErrDuration, s)
		}
		if i, err := strconv.ParseInt(num, 10, 64); err == nil && i <= math.MaxInt64/int64(unit) {
			sum += time.Duration(i) * unit
		} else {
			sum += time.Duration(part)
		}
	}
	if sum < 0 {
		return 0, fmt.Errorf("%w: %q is longer than 292 years", ErrDuration, s)
	}
	return sum, nil
}

// LifetimeFlag is a flag.Value in the ParseDuration grammar that writes to *D; empty sets 0. The
// commands' lifetime flags (--default-ttl, --expiry-warning-before, …) share it.
type LifetimeFlag struct{ D *time.Duration }

func (f LifetimeFlag) String() string {
	if f.D == nil || *f.D == 0 {
		return ""
	}
	return f.D.String()
}

// Set parses v.
func (f LifetimeFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		*f.D = 0
		return nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return err
	}
	*f.D = d
	return nil
}
