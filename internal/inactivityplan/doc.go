// Package inactivityplan is `kustos inactivity plan`: the inactivity detector's decision made
// offline, from a dump of targets, Namespaces, template objects and Kustos's state Leases in YAML
// or JSON files, with activity asked of Prometheus once per source, as the controller's first
// check does. It answers "when is this environment alerted about, and when paused or deleted?"
// for every target, before a team sets a timeout or while it wonders why nothing happened yet.
//
// The package owns the command: its flags (the controller's inactivity flags, plus -f and
// --now), which objects of the input are targets and which Namespace's and template object's
// metadata applies to each, how a state Lease of the dump becomes the target's state, the output
// lines and its messages. The decision is the inactivity package's (ParsePolicy, Running,
// ParseState, Decide), the activity the activity package's (Checker, Tracker, the sources
// file), and the input format the manifest package's.
package inactivityplan
