// Package expiry is the detector of environments with a lifetime, after env-cleaner's TTL and owner
// metadata and CrownLabs' instance expiration: every workload of a lifecycle kind, Namespace and
// helm release may name an owner and a lifetime; its owner is warned before the deadline, and at
// the deadline — never less than the notification interval after the warning was actually sent — it
// is removed (or paused) through the change pipeline: a pull request for what Git defines, a direct
// deletion for what it does not, an Event in observer mode.
//
// The package owns the decision: ParsePolicy reads the metadata (object, then namespace, then
// the default TTL) and says precisely what it cannot use; Decide is a pure function from a
// Snapshot (policy, the Lease's state, now) to what happens next and when. The lifetime lives
// where the environment is declared and the state in the target's Lease; nothing is written
// onto GitOps-managed objects.
//
// Where things are: controller.go sets the detector up (the Reconciler, its watches) and holds
// Reconcile; gather.go is what a reconcile reads (the object, its Namespace, the scope, the
// policy and its problems); request.go is what it hands the pipeline (Decide over the Lease);
// messages.go the warning and done texts and their Notices; resume.go the record of a pause and
// its owner's resume (an extension too), with the pause notice's links; supersede.go which Change replaces
// which; helm.go the same for helm releases; options.go the detector's flags (Options:
// Validate, SettingsFor, the Settings the mode and the notifiers complete, and CacheWatches).
package expiry
