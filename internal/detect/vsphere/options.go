package vsphere

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/vsphere"
)

// Options are the --vsphere-* flags: vSphere VMs as expiry targets.
type Options struct {
	// Enabled is --enable-vsphere (needs --enable-expiry: VMs are its targets).
	Enabled bool
	// Config is --vsphere-url, --vsphere-credentials-file, --vsphere-ca-file,
	// --vsphere-insecure, --vsphere-datacenter, --vsphere-folders,
	// --vsphere-quarantine-folder and --vsphere-ignore.
	Config vsphere.Config
	// CrawlInterval is --vsphere-crawl-interval.
	CrawlInterval time.Duration
}

// Validate reports the first option that cannot work, naming it as a flag. expiry is
// --enable-expiry; mode is --mode, whose carriesOut (pr, direct) quarantines VMs.
func (o Options) Validate(expiry bool, mode string, carriesOut bool) error {
	if !o.Enabled {
		return nil
	}
	c := o.Config
	switch {
	case !expiry:
		return errors.New("--enable-vsphere needs --enable-expiry: VMs expire like the expiry detector's other targets")
	case c.URL == "":
		return errors.New("--enable-vsphere needs --vsphere-url, the vCenter's address")
	case c.CredentialsFile == "":
		return errors.New("--enable-vsphere needs --vsphere-credentials-file, the mounted Secret with the vSphere username and password")
	case c.Datacenter == "":
		return errors.New("--enable-vsphere needs --vsphere-datacenter")
	case len(c.Folders) == 0:
		return errors.New("--enable-vsphere needs --vsphere-folders, the VM folders to crawl")
	case c.Insecure && c.CAFile != "":
		return errors.New("--vsphere-insecure and --vsphere-ca-file: choose one (a CA file checks the certificate, insecure checks nothing)")
	case o.CrawlInterval <= 0:
		return fmt.Errorf("--vsphere-crawl-interval=%s: must be positive", lifecycle.FormatDuration(o.CrawlInterval))
	case carriesOut && strings.Trim(strings.TrimSpace(c.QuarantineFolder), "/") == "":
		return fmt.Errorf("--mode=%s with --enable-vsphere needs --vsphere-quarantine-folder: expired VMs are moved there (Kustos never destroys a VM)", mode)
	}
	if _, err := vsphere.New(c, vsphere.Credentials{}); err != nil {
		return err
	}
	return nil
}
