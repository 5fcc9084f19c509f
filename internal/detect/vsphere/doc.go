// Package vsphere is the expiry detector's second environment type: vSphere virtual machines (as in
// env-cleaner). It decides nothing of its own: every VM of the crawled folders is an expiry target
// (detector expiry, Target VirtualMachine.vsphere.kustos.io named by the VM's instance UUID), and
// expiry.Decide schedules its warning, its extension and its removal, which for a VM is a
// quarantine (power off, rename, move; internal/actuate/vsphere carries it out).
//
// What this package adds is where a VM's lifetime comes from. The owner and the lifetime are
// in the VM's notes (EC_OWNER, EC_TTL), which a snapshot rollback resets; so on first sight
// they are kept in the target's Lease (expiry.State.Kept) with the time the lifetime counts
// from (the VM's creation date, or when Kustos first saw it), and a rollback that clears the
// notes changes nothing. Notes that say something else later win: a human edited them. A VM
// with neither notes nor kept state is an orphan, reported and never touched.
//
// The Controller is a leader-elected manager Runnable: it crawls every interval (sooner when a
// VM's schedule asks) and hands each VM's lifecycle.Request to the expiry pipeline. Options
// are its --enable-vsphere, --vsphere-* flags and their Validate.
package vsphere
