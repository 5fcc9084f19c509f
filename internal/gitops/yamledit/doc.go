// Package yamledit owns comment-preserving edits of the YAML files of a GitOps repository: Edit
// turns a lifecycle.Edit (set fields, scale to zero, set annotations, delete the document) into
// the new content of a manifest file, and RemoveResource removes a deleted file's entry from a
// kustomization's resources: list. The PR writer commits what they return.
//
// Each document is parsed with kyaml (sigs.k8s.io/kustomize/kyaml/yaml.Parse) and the edited
// node is found with kyaml's RNode lookups, one key at a time (RNode.Field; yaml.Lookup is not
// used because it reads path parts such as "0", "-" or "[a=b]" as list selectors, and
// Kubernetes map keys may look like that). kyaml's yaml.Node is go.yaml.in/yaml/v3's Node,
// which records every node's line, column and style. Nothing is re-serialized: the new scalar
// text, the new entry lines or the removed bytes are spliced into the original bytes at those
// positions, so comments (on the key they belong to), key order, quoting style, flow-style
// maps, sequence indentation, blank lines, block scalars, CRLF line endings, a leading "---"
// and every other document of the file stay byte for byte. Every edit is verified by parsing
// the result again: it must decode to exactly the original object with the intended change
// (annotation and label values as strings), or the edit fails with ErrVerify. An edit that
// would need reformatting (a block scalar or multi-line value, a path through a sequence or an
// alias) fails with ErrUnsupported instead.
//
// New values are written plain when they read back as the same string and a harmless type, and
// double-quoted otherwise; annotation and label values are always written so that they read
// back as strings ("true", "3", "2026-01-01T00:00:00Z" and "" are quoted). SetAnnotations
// creates metadata.annotations when it is missing and sets its entries in sorted key order.
//
// Files are split into documents by this package (Documents), not by kyaml's kio.ByteReader,
// which turns CRLF line endings into LF before splitting and unwraps a List into its items, so
// that neither its positions nor its numbering are the file's. Documents numbers the non-empty
// documents of a file (a document that holds only comments or nothing is not counted), in
// order, starting at 0. The repository index (package index) uses the same numbering.
package yamledit
