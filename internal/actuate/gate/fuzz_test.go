package gate

import (
	"net/url"
	"strings"
	"testing"

	"github.com/kustos-dev/kustos/internal/egress"
)

// FuzzCheckDestination: whatever a tenant writes in kustos.io/submit-to, what passes is an https
// URL without credentials whose host is allowed, and a refusal never repeats the URL's path
// or query (where a token would be).
func FuzzCheckDestination(f *testing.F) {
	for _, s := range []string{"https://uploads.example.edu/x", "http://uploads.example.edu", "https://u:p@uploads.example.edu/",
		"https://uploads.example.edu.evil.com/?token=secret", "HTTPS://UPLOADS.EXAMPLE.EDU", "https://[::1]/", "%zz", ""} {
		f.Add(s)
	}
	allowed := egress.MustParseHostNames("uploads.example.edu", ".labs.example.edu")
	f.Fuzz(func(t *testing.T, to string) {
		err := CheckDestination(to, AnnotationSubmitTo+" on Namespace/a", allowed)
		if err == nil {
			u, perr := url.Parse(to)
			if perr != nil || u.Scheme != "https" || u.User != nil || !allowed.Allows(u.Hostname()) {
				t.Fatalf("%q passed", to)
			}
			return
		}
		if u, perr := url.Parse(to); perr == nil && len(u.RawQuery) > 3 && strings.Contains(err.Error(), u.RawQuery) {
			t.Fatalf("the refusal of %q repeats its query: %v", to, err)
		}
	})
}
