package vsphere

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/types"
)

// VM is what a crawl reads of one virtual machine.
type VM struct {
	// UUID is the instance UUID (config.instanceUuid), lower case: vCenter's own key for a VM,
	// unchanged by a rename, a move or a snapshot rollback.
	UUID string
	Name string
	// Folder is the VM's folder below the datacenter's VM folder ("ci/agents"; "" for the VM
	// folder itself); Path its inventory path ("/DC0/vm/ci/agents/build-42").
	Folder, Path string
	Datacenter   string
	Notes        string
	// Created is config.createDate (zero when vSphere does not say: VMs made before 6.7).
	Created    time.Time
	PowerState string
	Ref        types.ManagedObjectReference
}

// Crawl is one crawl's result.
type Crawl struct {
	// VMs are the VMs of the configured folders, minus the ignored ones and those in the
	// quarantine folder, sorted by path.
	VMs []VM
	// Ignored counts the VMs --vsphere-ignore names (by name or folder).
	Ignored int
	// Skipped are the VMs that could not be read (no instance UUID yet: being created), by path.
	Skipped []string
}

// vmProps are the properties a crawl reads of each VM; folderProps of each folder.
var (
	vmProps     = []string{"name", "parent", "config.instanceUuid", "config.annotation", "config.createDate", "config.template", "runtime.powerState"}
	folderProps = []string{"name", "parent"}
)

