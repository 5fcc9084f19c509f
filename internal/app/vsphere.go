package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	actvsphere "github.com/kustos-dev/kustos/internal/actuate/vsphere"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/orphans"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
	"github.com/kustos-dev/kustos/internal/vsphere"
)

// VSphereOptions are the --vsphere-* flags: vSphere VMs as expiry targets.
type VSphereOptions struct {
	// Enabled is --enable-vsphere (needs --enable-expiry: VMs are its targets).
	Enabled bool
	// Config is --vsphere-url, --vsphere-credentials-file, --vsphere-ca-file,
	// --vsphere-insecure, --vsphere-datacenter, --vsphere-folders,
	// --vsphere-quarantine-folder and --vsphere-ignore.
	Config vsphere.Config
	// CrawlInterval is --vsphere-crawl-interval.
	CrawlInterval time.Duration
}

// vmDeletes is the resource of the --allow entry (expiry:delete:…) that lets the expiry detector quarantine VMs.
var vmDeletes = schema.GroupResource{Group: detectvsphere.Group, Resource: "virtualmachines"}

func (v VSphereOptions) validate(o Options) error {
	if !v.Enabled {
		return nil
	}
	c := v.Config
	switch {
	case !o.Expiry.Enabled:
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
	case v.CrawlInterval <= 0:
		return fmt.Errorf("--vsphere-crawl-interval=%s: must be positive", lifecycle.FormatDuration(v.CrawlInterval))
	case o.Mode != ModeObserve && strings.Trim(strings.TrimSpace(c.QuarantineFolder), "/") == "":
		return fmt.Errorf("--mode=%s with --enable-vsphere needs --vsphere-quarantine-folder: expired VMs are moved there (Kustos never destroys a VM)", o.Mode)
	}
	if _, err := vsphere.New(c, vsphere.Credentials{}); err != nil {
		return err
	}
	return nil
}

// setupVSphere adds the VM crawler to the expiry detector: its own copy of the expiry pipeline
// (Keys expiry/VirtualMachine.vsphere.kustos.io/…), never proposing (VMs are not in Git): the
// observe actuator in observer mode, the vSphere actuator otherwise.
func setupVSphere(sh *shared, expiryPipeline *pipeline.Pipeline, settings expiry.Settings,
	links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error)) error {
	o, mgr := sh.o, sh.mgr
	creds, err := vsphere.ReadCredentials(o.VSphere.Config.CredentialsFile)
	if err != nil {
		return err
	}
	vc, err := vsphere.New(o.VSphere.Config, creds)
	if err != nil {
		return err
	}
	log := o.Log.WithName("vsphere")
	pl := *expiryPipeline
	pl.Proposals, pl.PollInterval = nil, 0
	pl.Log = o.Log.WithName("pipeline").WithValues("detector", expiry.DetectorName, "environments", "vsphere")
	if o.Mode == ModeObserve {
		pl.Actuator = sh.recorder // what reports is what observes
	} else {
		pl.Actuator = actvsphere.Actuator{VMs: vc, MayQuarantine: o.Allow.Allows(expiry.DetectorName, allow.VerbDelete, vmDeletes), Log: log}
	}
	store := &state.Store{Reader: mgr.GetClient(), Writer: mgr.GetClient(), Namespace: o.StateNamespace, Identity: pl.Identity}
	return mgr.Add(&detectvsphere.Controller{
		Crawler: vc, State: actvsphere.States{Store: store}, Pipeline: &pl, Reporter: sh.recorder,
		Orphans:  orphans.VMReport{R: mgr.GetAPIReader(), W: mgr.GetClient(), Namespace: o.StateNamespace},
		Settings: settings, Links: links, Interval: o.VSphere.CrawlInterval, Now: o.Now, Log: log,
		Leases: actvsphere.Leases{Store: store}, Finder: vc,
	})
}
