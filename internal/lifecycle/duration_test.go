package lifecycle

import (
	"errors"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{in: "360h", want: 360 * time.Hour},
		{in: "15d", want: 15 * 24 * time.Hour},
		{in: "1w2d", want: 9 * 24 * time.Hour},
		{in: "1w", want: 7 * 24 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "36h30m", want: 36*time.Hour + 30*time.Minute},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "0s", want: 0},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "2µs", want: 2 * time.Microsecond},
		{in: "2us", want: 2 * time.Microsecond},
		{in: "15000w", want: 15000 * 7 * 24 * time.Hour},
		{in: "", err: true},
		{in: "five days", err: true},
		{in: "5", err: true},
		{in: "-1d", err: true},
		{in: "+1d", err: true},
		{in: "1y", err: true},
		{in: "1d ", err: true},
		{in: " 1d", err: true},
		{in: "1..5d", err: true},
		{in: ".5d", err: true},
		{in: "5.d", err: true},
		{in: "d", err: true},
		{in: "16000w", err: true},
		{in: "9223372036854775807ns1ns", err: true},
		{in: "99999999999999999999h", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if tc.err {
				if !errors.Is(err, ErrDuration) {
					t.Fatalf("ParseDuration(%q) = %v, %v; want an ErrDuration", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzParseDuration: never panics, never returns a negative duration, agrees with Go's parser
// wherever Go's parser accepts the input without a sign, and errors wrap ErrDuration.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"360h", "15d", "1w2d", "1.5d", "90m", "", "five days", "-1h", "1e3h", "9223372036854775807ns", "2562047h47m16.854775807s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDuration(s)
		if err != nil {
			if !errors.Is(err, ErrDuration) {
				t.Fatalf("ParseDuration(%q): %v does not wrap ErrDuration", s, err)
			}
			return
		}
		if got < 0 {
			t.Fatalf("ParseDuration(%q) = %v < 0", s, got)
		}
		if want, err := time.ParseDuration(s); err == nil && want >= 0 && want != got {
			// Fractions may differ by float rounding in the last nanoseconds.
			if d := want - got; d > time.Microsecond || d < -time.Microsecond {
				t.Fatalf("ParseDuration(%q) = %v; time.ParseDuration says %v", s, got, want)
			}
		}
	})
}
