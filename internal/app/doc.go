// Package app wires Kustos together, and holds no behaviour of its own: the options of
// `kustos run` (each detector's own Options, validated by their packages: ephemeral's,
// expiry's, inactivity's, detect/vsphere's, group's, gate's, extension's, admission's; notify's
// ChainConfig for the owners' channels; the quota flags still here) and NewManager, which
// reads top to bottom as named steps: newManagerFor builds the manager with its caches
// (objcache.CheckServed first, then objcache.CacheOptions over the union of the detectors'
// Watches, objcache.PlanTargets saying which kinds the Cleaners' target cache holds), newShared the admission webhook, the state
// store, the replica's liveness Lease and the base pipeline, setMode the actuator --mode
// selects (observe, pr: actuate/group's Mode, direct), addDetectorsShare what the detectors
// share (extension.Channels: the owners' notifier chain with the extension server's links, the
// Cleaners' target cache) before any detector is set up. Each detector then has one setup
// entry in its own file (quota.go, cleaner.go, expiry.go with vsphere.go, inactivity.go) that
// registers its controllers on its copy of the pipeline, reading only what it was given, so
// that the order of the setups does not matter. Last come the Lease sweeps (addSweepers:
// state's NamespaceSweeper and GoneSweeper). cmd/kustos, the demo and the end-to-end tests all
// start Kustos through it, so they run the same thing.
package app
