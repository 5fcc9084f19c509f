// Package direct is the direct-mode actuator: it carries out a Change by writing the cluster
// itself (SetFields, ScaleToZero, Delete, SetAnnotations), and only for objects that no GitOps
// tool manages. An object that Flux or Argo CD tracks, or that a controller owns, is refused
// with an error (lifecycle.ErrManagedByGitOps, lifecycle.ErrSourceNotEditable): its change
// belongs in Git or in its owner, where a direct write would not be reverted.
//
// The package owns how a Change becomes API calls: reading the target live from the API server,
// deciding whether it is managed, and writing it so that a concurrent change is never silently
// overwritten (JSON merge patches and deletes carry the resourceVersion and UID just read; a
// conflict re-reads and tries once more). Applying the same Change twice is a no-op the second
// time (Outcome.Applied false).
package direct
