// Package admission is the validating admission webhook for Cleaners (kustos.io/v1alpha1): on
// create and update it checks a Cleaner exactly as the controller does (ephemeral.Compile, then
// Spec.CheckNamespace) and refuses it with a 422 Invalid status whose causes carry the field
// paths (spec.conditions[1]: …), so that `kubectl apply` shows every problem at once instead of
// a Ready=False/InvalidSpec condition later. Deletes are never checked.
//
// The work per request is bounded: Compile applies Kubernetes' CEL cost limits, each review has
// a deadline (Options.Timeout), and at most Options.MaxConcurrent compilations run at a time.
// The webhook server runs on every replica, not only on the leader.
//
// AuthorStamper is the mutating webhook beside it: it records in the annotation
// kustos.io/author who created a Cleaner or last changed its spec, as the API server
// authenticated them, signed (internal/authorship) so that nobody can name another author. The
// Cleaner detector deletes only what that author may delete.
//
// The webhook server (server.go) is the manager's: NewServer serves HTTP/1.1 only, from
// --webhook-cert-dir or a certificate kept in a Secret (ServerOptions.ServingCert, package
// keyring), and Setup registers both webhooks on it and makes /readyz wait until it serves.
package admission
