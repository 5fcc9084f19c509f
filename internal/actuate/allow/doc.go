// Package allow is what Kustos may do in the cluster on its own, per detector, verb and kind:
// --allow (detector:verb:resource, verbs delete and pause) and its older spelling
// --allow-delete (detector:resource, meaning delete). Nothing is allowed by default. The direct
// actuator checks a Policy before every deletion and pause, ReleaseRemovals before every helm
// uninstall; both refuse through Policy.Check, so that a refusal reads, and is reported (the
// pipeline's DeleteNotAllowed and PauseNotAllowed Warning Events), the same way everywhere.
package allow
