// Package app wires Kustos together, and holds no behaviour of its own: the options of
// `kustos run` and their validation, and NewManager, which builds the manager with its caches
// (objcache.CacheOptions over the union of the detectors' Watches), the state store and the
// replica's liveness Lease, the base pipeline with the actuator --mode selects (observe, pr:
// actuate/group's Mode, direct), and what the detectors share (the owners' notifier chain with
// the extension server's owner-page links, the Cleaners' target cache) before any detector is
// set up. Each detector then has one setup entry in its own file (quota.go, cleaner.go,
// expiry.go with vsphere.go, inactivity.go) that validates its flags, names its watches and
// cache needs and registers its controllers on its copy of the pipeline, reading only what it
// was given, so that the order of the setups does not matter. Last come the Lease sweeps
// (state's NamespaceSweeper and GoneSweeper). cmd/kustos, the demo and the end-to-end tests all
// start Kustos through it, so they run the same thing.
package app
