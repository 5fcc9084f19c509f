package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

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
func setupVSphere(mgr ctrl.Manager, o Options, expiryPipeline *pipeline.Pipeline, rep expiry.Reporter, settings expiry.Settings,
	links func(lifecycle.Key, time.Time, time.Time) ([]lifecycle.NoticeLink, error)) error {
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
		// The observe recorder is both: what reports is what observes.
		observer, ok := expiryPipeline.Reporter.(pipeline.Actuator)
		if !ok {
			return fmt.Errorf("vsphere: the expiry pipeline's reporter %T cannot carry out Changes in observer mode", expiryPipeline.Reporter)
		}
		pl.Actuator = observer
	} else {
		pl.Actuator = actvsphere.Actuator{VMs: vc, MayQuarantine: o.Allow.Allows(expiry.DetectorName, allow.VerbDelete, vmDeletes), Log: log}
	}
	store := &state.Store{Reader: mgr.GetClient(), Writer: mgr.GetClient(), Namespace: o.StateNamespace, Identity: pl.Identity}
	return mgr.Add(&detectvsphere.Controller{
		Crawler: vc, State: expiryStates{store}, Pipeline: &pl, Reporter: rep,
		Orphans:  orphans.VMReport{R: mgr.GetAPIReader(), W: mgr.GetClient(), Namespace: o.StateNamespace},
		Settings: settings, Links: links, Interval: o.VSphere.CrawlInterval, Now: o.Now, Log: log,
		Leases: vmLeases{store}, Finder: vc,
	})
}

// vmLeases sweeps the state Leases of VM Keys (the gone-sweeper of cleaner.go leaves them to
// the VM crawler, which alone can tell that a VM is gone).
type vmLeases struct{ store *state.Store }

var _ detectvsphere.VMLeases = vmLeases{}

func (v vmLeases) SweepVMs(ctx context.Context, gone func(ctx context.Context, uuid string) (bool, error)) (int, error) {
	kindGroup := strings.ToLower(detectvsphere.Kind + "." + detectvsphere.Group)
	return v.store.SweepGone(ctx, func(ctx context.Context, rec state.Record) (bool, error) {
		p, ok := rec.Key.Parts()
		if !ok || p.Detector != expiry.DetectorName || strings.ToLower(p.KindGroup) != kindGroup || p.Namespace != "" || p.Name == "" {
			return false, nil
		}
		return gone(ctx, p.Name)
	})
}

// expiryStates reads the expiry state of a Key from its Lease.
type expiryStates struct{ store *state.Store }

var _ detectvsphere.StateReader = expiryStates{}

func (s expiryStates) ExpiryState(ctx context.Context, key lifecycle.Key) (expiry.State, bool, error) {
	rec, err := s.store.Get(ctx, key)
	if err != nil {
		return expiry.State{}, false, err
	}
	st, _ := expiry.ParseState(rec.Bag)
	return st, rec.Exists(), nil
}
