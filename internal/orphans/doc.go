// Package orphans owns the orphan report: the objects the expiry detector leaves alone for want
// of an owner or a lifetime, or for metadata it cannot use. List finds them among the
// Namespaces and the lifecycle kinds with the detector's own lookup; SaveVMs and VMs keep and
// read the vSphere crawl's orphans in a Lease of the state namespace (VMReport is the crawl's
// OrphanReport); Digest mails the report to the administrators. `kustos status --orphans`
// (package statusreport) prints it, and the controller (package app) runs the crawl's report
// and the digest, so both import this package and neither imports the other.
package orphans
