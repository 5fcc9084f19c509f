package vsphere

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// ErrNotFound: no VM has the instance UUID (destroyed by someone, or in another datacenter).
var ErrNotFound = errors.New("no such VM")

// maxName is the longest VM name vSphere takes.
const maxName = 80

// expiredSuffix matches the suffix a quarantine adds: -expired-<date>-<uuid fragment>, or
// -expired-<date> alone as releases before the fragment wrote it (group 1 the date, group 2
// the fragment, if any).
var expiredSuffix = regexp.MustCompile(`-expired-(\d{4}-\d{2}-\d{2})(?:-([0-9a-f]{8}))?$`)

// uuidFragment is the first 8 hex digits of an instance UUID ("" when it has fewer).
func uuidFragment(uuid string) string {
	f := strings.ToLower(strings.ReplaceAll(uuid, "-", ""))
	if len(f) < 8 {
		return ""
	}
	return f[:8]
}

// QuarantineName is name with -expired-<date>-<uuid[:8]> added: two VMs of the same name
// (labs/team-a/ubuntu and labs/team-b/ubuntu) due the same day get different names, as the
// quarantine folder needs (vCenter's names are unique per folder). The name part is cut so
// that the whole stays within vSphere's 80 characters; the suffix never is. A name that
// already carries this VM's suffix is kept as it is; one with the date alone (a quarantine by
// an earlier release) gets the fragment, keeping its date; one carrying another VM's fragment
// (a clone of a quarantined VM) gets its own suffix after it.
func QuarantineName(name, uuid string, at time.Time) string {
	frag := uuidFragment(uuid)
	date := at.UTC().Format("2006-01-02")
	base := name
	if m := expiredSuffix.FindStringSubmatch(name); m != nil {
		switch m[2] {
		case frag:
			return name
		case "":
			base, date = strings.TrimSuffix(name, m[0]), m[1]
		}
	}
	suffix := "-expired-" + date
	if frag != "" {
		suffix += "-" + frag
	}
	if r := []rune(base); len(r)+len(suffix) > maxName {
		base = string(r[:maxName-len(suffix)])
	}
	return base + suffix
}

// Step is one step of a quarantine.
type Step string

const (
	StepPowerOff Step = "power off"
	StepRename   Step = "rename"
	StepMove     Step = "move"
)

// StepError is a step of a quarantine that failed: the steps after it were not tried.
type StepError struct {
	Step Step
	VM   string
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("vSphere: quarantine of VM %s: %s failed (nothing after it was done; tried again at the next look): %v", e.VM, e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Done says what a Quarantine or PowerOff changed (all false: the VM already was so).
type Done struct {
	PoweredOff, Renamed, Moved bool
	// Name is the VM's name afterwards.
	Name string
}

// Quarantine takes the VM with instance UUID uuid out of use without destroying it: power off
// (waiting for vSphere's task; a failure stops here, nothing is renamed), rename to
// QuarantineName(name, uuid, at), move into the quarantine folder. Each step is skipped when already
// done, so a retry after a failure or a crash finishes the rest; ErrNotFound when no VM has
// the UUID.
func (c *Client) Quarantine(ctx context.Context, uuid string, at time.Time) (Done, error) {
	if c.cfg.QuarantineFolder == "" {
		return Done{}, fmt.Errorf("--vsphere-quarantine-folder is empty: %w", ErrConfig)
	}
	vm, props, d, err := c.powerOff(ctx, uuid)
	if err != nil {
		return d, err
	}
	if name := QuarantineName(props.Name, uuid, at); name != props.Name {
		task, err := vm.Rename(ctx, name)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			return d, &StepError{Step: StepRename, VM: props.Name, Err: err}
		}
		d.Renamed, d.Name = true, name
	}
	vc, _, _, err := c.connect(ctx)
	if err != nil {
		return d, err
	}
	folder, err := find.NewFinder(vc).Folder(ctx, c.quarantinePath())
	if err != nil {
		return d, &StepError{Step: StepMove, VM: d.Name, Err: fmt.Errorf("--vsphere-quarantine-folder=%s: %w", c.cfg.QuarantineFolder, err)}
	}
	if props.Parent == nil || *props.Parent != folder.Reference() {
		task, err := folder.MoveInto(ctx, []types.ManagedObjectReference{vm.Reference()})
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			return d, &StepError{Step: StepMove, VM: d.Name, Err: err}
		}
		d.Moved = true
	}
	return d, nil
}

// PowerOff powers the VM off (a pause): nothing is renamed or moved.
func (c *Client) PowerOff(ctx context.Context, uuid string) (Done, error) {
	_, _, d, err := c.powerOff(ctx, uuid)
	return d, err
}

// powerOff finds the VM and powers it off unless it is off already (waiting for the task).
func (c *Client) powerOff(ctx context.Context, uuid string) (*object.VirtualMachine, mo.VirtualMachine, Done, error) {
	vm, props, err := c.find(ctx, uuid)
	if err != nil {
		return nil, props, Done{}, err
	}
	d := Done{Name: props.Name}
	if props.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOff {
		return vm, props, d, nil
	}
	task, err := vm.PowerOff(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		return vm, props, d, &StepError{Step: StepPowerOff, VM: props.Name, Err: err}
	}
	d.PoweredOff = true
	return vm, props, d, nil
}

// quarantinePath is the quarantine folder's inventory path.
func (c *Client) quarantinePath() string {
	r, err := c.relFolder(c.cfg.QuarantineFolder)
	if err != nil {
		return c.cfg.QuarantineFolder
	}
	return "/" + c.cfg.Datacenter + "/vm/" + r
}

// Exists reports whether the datacenter has a VM with instance UUID uuid (wherever it is:
// a quarantined VM exists).
func (c *Client) Exists(ctx context.Context, uuid string) (bool, error) {
	_, _, err := c.find(ctx, uuid)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// find is the VM with instance UUID uuid in the datacenter, and its name, parent and power state.
func (c *Client) find(ctx context.Context, uuid string) (*object.VirtualMachine, mo.VirtualMachine, error) {
	vc, dc, _, err := c.connect(ctx)
	if err != nil {
		return nil, mo.VirtualMachine{}, err
	}
	ref, err := object.NewSearchIndex(vc).FindByUuid(ctx, dc, uuid, true, types.NewBool(true))
	if err != nil {
		return nil, mo.VirtualMachine{}, fmt.Errorf("vSphere: looking up VM %s: %w", uuid, err)
	}
	if ref == nil {
		return nil, mo.VirtualMachine{}, fmt.Errorf("vSphere: VM with instance UUID %s in datacenter %s: %w", uuid, c.cfg.Datacenter, ErrNotFound)
	}
	vm := object.NewVirtualMachine(vc, ref.Reference())
	var props mo.VirtualMachine
	if err := property.DefaultCollector(vc).RetrieveOne(ctx, vm.Reference(), []string{"name", "parent", "runtime.powerState"}, &props); err != nil {
		return nil, mo.VirtualMachine{}, fmt.Errorf("vSphere: reading VM %s: %w", uuid, err)
	}
	return vm, props, nil
}
