// Package cleanerwatch is how the control-plane benchmarks (bench/cleaners, bench/wholecluster)
// see Kustos evaluate Cleaners: one list+watch of every Cleaner, started before Kustos, that
// timestamps per Cleaner when a status with lastEvaluation and when one with
// lastEvaluation.due=true was first delivered, and counts the status writes.
package cleanerwatch
