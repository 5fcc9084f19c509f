// Package app wires Kustos together: the manager with its trimmed caches, the detectors, the
// actuator, the state store and the Lease sweep. cmd/kustos, the demo and the end-to-end tests
// all start Kustos through it, so they run the same thing.
package app
