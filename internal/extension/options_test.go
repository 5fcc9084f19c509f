package extension

import (
	"strings"
	"testing"
	"time"
)

// TestOptionsValidate: each --extension-* flag that cannot work is named.
func TestOptionsValidate(t *testing.T) {
	ok := Options{Addr: ":8443", URL: "https://kustos.example.com", KeyFile: "/k", Periods: []string{"1d", "7d"}, Max: 30 * 24 * time.Hour}
	for _, tc := range []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"valid", func(*Options) {}, ""},
		{"no server: nothing needed", func(o *Options) { *o = Options{} }, ""},
		{"no URL", func(o *Options) { o.URL = "" }, "--extension-url"},
		{"negative owner page TTL", func(o *Options) { o.OwnerPageTTL = -time.Hour }, "--owner-page-link-ttl"},
		{"no key", func(o *Options) { o.KeyFile = "" }, "--extension-key-file or --extension-key-secret"},
		{"bad period", func(o *Options) { o.Periods = []string{"soon"} }, "--extension-periods"},
		{"bad proxy", func(o *Options) { o.TrustedProxies = []string{"10.0.0.0/99"} }, "--trusted-proxies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.mutate(&o)
			err := o.Validate()
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
