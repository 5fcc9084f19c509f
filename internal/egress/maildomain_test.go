package egress

import (
	"strings"
	"testing"
)

// TestAllowsMailDomain: an owner's address passes --owner-domains when the domain after its last
// "@" is a listed name, or below a listed suffix; case-insensitively, and never by a look-alike.
func TestAllowsMailDomain(t *testing.T) {
	domains := MustParseHostNames("example.edu", ".lab.example.org")
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"ana@example.edu", true},
		{"Ana@EXAMPLE.EDU", true},
		{"ana@example.edu.", true}, // the absolute form of the same domain
		{"ana@cs.example.edu", false},
		{"ana@example.edu.evil.com", false},
		{"ana@evilexample.edu", false},
		{"ana@x.lab.example.org", true},
		{"ana@a.b.LAB.example.org", true},
		{"ana@lab.example.org", false}, // a suffix names what is below it, not itself
		{"ana@xlab.example.org", false},
		{`"ana@example.edu"@evil.com`, false}, // the last "@" starts the domain
		{`"bo@evil.com"@example.edu`, true},
		{"example.edu", false}, // no "@"
		{"ana@", false},
		{"ana@[10.0.0.1]", false},
		{"ana@example..edu", false},
		{"", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := domains.AllowsMailDomain(tc.addr); got != tc.want {
				t.Errorf("AllowsMailDomain(%q) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
	if (HostNames{}).AllowsMailDomain("ana@example.edu") {
		t.Error("an empty list allows a domain; the caller decides what no list means")
	}
}

// FuzzAllowsMailDomain checks the matcher against its definition: the result does not depend
// on the local part or on case, and an allowed domain is example.edu itself or ends in
// ".lab.example.org".
func FuzzAllowsMailDomain(f *testing.F) {
	domains := MustParseHostNames("example.edu", ".lab.example.org")
	for _, s := range []string{"ana@example.edu", "a@x.lab.example.org", `"a@b"@example.edu`, "a@example.edu.", "a@@", "@", "a@lab.example.org", "a@EXAMPLE.edu"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		got := domains.AllowsMailDomain(addr)
		i := strings.LastIndexByte(addr, '@')
		if i < 0 {
			if got {
				t.Fatalf("%q has no domain and is allowed", addr)
			}
			return
		}
		domain := addr[i+1:]
		if other := domains.AllowsMailDomain("someone.else@" + domain); other != got {
			t.Fatalf("%q: %v, but the same domain with another local part: %v", addr, got, other)
		}
		// (ASCII only: ToUpper maps some other letters onto ASCII ones, ı to I.)
		if upper := domains.AllowsMailDomain(strings.ToUpper(addr)); ascii(addr) && upper != got {
			t.Fatalf("%q: %v, in upper case: %v", addr, got, upper)
		}
		d := strings.ToLower(strings.TrimSuffix(domain, "."))
		if got && d != "example.edu" && !strings.HasSuffix(d, ".lab.example.org") {
			t.Fatalf("%q allowed, its domain %q is not listed", addr, d)
		}
	})
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
