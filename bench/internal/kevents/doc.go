// Package kevents is how the control-plane benchmarks (bench/expiry, bench/wholecluster) see the
// Events Kustos writes: one list+watch of source.component "kustos" in all namespaces, started
// before Kustos, that timestamps when each Event was delivered, by the kind, namespace/name and
// reason of the object it is about.
package kevents
