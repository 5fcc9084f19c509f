// Package vsphere is Kustos's connection to VMware vSphere, for virtual machines that expire like
// any other environment (env-cleaner's second environment type). It holds no decision: the expiry
// detector decides (internal/detect/vsphere builds its snapshot), and this package does the I/O
// through govmomi, the vSphere API's Go client.
//
//   - Connect logs in with a username and password read from a mounted Secret, trusting a CA
//     file or, explicitly, no certificate check at all.
//   - Crawl lists the VMs of some folders of one datacenter with a single property-collector
//     request per crawl (name, instance UUID, notes, creation date, power state and every
//     folder's name and parent, from which each VM's folder path is built), not one per VM.
//   - ParseNotes reads the lifetime a VM's notes carry, one KEY=value a line (EC_OWNER, EC_TTL
//     or kustos.io/owner, kustos.io/ttl), and says precisely what is wrong with a line.
//   - Quarantine powers a VM off (waiting for the task), renames it <name>-expired-<date>-<uuid[:8]> and
//     moves it into the quarantine folder. It never destroys a VM, and every step is
//     idempotent: a retry after a failure or a crash finishes what is left.
package vsphere