// Crawl lists the VMs of the configured folders with one property-collector request: a
// container view over the datacenter's VM folder, from which the collector returns every
// folder's name and parent and the VM properties above. Folder paths are built from those. A
// configured folder or quarantine folder that does not exist fails the crawl (ErrConfig).
func (c *Client) Crawl(ctx context.Context) (Crawl, error) {
	vc, _, vmf, err := c.connect(ctx)
	if err != nil {
		return Crawl{}, err
	}
	folders, err := c.relFolders(c.cfg.Folders)
	if err != nil {
		return Crawl{}, err
	}
	quarantine, err := c.relFolder(c.cfg.QuarantineFolder)
	if err != nil && c.cfg.QuarantineFolder != "" {
		return Crawl{}, err
	}
	v, err := view.NewManager(vc).CreateContainerView(ctx, vmf.Reference(), []string{"Folder", "VirtualMachine"}, true)
	if err != nil {
		return Crawl{}, fmt.Errorf("vSphere: creating a view of %s: %w", vmf.InventoryPath, err)
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	req := types.RetrieveProperties{SpecSet: []types.PropertyFilterSpec{{
		ObjectSet: []types.ObjectSpec{{Obj: v.Reference(), Skip: types.NewBool(true),
			SelectSet: []types.BaseSelectionSpec{&types.TraversalSpec{Type: "ContainerView", Path: "view"}}}},
		PropSet: []types.PropertySpec{{Type: "Folder", PathSet: folderProps}, {Type: "VirtualMachine", PathSet: vmProps}},
	}}}
	res, err := property.DefaultCollector(vc).RetrieveProperties(ctx, req)
	if err != nil {
		return Crawl{}, fmt.Errorf("vSphere: reading the VMs of datacenter %s: %w", c.cfg.Datacenter, err)
	}

	type node struct {
		name   string
		parent types.ManagedObjectReference
	}
	nodes := map[types.ManagedObjectReference]node{}
	var vms []types.ObjectContent
	for _, oc := range res.Returnval {
		if oc.Obj.Type == "VirtualMachine" {
			vms = append(vms, oc)
			continue
		}
		var n node
		for _, p := range oc.PropSet {
			switch p.Name {
			case "name":
				n.name, _ = p.Val.(string)
			case "parent":
				if r, ok := p.Val.(types.ManagedObjectReference); ok {
					n.parent = r
				}
			}
		}
		nodes[oc.Obj] = n
	}
	root := vmf.Reference()
	folderPath := func(ref types.ManagedObjectReference) (string, bool) {
		var parts []string
		for i := 0; i < 256 && ref != root; i++ {
			n, ok := nodes[ref]
			if !ok {
				return "", false
			}
			parts = append(parts, n.name)
			ref = n.parent
		}
		if ref != root {
			return "", false
		}
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		return strings.Join(parts, "/"), true
	}
	// A configured folder that does not exist is a configuration error, not an empty folder:
	// the crawl fails (counted in kustos_vsphere_crawl_errors_total) and no VM's state changes.
	exists := map[string]bool{"": true}
	for ref := range nodes {
		if p, ok := folderPath(ref); ok {
			exists[p] = true
		}
	}
	for i, f := range folders {
		if !exists[f] {
			return Crawl{}, fmt.Errorf("--vsphere-folders: folder %q (%s) does not exist in datacenter %s: %w", c.cfg.Folders[i], path.Join(vmf.InventoryPath, f), c.cfg.Datacenter, ErrConfig)
		}
	}
	if c.cfg.QuarantineFolder != "" && !exists[quarantine] {
		return Crawl{}, fmt.Errorf("--vsphere-quarantine-folder: folder %q (%s) does not exist in datacenter %s: %w", c.cfg.QuarantineFolder, path.Join(vmf.InventoryPath, quarantine), c.cfg.Datacenter, ErrConfig)
	}
	var out Crawl
	for _, oc := range vms {
		vm := VM{Ref: oc.Obj, Datacenter: c.cfg.Datacenter}
		var parent types.ManagedObjectReference
		template := false
		for _, p := range oc.PropSet {
			switch p.Name {
			case "name":
				vm.Name, _ = p.Val.(string)
			case "parent":
				parent, _ = p.Val.(types.ManagedObjectReference)
			case "config.instanceUuid":
				s, _ := p.Val.(string)
				vm.UUID = strings.ToLower(s)
			case "config.annotation":
				vm.Notes, _ = p.Val.(string)
			case "config.createDate":
				if t, ok := p.Val.(time.Time); ok {
					vm.Created = t.UTC()
				}
			case "config.template":
				template, _ = p.Val.(bool)
			case "runtime.powerState":
				if s, ok := p.Val.(types.VirtualMachinePowerState); ok {
					vm.PowerState = string(s)
				}
			}
		}
		if template {
			continue // a template is no environment
		}
		folder, ok := folderPath(parent)
		if !ok {
			continue // in a vApp, or outside the view: not in a crawled folder
		}
		vm.Folder = folder
		vm.Path = path.Join(vmf.InventoryPath, folder, vm.Name)
		if !under(folder, folders) || c.cfg.QuarantineFolder != "" && under(folder, []string{quarantine}) {
			continue
		}
		if ignored(vm, c.ignore()) {
			out.Ignored++
			continue
		}
		if vm.UUID == "" {
			out.Skipped = append(out.Skipped, vm.Path)
			continue
		}
		out.VMs = append(out.VMs, vm)
	}
	sort.Slice(out.VMs, func(i, j int) bool { return out.VMs[i].Path < out.VMs[j].Path })
	return out, nil
}

// ignore is --vsphere-ignore, folder paths made relative.
func (c *Client) ignore() []string {
	out := make([]string, 0, len(c.cfg.Ignore))
	for _, s := range c.cfg.Ignore {
		if r, err := c.relFolder(s); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// ignored: the VM's name is one of ignore, or its folder is one of them or below one.
func ignored(vm VM, ignore []string) bool {
	for _, s := range ignore {
		if s == vm.Name || (s != "" && under(vm.Folder, []string{s})) {
			return true
		}
	}
	return false
}

// under reports whether folder is one of roots or below one ("" is the whole VM folder).
func under(folder string, roots []string) bool {
	for _, r := range roots {
		if r == "" || folder == r || strings.HasPrefix(folder, r+"/") {
			return true
		}
	}
	return false
}

// relFolders makes every folder relative to the datacenter's VM folder.
func (c *Client) relFolders(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, f := range in {
		r, err := c.relFolder(f)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// relFolder is a folder path relative to the datacenter's VM folder: "ci/agents" stays, and
// "/DC0/vm/ci/agents" loses its "/DC0/vm".
func (c *Client) relFolder(f string) (string, error) {
	f = strings.TrimSpace(f)
	if !strings.HasPrefix(f, "/") {
		return strings.Trim(path.Clean("/"+f), "/"), nil
	}
	prefix := "/" + c.cfg.Datacenter + "/vm"
	clean := path.Clean(f)
	if clean != prefix && !strings.HasPrefix(clean, prefix+"/") {
		return "", fmt.Errorf("folder %q is not in datacenter %s's VM folder (%s): %w", f, c.cfg.Datacenter, prefix, ErrConfig)
	}
	return strings.Trim(strings.TrimPrefix(clean, prefix), "/"), nil
}
