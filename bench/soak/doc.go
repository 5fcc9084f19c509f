// Command soak is a randomized soak of the whole system, run by `make soak`: the real control
// plane, two Kustos replicas with leader election in PR mode with auto-merge against the
// GitHub-compatible test server, a seeded random workload and seeded random faults, and
// invariants checked all along from outside Kustos. Any violation fails the run.
package main
