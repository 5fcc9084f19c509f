// Package scope decides whether Kustos may uninstall a helm release on a tenant's behalf: only
// when every object the uninstall deletes or creates is namespaced and in the release's own
// namespace.
//
// A release is a Secret in its namespace (helm's storage), and whoever may write Secrets there
// may write any manifest and hooks into it. Helm keeps the namespaces a manifest names, so an
// uninstall run with Kustos's rights would delete objects, and create hook objects, wherever
// the release says: in another tenant's namespace, or cluster-wide. Check refuses such a
// release before helm acts on it.
//
// The objects are decoded by helm's own kube client (Builder), the code helm's uninstall decodes
// them with — not by a parser of ours that could read a crafted manifest differently — from
// the same text: the manifest split as helm splits it, and each hook's manifest whole. A kind's
// scope comes from the API server's discovery (the client's RESTMapper); a kind it does not
// serve, or a document that cannot be decoded, refuses the release too (fail closed).
package scope
