package ephemeral

import (
	"fmt"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/lifecycle/conditions"
)

// Options configure the Cleaner detector; every field is a flag of `kustos run`.
type Options struct {
	// Enabled is --enable-cleaners: the Cleaner CRD must be installed.
	Enabled bool
	// ReadyRecheck and NotReadyRecheck are --cleaner-ready-recheck and --cleaner-not-ready-recheck:
	// how often a Cleaner is looked at without a change, while Ready and while not (0: 30m and
	// 10s).
	ReadyRecheck, NotReadyRecheck time.Duration
	// LeaseGrace is how long after its last decision the Lease of a deleted target is kept
	// (0: 10 minutes); tests shorten it.
	LeaseGrace time.Duration
	// AuthorKeyFile is --cleaner-author-key-file: the key (at least 32 bytes, from a Secret)
	// that signs and verifies the author stamps the admission webhook puts on Cleaners. Empty:
	// no Cleaner's author can be verified, and outside observer mode nothing is deleted for any.
	AuthorKeyFile string
	// AuthorKeySecret is --cleaner-author-key-secret (namespace/name), instead of the file: the
	// key is read from that Secret, which Kustos creates once with a random key when it does
	// not exist (package keyring), so that no render of the chart generates or replaces it.
	AuthorKeySecret string
}

// Validate reports the first option that cannot work, naming it as a flag.
func (o Options) Validate() error {
	switch {
	case o.ReadyRecheck < 0:
		return fmt.Errorf("--cleaner-ready-recheck=%s: must not be negative", lifecycle.FormatDuration(o.ReadyRecheck))
	case o.NotReadyRecheck < 0:
		return fmt.Errorf("--cleaner-not-ready-recheck=%s: must not be negative", lifecycle.FormatDuration(o.NotReadyRecheck))
	}
	return nil
}

// Policy is the Reconciler's re-check pulse the options set.
func (o Options) Policy() conditions.Policy {
	return conditions.Policy{Ready: o.ReadyRecheck, NotReady: o.NotReadyRecheck}
}
