// Package authorship records who wrote a Cleaner and asks the API server what that person may
// do, so that a Cleaner makes Kustos act with its author's rights, never with Kustos's own.
//
// The admission webhook (internal/admission) stamps every Cleaner it admits with its author
// (user name, UID, groups and extra, as the API server reported them in the AdmissionReview)
// in the annotation StampAnnotation, overwriting whatever the request carried. A webhook can be
// bypassed (failurePolicy Ignore, its configuration deleted), so the stamp is also bound to
// what it was given for: an HMAC-SHA256, with a key only Kustos holds, over the Cleaner's
// namespace and name, a digest of its spec, the time of the stamp and the author. Verify
// refuses a stamp that is missing, malformed, signed with another key, older than the Cleaner,
// or given for another spec, so a stamp cannot be forged, edited, or carried over to another
// Cleaner or another spec.
//
// Reviewer asks a SubjectAccessReview (authorization.k8s.io/v1) for the author before every
// deletion a Cleaner causes, and keeps the answers for a short time in a bounded cache keyed
// by the author and the request, so that many Cleaners do not flood the API server and an
// answer never outlives a change of author. SelfReviewer asks the same of Kustos itself
// (SelfSubjectAccessReview): whether its own RBAC lets it watch or delete a Cleaner's targets.
// ReadSigner reads the stamps' key from the --cleaner-author-key-* flags (package keyring).
package authorship
