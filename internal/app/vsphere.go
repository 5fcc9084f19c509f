package app

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/actuate/allow"
	actvsphere "github.com/kustos-dev/kustos/internal/actuate/vsphere"
	"github.com/kustos-dev/kustos/internal/detect/expiry"
	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/orphans"
	"github.com/kustos-dev/kustos/internal/pipeline"
	"github.com/kustos-dev/kustos/internal/state"
	"github.com/kustos-dev/kustos/internal/vsphere"
)

// vmDeletes is the resource of the --allow entry (expiry:delete:…) that lets the expiry detector quarantine VMs.
var vmDeletes = schema.GroupResource{Group: detectvsphere.Group, Resource: "virtualmachines"}

// setupVSphere adds the VM crawler to the expiry detector: its own copy of the expiry pipeline
// (Keys expiry/VirtualMachine.vsphere.kustos.io/…), never proposing (VMs are not in Git): the
// observe actuator in observer mode, the vSphere actuator otherwise.
func setupVSphere(sh *shared, expiryPipeline *pipeline.Pipeline, settings expiry.Settings) error {
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
		Settings: settings, Links: sh.notifiers.NoticeLinks, Interval: o.VSphere.CrawlInterval, Now: o.Now, Log: log,
		Leases: actvsphere.Leases{Store: store}, Finder: vc,
	})
}
