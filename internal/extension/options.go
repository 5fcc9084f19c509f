package extension

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Options are the --extension-* flags.
type Options struct {
	// Addr is --extension-addr (":8443"); URL is --extension-url, the public root of the links.
	Addr, URL string
	// Periods are --extension-periods; Max is --extension-max.
	Periods []string
	Max     time.Duration
	// KeyFile is --extension-key-file: the HMAC key, from a Secret.
	KeyFile string
	// KeySecret is --extension-key-secret (namespace/name), instead of the file: the key is read
	// from that Secret, which Kustos creates once with a random key when it does not exist.
	KeySecret string
	// TrustedProxies is --trusted-proxies: CIDRs of the proxies whose X-Forwarded-For names
	// the client the server rate-limits (empty: none).
	TrustedProxies []string
	// OwnerPageTTL is --owner-page-link-ttl: the longest an owner's page link works after the
	// notice that carries it.
	OwnerPageTTL time.Duration
}

// Validate reports the first --extension-* flag that cannot work.
func (e Options) Validate() error {
	switch {
	case e.Addr != "" && e.URL == "":
		return fmt.Errorf("--extension-addr=%s needs --extension-url, the public address the links start with", e.Addr)
	case e.OwnerPageTTL < 0:
		return fmt.Errorf("--owner-page-link-ttl=%s: must not be negative (0: the default, 14d)", lifecycle.FormatDuration(e.OwnerPageTTL))
	case e.Addr != "" && e.KeyFile == "" && e.KeySecret == "":
		return fmt.Errorf("--extension-addr=%s needs --extension-key-file or --extension-key-secret, the key that signs the links", e.Addr)
	}
	if e.Addr != "" {
		if _, err := ParsePeriods(e.Periods, e.Max); err != nil {
			return fmt.Errorf("--extension-periods: %w", err)
		}
	}
	if _, err := ParseTrustedProxies(e.TrustedProxies); err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	return nil
}

// NewServer builds the server the flags describe, signing with key (read from keyFlag, which
// its error names). store holds the Leases (the API server's, not a cache's); writeBack is
// false in observer mode.
func (e Options) NewServer(key []byte, keyFlag string, store *state.Store, writeBack bool, now func() time.Time, log logr.Logger) (*Server, error) {
	signer, err := NewSigner(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyFlag, err)
	}
	periods, err := ParsePeriods(e.Periods, e.Max)
	if err != nil {
		return nil, fmt.Errorf("--extension-periods: %w", err)
	}
	proxies, err := ParseTrustedProxies(e.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("--trusted-proxies: %w", err)
	}
	return &Server{
		Signer: signer, Periods: periods, Max: e.Max, BaseURL: strings.TrimRight(e.URL, "/"),
		Store:          store,
		Owners:         store,
		WriteBack:      writeBack,
		TrustedProxies: proxies,
		OwnerPageTTL:   e.OwnerPageTTL,
		Now:            now,
		Log:            log,
	}, nil
}
