// Package vsphere carries out the expiry detector's Changes of vSphere VMs (targets
// VirtualMachine.vsphere.kustos.io, named by instance UUID): a Delete is the quarantine env-cleaner
// does — power off, rename <name>-expired-<date>-<uuid[:8]>, move into the quarantine folder — and a
// ScaleToZero is a power-off. A VM is never destroyed. VMs are not in Git, so there is nothing
// to propose: in PR mode too, the VM pipeline's actuator is this one. Every other Change goes
// to Next, as internal/actuate/helmrelease does with what is not a helm release. Leases and
// States are the VM crawler's reads and sweep of its Keys' state Leases.
package vsphere
