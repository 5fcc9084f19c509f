// Package conditions owns the root conditions arithmetic of a resource whose work is done by steps
// that each report on it: how the reports of a resource's steps (for a Cleaner: TargetsResolved,
// ConditionsEvaluated, ActionsDone, EventDelivered) become the resource's two root conditions, and
// how often the resource is looked at again.
//
//   - Available is the "last known good": True when every step reported Available=True at one
//     generation, which it carries as its own ObservedGeneration even after the spec moved on.
//   - Ready is Available at the current spec generation. It turns False on every spec change and
//     is what the re-check policy (Policy: 10s while not Ready, 30min while Ready) looks at.
//
// Root holds the arithmetic: it takes step Reports (Accept), keeps each step's last accepted
// report, applies five rules (each cited by its number where it is implemented), renders the result
// as []metav1.Condition (SetConditions) and is rebuilt from them (FromConditions), so a controller
// keeps no state of its own: load, accept the new reports, write back. Policy says when to look
// again. The rules:
//
//  1. A step's report is accepted only at the same or a newer generation than the step's last
//     accepted one: an older report never replaces a newer one's data (and one newer than the
//     spec is invalid).
//  2. A report of Available=Unknown (work in progress) is discarded: it neither replaces the
//     step's last report nor moves its last report time; it is kept only in a trace.
//  3. Available turns True only when every step reports Available=True at one generation (which
//     may be older than the spec's, while a newer one is reconciled).
//  4. Available turns False only when a step reports False at Available's own generation; a
//     False at another generation leaves the last known good generation Available.
//  5. Ready turns False on every spec change, since the new generation has no step's report yet.
//
// Why a package of its own: the rules are subtle (two generations, transitions that depend on which
// generation a report is at) and worth a table test per use case, and they are shared by every
// controller that reports step conditions. It is pure — no clock (times are parameters), no client,
// no I/O — and imports nothing of ours, only the standard library and k8s.io/apimachinery, so
// anything may depend on it.
package conditions
