package app

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/kustos-dev/kustos/internal/detect/quota"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

func validOptions() Options {
	return Options{
		Mode:                    ModeObserve,
		Defaults:                quota.Settings{Threshold: big.NewRat(80, 1), Increment: big.NewRat(1, 5)},
		DefaultCooldown:         time.Hour,
		StateNamespace:          "kustos-system",
		LeaseSweepInterval:      12 * time.Hour,
		MaxConcurrentReconciles: 4,
	}
}

// validateCase changes valid options and names the flag Validate must complain about ("" for
// none).
type validateCase struct {
	name    string
	mutate  func(*Options)
	wantErr string
}

// checkValidate runs Validate on base() changed by each case.
func checkValidate(t *testing.T, base func() Options, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			tc.mutate(&o)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one naming %s", err, tc.wantErr)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	checkValidate(t, validOptions, []validateCase{
		{"defaults are valid", func(*Options) {}, ""},
		{"unknown mode", func(o *Options) { o.Mode = "patch" }, `--mode="patch": want "observe", "pr" or "direct"`},
		{"pr mode needs a repository", func(o *Options) { o.Mode = "pr" }, `--mode="pr": --git-repo`},
		{"state namespace required", func(o *Options) { o.StateNamespace = "" }, "--state-namespace"},
		{"negative cooldown", func(o *Options) { o.DefaultCooldown = -time.Second }, "--cooldown"},
		{"zero sweep interval", func(o *Options) { o.LeaseSweepInterval = 0 }, "--lease-sweep-interval"},
		{"no workers", func(o *Options) { o.MaxConcurrentReconciles = 0 }, "--max-concurrent-reconciles"},
		{"trusted proxies", func(o *Options) { o.Expiry.Extension.TrustedProxies = []string{"10.0.0.0/8", "fd00::/8", "192.0.2.7"} }, ""},
		{"a trusted proxy that is no CIDR", func(o *Options) { o.Expiry.Extension.TrustedProxies = []string{"10.0.0.0/8", "ingress-nginx"} }, `--trusted-proxies: "ingress-nginx"`},
	})
}

// TestQuotaLeasesKeepTheirLegacyNames: the state store names the quota detector's Leases as
// namespace-resizer did (state-<namespace>-<quota>) by the detector's name, which it may not
// import; the wiring here sees both.
func TestQuotaLeasesKeepTheirLegacyNames(t *testing.T) {
	if got, want := state.LeaseName(lifecycle.NewKey(quota.DetectorName, "team-a", "compute")), "state-team-a-compute"; got != want {
		t.Errorf("the quota detector's Lease is named %q, want %q", got, want)
	}
}
