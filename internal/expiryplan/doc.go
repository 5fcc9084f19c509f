// Package expiryplan is `kustos expiry plan`: the expiry detector's decision made offline, from
// a dump of workloads, Namespaces and Kustos's state Leases in YAML or JSON files, with the code
// the controller runs (expiry.SourcesOf, expiry.ParsePolicy, expiry.ParseState, expiry.Decide).
// It answers "when is this environment warned, and when removed?" for every target, before a
// team applies a lifetime or while it wonders why nothing happened yet.
//
// The package owns the command: its flags (the controller's expiry flags, plus -f and --now),
// which objects of the input are targets and which Namespace's metadata applies to each, how a
// state Lease of the dump becomes the target's state and last decision, the output lines, and
// its messages (FILE:LINE errors for input that cannot be used, warnings for expiry metadata
// that cannot be used, as the controller's Events say). The decision itself is the expiry
// package's, and the input format the manifest package's.
package expiryplan
