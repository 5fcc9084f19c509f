package lifecycle

import (
	"errors"
	"strings"
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

func TestNever(t *testing.T) {
	for _, in := range []string{"never", "Never", "NEVER"} {
		if d, never, err := ParseLimit(in); err != nil || !never || d != 0 {
			t.Errorf("ParseLimit(%q) = %v, %v, %v; want 0, true, nil", in, d, never, err)
		}
		_, err := ParseDuration(in)
		if !errors.Is(err, ErrDuration) || !strings.Contains(err.Error(), "not accepted here") {
			t.Errorf("ParseDuration(%q): %v; want an error that says never is not accepted here", in, err)
		}
	}
	if d, never, err := ParseLimit("2w"); err != nil || never || d != 14*24*time.Hour {
		t.Errorf("ParseLimit(2w) = %v, %v, %v", d, never, err)
	}
	if d, err := ParseDuration("0"); err != nil || d != 0 {
		t.Errorf("ParseDuration(0) = %v, %v; Go's duration flags took a bare 0", d, err)
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{14 * 24 * time.Hour, "14d"},
		{36 * time.Hour, "1d12h"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{30 * time.Second, "30s"},
		{10 * time.Second, "10s"},
		{1500 * time.Millisecond, "1s500ms"},
		{time.Nanosecond, "1ns"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := FormatDuration(tc.in); got != tc.want {
				t.Errorf("FormatDuration(%v) = %q, want %q", tc.in, got, tc.want)
			}
			if back, err := ParseDuration(tc.want); err != nil || back != tc.in {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.want, back, err, tc.in)
			}
		})
	}
}

func TestDurationFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		never   bool
		in      string
		want    time.Duration
		show    string
		wantErr string
	}{
		{name: "days", in: "1d", want: 24 * time.Hour, show: "1d"},
		{name: "Go's form still works", in: "336h0m0s", want: 14 * 24 * time.Hour, show: "14d"},
		{name: "combination", in: "1h30m", want: 90 * time.Minute, show: "1h30m"},
		{name: "weeks", in: "1w2d", want: 9 * 24 * time.Hour, show: "9d"},
		{name: "bare zero", in: "0", want: 0, show: "0s"},
		{name: "never where a limit is needed", in: "never", wantErr: `"never" is not accepted here`},
		{name: "empty where a length is needed", in: "", wantErr: "empty"},
		{name: "garbage", in: "5 days", wantErr: "invalid duration"},
		{name: "never where none is allowed", never: true, in: "never", want: 0, show: "never"},
		{name: "empty where none is allowed", never: true, in: "", want: 0, show: "never"},
		{name: "a length where none is allowed", never: true, in: "2w", want: 14 * 24 * time.Hour, show: "14d"},
		{name: "garbage where none is allowed", never: true, in: "soon", wantErr: "or never for no limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := time.Minute
			f := DurationFlag{D: &d, AllowNever: tc.never}
			err := f.Set(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Set(%q) = %v; want an error containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil || d != tc.want || f.String() != tc.show {
				t.Fatalf("Set(%q): %v, value %v shown as %q; want %v shown as %q", tc.in, err, d, f.String(), tc.want, tc.show)
			}
		})
	}
}

// FuzzFormatDuration: whatever ParseDuration accepts, FormatDuration writes back in a form
// ParseDuration reads as the same value (help shows defaults that way).
func FuzzFormatDuration(f *testing.F) {
	for _, s := range []string{"336h", "1d12h", "90m", "1.5s", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		back, err := ParseDuration(FormatDuration(d))
		if err != nil || back != d {
			t.Fatalf("ParseDuration(FormatDuration(%v)=%q) = %v, %v", d, FormatDuration(d), back, err)
		}
	})
}
