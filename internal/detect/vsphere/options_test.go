package vsphere

import (
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/vsphere"
)

func TestOptionsValidate(t *testing.T) {
	valid := func(edit func(*Options)) Options {
		o := Options{Enabled: true, CrawlInterval: 10 * time.Minute, Config: vsphere.Config{URL: "https://vcenter.example.com",
			CredentialsFile: "/secrets/vsphere", Datacenter: "DC0", Folders: []string{"labs"}}}
		edit(&o)
		return o
	}
	for _, tc := range []struct {
		name       string
		o          Options
		expiry     bool
		mode       string
		carriesOut bool
		want       string // "": valid
	}{
		{"off", Options{}, false, "direct", true, ""},
		{"observer", valid(func(*Options) {}), true, "observe", false, ""},
		{"no expiry", valid(func(*Options) {}), false, "observe", false, "--enable-vsphere needs --enable-expiry"},
		{"no URL", valid(func(o *Options) { o.Config.URL = "" }), true, "observe", false, "needs --vsphere-url"},
		{"http URL", valid(func(o *Options) { o.Config.URL = "http://vcenter" }), true, "observe", false, "want https://HOST"},
		{"no credentials", valid(func(o *Options) { o.Config.CredentialsFile = "" }), true, "observe", false, "needs --vsphere-credentials-file"},
		{"no datacenter", valid(func(o *Options) { o.Config.Datacenter = "" }), true, "observe", false, "needs --vsphere-datacenter"},
		{"no folders", valid(func(o *Options) { o.Config.Folders = nil }), true, "observe", false, "needs --vsphere-folders"},
		{"insecure and a CA", valid(func(o *Options) { o.Config.Insecure, o.Config.CAFile = true, "/ca.pem" }), true, "observe", false, "choose one"},
		{"no interval", valid(func(o *Options) { o.CrawlInterval = 0 }), true, "observe", false, "--vsphere-crawl-interval=0s: must be positive"},
		{"carries out without quarantine folder", valid(func(o *Options) { o.Config.QuarantineFolder = " / " }), true, "direct", true, "--mode=direct with --enable-vsphere needs --vsphere-quarantine-folder"},
		{"carries out with quarantine folder", valid(func(o *Options) { o.Config.QuarantineFolder = "quarantine" }), true, "pr", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate(tc.expiry, tc.mode, tc.carriesOut)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}
