package expiry

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Options configure the expiry detector (owners and lifetimes on workloads and Namespaces);
// every field is a flag of `kustos run`. The owners' channels it notifies through, and the
// extension server, are notify's and extension's.
type Options struct {
	// Enabled is --enable-expiry.
	Enabled bool
	// Kinds are --lifecycle-kinds (Namespaces are always watched).
	Kinds []schema.GroupVersionKind
	// Settings: --default-ttl, --expiry-warning-before, --notification-interval, the owners
	// file (--expiry-owners). CarriesOut and Mail are derived from the mode and the notifiers.
	Settings Settings
	// AdminEmail receives the orphan digest every DigestInterval (needs mail).
	AdminEmail     string
	DigestInterval time.Duration
	// HelmReleases is --expiry-helm-releases: helm releases with ec_owner/ec_ttl values expire
	// too (reads helm's release Secrets; uninstalling needs delete on what the releases hold).
	HelmReleases bool
}

// Validate reports the first option that cannot work, naming it as a flag; mail says whether
// --notify-mail-host is set (the orphan digest goes by mail).
func (o Options) Validate(mail bool) error {
	s := o.Settings
	switch {
	case s.DefaultTTL < 0:
		return fmt.Errorf("--default-ttl=%s: must not be negative", lifecycle.FormatDuration(s.DefaultTTL))
	case s.WarningBefore < 0:
		return fmt.Errorf("--expiry-warning-before=%s: must not be negative", lifecycle.FormatDuration(s.WarningBefore))
	case s.NotificationInterval < 0:
		return fmt.Errorf("--notification-interval=%s: must not be negative", lifecycle.FormatDuration(s.NotificationInterval))
	case o.AdminEmail != "" && !mail:
		return fmt.Errorf("--admin-email=%s needs --notify-mail-host: the orphan digest goes by mail", o.AdminEmail)
	case o.AdminEmail != "" && o.DigestInterval <= 0:
		return fmt.Errorf("--orphan-digest-interval=%s: must be positive", lifecycle.FormatDuration(o.DigestInterval))
	}
	return nil
}

// SettingsFor are the Settings the detector decides with: the flags', with what the mode
// (carriesOut: pr or direct) and the notifiers (mail: owners need an address) derive.
func (o Options) SettingsFor(carriesOut, mail bool) Settings {
	s := o.Settings
	s.CarriesOut = carriesOut
	if mail {
		s.Mail = true
	}
	return s
}

// CacheWatches are what the detector adds to the manager's caches when it is on: Watches, and
// with HelmReleases helm's release Secrets, by their owner label, with their name label.
func (o Options) CacheWatches() []lifecycle.Watches {
	if !o.Enabled {
		return nil
	}
	w := Watches()
	if o.HelmReleases {
		w.SecretLabels = map[string]string{HelmOwnerLabel: HelmOwnerValue}
		w.MetadataLabels = append(w.MetadataLabels, HelmOwnerLabel, HelmNameLabel)
	}
	return []lifecycle.Watches{w}
}
