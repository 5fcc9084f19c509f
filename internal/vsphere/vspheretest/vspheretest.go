// Package vspheretest runs govmomi's vSphere simulator (vcsim, an implementation of the vSphere
// API in the test process) for Kustos's tests and demo, with the few things they need that
// vcsim does not do by itself: a snapshot rollback that restores the notes (vCenter restores a
// VM's configuration, notes included; vcsim restores only its data), and a power-off that fails.
package vspheretest

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Datacenter is the simulator's datacenter.
const Datacenter = "DC0"

// TB is what the simulator needs of a test (a *testing.T, or the demo's stand-in).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// Sim is a running simulator and a client to arrange its inventory.
type Sim struct {
	Model *simulator.Model
	// URL is the vCenter's URL without credentials; CredentialsFile holds them (two lines).
	URL             string
	CredentialsFile string
	Client          *vim25.Client
	server          *simulator.Server
	t               TB
}

// Start runs a simulator with one datacenter (DC0) and no VMs; it stops with the test.
func Start(t TB) *Sim {
	t.Helper()
	m := simulator.VPX()
	m.Machine = 0
	if err := m.Create(); err != nil {
		t.Fatalf("%v", err)
	}
	m.Service.TLS = new(tls.Config) // https, as a vCenter: the CA-file path is the one tested
	s := m.Service.NewServer()
	sim := &Sim{Model: m, server: s, t: t}
	t.Cleanup(func() { s.Close(); m.Remove() })
	u := *s.URL
	pass, _ := u.User.Password()
	user := u.User.Username()
	u.User = nil
	sim.URL = u.String()
	sim.CredentialsFile = filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(sim.CredentialsFile, []byte(user+"\n"+pass+"\n"), 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	ctx := context.Background()
	c, err := vim25.NewClient(ctx, soap.NewClient(s.URL, true))
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := session.NewManager(c).Login(ctx, s.URL.User); err != nil {
		t.Fatalf("%v", err)
	}
	sim.Client = c
	return sim
}

// CAFile writes the simulator's certificate to a PEM file (for --vsphere-ca-file).
func (s *Sim) CAFile() string {
	f, err := s.server.CertificateFile()
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	return f
}

// Folder makes the folder path below the datacenter's VM folder ("ci/agents"), and its parents.
func (s *Sim) Folder(path string) *object.Folder {
	s.t.Helper()
	ctx := context.Background()
	f, err := find.NewFinder(s.Client).Folder(ctx, "/"+Datacenter+"/vm")
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	cur := "/" + Datacenter + "/vm"
	for _, name := range strings.Split(path, "/") {
		cur += "/" + name
		if next, err := find.NewFinder(s.Client).Folder(ctx, cur); err == nil {
			f = next
			continue
		}
		if f, err = f.CreateFolder(ctx, name); err != nil {
			s.t.Fatalf("%v", err)
		}
	}
	return f
}

// VM makes a powered-on VM called name in folder (below the VM folder) with notes, and returns
// it with its instance UUID (lower case).
func (s *Sim) VM(folder, name, notes string) (*object.VirtualMachine, string) {
	s.t.Helper()
	ctx := context.Background()
	f := s.Folder(folder)
	pool, err := find.NewFinder(s.Client).ResourcePool(ctx, "/"+Datacenter+"/host/DC0_C0/Resources")
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	spec := types.VirtualMachineConfigSpec{Name: name, GuestId: string(types.VirtualMachineGuestOsIdentifierOtherGuest64),
		Annotation: notes, Files: &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"}}
	task, err := f.CreateVM(ctx, spec, pool, nil)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	vm := object.NewVirtualMachine(s.Client, info.Result.(types.ManagedObjectReference))
	if t, err := vm.PowerOn(ctx); err != nil || t.Wait(ctx) != nil {
		s.t.Fatalf("powering on %s: %v", name, err)
	}
	var props mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config.instanceUuid"}, &props); err != nil {
		s.t.Fatalf("%v", err)
	}
	return vm, strings.ToLower(props.Config.InstanceUuid)
}

// SetNotes replaces a VM's notes, as its owner does in the vSphere client.
func (s *Sim) SetNotes(vm *object.VirtualMachine, notes string) {
	s.t.Helper()
	ctx := context.Background()
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{Annotation: notes})
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		s.t.Fatalf("%v", err)
	}
}

// Props reads a VM's name, folder path, power state and notes.
func (s *Sim) Props(vm *object.VirtualMachine) (name, folder, power, notes string) {
	s.t.Helper()
	ctx := context.Background()
	var p mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"name", "parent", "runtime.powerState", "config.annotation"}, &p); err != nil {
		s.t.Fatalf("%v", err)
	}
	el, err := find.NewFinder(s.Client).Element(ctx, *p.Parent)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	if p.Config != nil { // empty notes come back as no property at all
		notes = p.Config.Annotation
	}
	return p.Name, el.Path, string(p.Runtime.PowerState), notes
}

// Snapshot takes a snapshot of vm called name.
func (s *Sim) Snapshot(vm *object.VirtualMachine, name string) {
	s.t.Helper()
	ctx := context.Background()
	task, err := vm.CreateSnapshot(ctx, name, "", false, false)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	ref := info.Result.(types.ManagedObjectReference)
	snap := s.Model.Map().Get(ref).(*simulator.VirtualMachineSnapshot)
	s.Model.Map().Put(&restoringSnapshot{snap})
}

// Revert rolls vm back to its snapshot called name: as on vCenter, its notes become the
// snapshot's.
func (s *Sim) Revert(vm *object.VirtualMachine, name string) {
	s.t.Helper()
	ctx := context.Background()
	task, err := vm.RevertToSnapshot(ctx, name, true)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		s.t.Fatalf("%v", err)
	}
}

// restoringSnapshot restores the VM's notes on revert, as vCenter does (vcsim restores only
// the data sets).
type restoringSnapshot struct {
	*simulator.VirtualMachineSnapshot
}

func (v *restoringSnapshot) RevertToSnapshotTask(ctx *simulator.Context, req *types.RevertToSnapshot_Task) soap.HasFault {
	vm := ctx.Map.Get(v.Vm).(*simulator.VirtualMachine)
	notes := v.Config.Annotation
	ctx.WithLock(vm, func() {
		vm.Config.Annotation = notes
		ctx.Update(vm, []types.PropertyChange{{Name: "config.annotation", Val: notes}})
	})
	return v.VirtualMachineSnapshot.RevertToSnapshotTask(ctx, req)
}

// FailPowerOff makes every power-off of the VM called name fail with an InvalidState fault
// (vcsim's fault injection; a VM busy with another task answers so); the returned function
// makes it work again.
func (s *Sim) FailPowerOff(name string) (restore func()) {
	rule := &simulator.FaultInjectionRule{MethodName: "PowerOffVM_Task", ObjectType: "VirtualMachine", ObjectName: name,
		Probability: 1, FaultType: simulator.FaultTypeInvalidState, Message: "the VM is busy with another task", Enabled: true}
	s.Model.Service.AddFaultRule(rule)
	return func() { s.Model.Service.ClearFaultRules() }
}
