// Package conditions owns seed 002's root conditions arithmetic ("Sentinel pulses, adapter
// behavior and API resource status"): how the reports of a resource's steps (the seed's
// adapters; for a Cleaner: TargetsResolved, ConditionsEvaluated, ActionsDone, EventDelivered)
// become the resource's two root conditions, and how often the resource is looked at again.
//
//   - Available is the "last known good": True when every step reported Available=True at one
//     generation, which it carries as its own ObservedGeneration even after the spec moved on.
//   - Ready is Available at the current spec generation. It turns False on every spec change and
//     is what the re-check policy (the seed's sentinel TTLs) looks at.
//
// Root holds the arithmetic: it takes step Reports (Accept), keeps each step's last accepted
// report, applies the seed's API rules 1–5 (each cited where it is implemented), renders the
// result as []metav1.Condition (SetConditions) and is rebuilt from them (FromConditions), so a
// controller keeps no state of its own: load, accept the new reports, write back. Policy says
// when to look again.
//
// Why a package of its own: the rules are subtle (two generations, transitions that depend on
// which generation a report is at) and worth a table test per seed use case, and they are
// shared by every controller that reports step conditions. It is pure — no clock (times are
// parameters), no client, no I/O — and imports nothing of ours, only the standard library and
// k8s.io/apimachinery, so anything may depend on it.
package conditions
