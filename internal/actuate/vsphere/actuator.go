package vsphere

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/metrics"
	"github.com/kustos-dev/kustos/internal/vsphere"
)

// Applier carries out a Change (the pipeline's Actuator); the Actuator hands it what is not a VM.
type Applier interface {
	Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error)
}

// VMs quarantines and powers off VMs by instance UUID (*vsphere.Client).
type VMs interface {
	Quarantine(ctx context.Context, uuid string, at time.Time) (vsphere.Done, error)
	PowerOff(ctx context.Context, uuid string) (vsphere.Done, error)
}

var (
	_ Applier = Actuator{}
	_ VMs     = (*vsphere.Client)(nil)
)

// DeleteResource is the resource --allow-delete names to let the expiry detector quarantine
// VMs: expiry:vsphere.kustos.io/virtualmachines.
const DeleteResource = "vsphere.kustos.io/virtualmachines"

// Actuator quarantines and powers off VMs.
type Actuator struct {
	VMs VMs
	// MayQuarantine is the explicit opt-in (--allow-delete=expiry:vsphere.kustos.io/virtualmachines):
	// without it a due quarantine is refused with lifecycle.ErrDeleteNotAllowed (a
	// DeleteNotAllowed Warning Event) and the VM stays as it is. A power-off needs none.
	MayQuarantine bool
	Next          Applier
	Log           logr.Logger
}

// Apply quarantines or powers off c's VM, or passes c on. The quarantine's new name carries
// decidedAt's date, so a retry renames nothing twice. A VM that no longer exists is done
// (someone else removed it); a failed step is returned (vsphere.StepError) and the pipeline
// tries again later, with nothing after that step done.
func (a Actuator) Apply(ctx context.Context, c lifecycle.Change, decidedAt time.Time, opts lifecycle.ProposeOptions) (lifecycle.Outcome, error) {
	if !detectvsphere.IsVM(c.Target) {
		if a.Next == nil {
			return lifecycle.Outcome{}, fmt.Errorf("%w: %s: no actuator for it", lifecycle.ErrInvalidChange, c.Target)
		}
		return a.Next.Apply(ctx, c, decidedAt, opts)
	}
	uuid := c.Target.Name
	var done vsphere.Done
	var err error
	switch c.Edit.Op {
	case lifecycle.EditDelete:
		if !a.MayQuarantine {
			return lifecycle.Outcome{}, fmt.Errorf("vsphere: quarantine of VM %s: the %s detector may not take VMs out of use (--allow-delete=%s:%s opts in): %w",
				vmName(c), c.Detector, c.Detector, DeleteResource, lifecycle.ErrDeleteNotAllowed)
		}
		done, err = a.VMs.Quarantine(ctx, uuid, decidedAt)
	case lifecycle.EditScaleToZero:
		done, err = a.VMs.PowerOff(ctx, uuid)
	default:
		return lifecycle.Outcome{}, fmt.Errorf("%w: VM %s: only a quarantine (Delete) or a power-off (ScaleToZero) is possible, not %s",
			lifecycle.ErrInvalidChange, vmName(c), c.Edit.Op)
	}
	if errors.Is(err, vsphere.ErrNotFound) {
		a.Log.Info("VM to quarantine no longer exists; nothing to do", "vm", vmName(c), "uuid", uuid)
		return lifecycle.Outcome{}, nil
	}
	var step *vsphere.StepError
	if errors.As(err, &step) {
		metrics.VSphereActionErrors.WithLabelValues(string(step.Step)).Inc()
	}
	if err != nil {
		return lifecycle.Outcome{}, err
	}
	changed := done.PoweredOff || done.Renamed || done.Moved
	if changed && c.Edit.Op == lifecycle.EditDelete {
		metrics.VSphereQuarantined.Inc()
	}
	a.Log.Info("VM "+map[bool]string{true: "quarantined", false: "powered off"}[c.Edit.Op == lifecycle.EditDelete], "vm", vmName(c), "name", done.Name, "uuid", uuid,
		"poweredOff", done.PoweredOff, "renamed", done.Renamed, "moved", done.Moved)
	return lifecycle.Outcome{Applied: changed}, nil
}

// vmName is the VM's name from the Change's evidence, or its UUID.
func vmName(c lifecycle.Change) string {
	if len(c.Evidence) > 0 && c.Evidence[0]["vm"] != "" {
		return fmt.Sprintf("%q (%s)", c.Evidence[0]["vm"], c.Target.Name)
	}
	return c.Target.Name
}
