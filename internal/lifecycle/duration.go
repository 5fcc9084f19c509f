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

// ParseDuration parses the one duration grammar of Kustos: every lifetime or interval in flags,
// annotations, Cleaners and chart values is read by it (ParseLimit adds "never" where there
// may be no limit). It is Go's time.ParseDuration grammar without signs (so every value a Go
// duration flag took still works, "0" included), plus days (d = 24h) and weeks (w = 7d), e.g.
// "90m", "360h", "15d", "1w2d", "1.5d", "1h30m". Go's own parser stops at hours. A day is 24 hours whatever the calendar says (no daylight saving). The result is
// at most math.MaxInt64 nanoseconds (about 292 years); more is an error, not a wrap-around.
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty (want e.g. 90m, 36h, 15d, 1w2d)", ErrDuration)
	}
	if s == "0" {
		return 0, nil // as time.ParseDuration: flags such as --notify-mail-batch-window=0 were written so
	}
	if strings.EqualFold(s, Never) {
		return 0, fmt.Errorf("%w: %q is not accepted here, only where there can be no limit (a lifetime or timeout); give a length, e.g. 90m, 36h, 15d, 1w2d", ErrDuration, s)
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

// Never is the word for "no limit" where a lifetime or timeout may have none: kustos.io/ttl,
// kustos.io/inactivity-timeout, --default-ttl, --inactivity-timeout. Elsewhere (a cooldown, an
// interval, a warning time) ParseDuration refuses it by name.
const Never = "never"

// ParseLimit parses a lifetime or timeout that may be Never (any case): never is (0, true, nil);
// anything else is ParseDuration's.
func ParseLimit(s string) (d time.Duration, never bool, err error) {
	if strings.EqualFold(s, Never) {
		return 0, true, nil
	}
	d, err = ParseDuration(s)
	return d, false, err
}

// FormatDuration writes d in the ParseDuration grammar with the largest whole units, so that
// help and messages show what an operator would write: 14d, 1d12h, 1h30m, 30s, 500ms, 0s.
// Weeks are not used (14d reads better than 2w). ParseDuration(FormatDuration(d)) == d for
// every d >= 0.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		if d == math.MinInt64 {
			return "-" + FormatDuration(math.MaxInt64) // off by 1ns; never a flag's value
		}
		d = -d
	}
	for _, u := range []struct {
		name string
		size time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", time.Nanosecond}} {
		if n := d / u.size; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10))
			b.WriteString(u.name)
			d %= u.size
		}
	}
	return b.String()
}

// DurationFlag is a command-line value (pflag.Value and flag.Value) in the ParseDuration grammar
// that writes to *D. It prints as FormatDuration does (--cooldown's default shows as 1h, not
// 1h0m0s). With AllowNever, "never" and an empty value set 0, which the flag's reader takes as
// no limit, and 0 prints as never; without it, never is refused by name and empty is an error
// (an empty value is more often a missing chart value than a wish for 0).
type DurationFlag struct {
	D          *time.Duration
	AllowNever bool
}

// String is the value as an operator would write it.
func (f DurationFlag) String() string {
	if f.D == nil {
		return ""
	}
	if f.AllowNever && *f.D == 0 {
		return Never
	}
	return FormatDuration(*f.D)
}

// Set parses v.
func (f DurationFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	if f.AllowNever {
		if v == "" {
			*f.D = 0
			return nil
		}
		d, _, err := ParseLimit(v)
		if err != nil {
			return fmt.Errorf("%w; or %s for no limit", err, Never)
		}
		*f.D = d
		return nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return err
	}
	*f.D = d
	return nil
}

// Type names the value in help: "duration".
func (f DurationFlag) Type() string { return "duration" }
