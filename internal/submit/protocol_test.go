package submit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/submit"
)

func TestParseOffset(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"0", 0, ""},
		{"8388608", 8388608, ""},
		{"9223372036854775807", 9223372036854775807, ""},
		{"", 0, "empty"},
		{"-1", 0, "not a number of bytes"},
		{"+5", 0, "not a number of bytes"},
		{" 5", 0, "not a number of bytes"},
		{"5 ", 0, "not a number of bytes"},
		{"0x10", 0, "not a number of bytes"},
		{"007", 0, "leading zero"},
		{"9223372036854775808", 0, "out of range"},
		{"12345678901234567890", 0, "too long"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := submit.ParseOffset(tc.in)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, submit.ErrBadOffset) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseOffset(%q) = %d, %v; want an error saying %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseOffset(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseCompletion(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, in string
		want     submit.Completion
		wantErr  string
	}{
		{"size and sum", `{"size":12,"sha256":"` + sum + `"}`, submit.Completion{Size: 12, SHA256: sum}, ""},
		{"upper-case hex", `{"size":0,"sha256":"` + strings.ToUpper(sum) + `"}`, submit.Completion{SHA256: sum}, ""},
		{"with a name", `{"name":"exam-1","size":1,"sha256":"` + sum + `"}`, submit.Completion{Name: "exam-1", Size: 1, SHA256: sum}, ""},
		{"negative size", `{"size":-1,"sha256":"` + sum + `"}`, submit.Completion{}, "negative"},
		{"short sum", `{"size":1,"sha256":"abcd"}`, submit.Completion{}, "64 hex digits"},
		{"not hex", `{"size":1,"sha256":"` + strings.Repeat("zz", 32) + `"}`, submit.Completion{}, "64 hex digits"},
		{"no sum", `{"size":1}`, submit.Completion{}, "64 hex digits"},
		{"unknown field", `{"size":1,"sha256":"` + sum + `","md5":"x"}`, submit.Completion{}, "unknown field"},
		{"two values", `{"size":1,"sha256":"` + sum + `"} {}`, submit.Completion{}, "more than one"},
		{"not JSON", `size=1`, submit.Completion{}, "invalid character"},
		{"size as a string", `{"size":"1","sha256":"` + sum + `"}`, submit.Completion{}, "cannot unmarshal"},
		{"too long", `{"size":1,"sha256":"` + sum + `"}` + strings.Repeat(" ", 5000), submit.Completion{}, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := submit.ParseCompletion([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, submit.ErrBadCompletion) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want an error saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"exam-2024_student.42", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{".hidden", false},
		{"../etc", false},
		{"a/b", false},
		{"a b", false},
		{"ü", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if err := submit.CheckName(tc.in); (err == nil) != tc.ok {
				t.Fatalf("CheckName(%q) = %v, want ok=%v", tc.in, err, tc.ok)
			}
		})
	}
}

// FuzzParseOffset: any header value parses to a non-negative offset that formats back to
// itself, or is refused with ErrBadOffset; nothing panics.
func FuzzParseOffset(f *testing.F) {
	for _, s := range []string{"0", "1", "8388608", "-1", "007", "", "9223372036854775807", "9223372036854775808", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := submit.ParseOffset(s)
		if err != nil {
			if !errors.Is(err, submit.ErrBadOffset) {
				t.Fatalf("%q: error %v does not wrap ErrBadOffset", s, err)
			}
			return
		}
		if n < 0 || submit.FormatOffset(n) != s {
			t.Fatalf("%q parsed to %d, which formats as %q", s, n, submit.FormatOffset(n))
		}
	})
}

// FuzzParseCompletion: any body is a completion with a size of 0 or more and 64 lower-case hex
// digits, or refused with ErrBadCompletion; nothing panics.
func FuzzParseCompletion(f *testing.F) {
	sum := strings.Repeat("ab", 32)
	for _, s := range []string{`{"size":12,"sha256":"` + sum + `"}`, `{"size":-1}`, `{}`, `[]`, `null`, `{"name":"x","size":1e3,"sha256":"` + sum + `"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := submit.ParseCompletion(data)
		if err != nil {
			if !errors.Is(err, submit.ErrBadCompletion) {
				t.Fatalf("error %v does not wrap ErrBadCompletion", err)
			}
			return
		}
		if c.Size < 0 || len(c.SHA256) != 64 || strings.ToLower(c.SHA256) != c.SHA256 {
			t.Fatalf("accepted %+v", c)
		}
	})
}
