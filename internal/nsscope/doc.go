// Package nsscope answers "does this installation serve namespace X": --namespace-selector, a
// Kubernetes label selector over Namespaces' labels. Several Kustos installations with disjoint
// selectors share a cluster the way Flux and Argo CD users shard their controllers: each serves
// the namespaces its selector selects and leaves the others alone (no decision, no Event, no
// status write).
//
// The answer comes from the manager's cached Namespace metadata, so the selector's label keys
// must be kept by the cache's trim (Scope.LabelKeys). The detectors consume a Scope through a
// small interface of their own and use Objects and Namespaces as watch predicates, so that
// objects of unselected namespaces are not even enqueued and a Namespace that joins the
// selector gets its objects looked at.
package nsscope
