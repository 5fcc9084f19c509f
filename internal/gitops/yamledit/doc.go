// Package yamledit owns comment-preserving edits of one document in a YAML manifest file: the
// byte-level edit that turns a lifecycle.Edit (set fields, scale to zero, delete) into the new
// file content that the PR writer commits.
//
// The document is parsed and the edited node located with kyaml
// (sigs.k8s.io/kustomize/kyaml/yaml), as Flux's image-automation-controller does. Instead of
// re-serializing the whole document (which would reformat untouched parts), the new scalar text
// is spliced into the original bytes at the node's line and column, so comments, key order,
// quoting style, flow-style maps, list indentation, CRLF line endings and every other document
// in the file survive byte for byte. Every edit is verified by re-parsing: the result must be
// exactly the original object with the intended fields changed, or Apply fails.
//
// Documents are numbered by Documents: the non-empty documents of a file (a document that holds
// only comments or nothing is not counted), in order, starting at 0. The repository index
// (package index) uses the same numbering.
package yamledit
