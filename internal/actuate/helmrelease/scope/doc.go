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
// The objects are decoded by Decoder, as helm's kube client builds them (kubectl's resource
// builder, which Kustos does not link: with helm's kube client it cost 16 MB of binary and about
// 5 MiB of RSS at start), and the Uninstaller acts
// on what the same Decoder gives, so a crafted manifest cannot be read one way when checked and
// another when acted on. TestDecoderAsHelm and FuzzDecoderAsHelm compare Decoder with helm's own
// client. It decodes the same text as helm's uninstall: the manifest split as helm splits it,
// and each hook's manifest whole. A kind's scope comes from the API server's discovery (the
// RESTMapper); a kind it does not serve, or a document that cannot be decoded, refuses the
// release too (fail closed).
package scope
