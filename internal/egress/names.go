package egress

import (
	"fmt"
	"strings"
)

// HostNames is a list of host names and host-name suffixes, in the syntax of
// --allowed-destinations' names: "uploads.example.edu" (that name only) or ".example.edu"
// (every name below it, not the name itself). Other flags that name hosts (Kustos's
// --submission-allowed-hosts) parse and match with it, so that one syntax and one matcher hold
// everywhere. The zero HostNames allows nothing.
type HostNames struct {
	rules []nameRule
}

// ParseHostNames reads entries (each a name or a suffix with a leading dot; no wildcard, port,
// scheme, user or trailing dot). Its errors name the entry and what is wrong with it.
func ParseHostNames(entries []string) (HostNames, error) {
	var h HostNames
	for i, raw := range entries {
		e := strings.TrimSpace(raw)
		if e == "" {
			return HostNames{}, fmt.Errorf("entry %d: empty (a doubled or trailing comma?)", i+1)
		}
		r, err := parseName(e)
		if err != nil {
			return HostNames{}, fmt.Errorf("entry %d %q: %w", i+1, e, err)
		}
		h.rules = append(h.rules, r)
	}
	return h, nil
}

// MustParseHostNames is ParseHostNames for tests and constants; it panics on an error.
func MustParseHostNames(entries ...string) HostNames {
	h, err := ParseHostNames(entries)
	if err != nil {
		panic(err)
	}
	return h
}

// Empty reports whether h allows no name at all.
func (h HostNames) Empty() bool { return len(h.rules) == 0 }

// Allows reports whether host (as a URL named it) is one of h's names or below one of its
// suffixes, by the rules of --allowed-destinations: case-insensitive, one trailing dot ignored,
// and a host that is no valid host name (an IP literal, characters no DNS name has, empty
// labels) never matches.
func (h HostNames) Allows(host string) bool {
	return Policy{names: h.rules}.nameAllowed(host)
}

// String is the list as the flag would say it, canonical.
func (h HostNames) String() string {
	out := make([]string, 0, len(h.rules))
	for _, r := range h.rules {
		if r.suffix {
			out = append(out, "."+r.name)
		} else {
			out = append(out, r.name)
		}
	}
	return strings.Join(out, ",")
}
