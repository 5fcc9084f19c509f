// Package app wires Kustos together: the manager with its trimmed caches (the union of the
// detectors' Watches), the detectors, the change pipeline with the actuator --mode selects
// (observe, pr, direct), the state store, the replica's liveness Lease and the Lease sweep. cmd/kustos, the demo and the end-to-end tests
// all start Kustos through it, so they run the same thing.
package app
