// Package index owns the index of a GitOps repository's Kubernetes manifests: which file and
// which document in it defines a given object (group, kind, namespace, name), and whether a
// plain edit of that document can change the object at all.
//
// Build walks the YAML files of a checkout (any fs.FS) under the instance's path prefixes
// (--git-path), splits them into documents with the same numbering as package yamledit, and
// resolves namespaces the way kustomize does: a document without metadata.namespace takes the
// namespace: of the kustomization that lists it, directly or through nested kustomizations, and
// an outer kustomization's namespace: overrides inner ones and the document's own. Locate and
// LocateIn answer with a Location or with ErrSourceNotFound, ErrSourceAmbiguous or
// ErrSourceNotEditable (a kustomize patch targets the object, or a generator produces it), the
// three outcomes the PR actuator turns into SourceNotFound / SourceAmbiguous /
// SourceNotEditable Events. ListedIn names the kustomization files whose resources list a given
// file directly, so that a PR deleting the file can take it out of them too. LocateIn, for a
// namespace's resizer.io/git-path, first checks the path on the same index (CheckGitPath): a
// path that is not clean, lies outside the prefixes or names objects of another namespace (as
// the index resolves namespaces) is ErrGitPathRefused.
//
// Files that cannot be read or parsed are skipped and recorded (Index.Errors); one bad file
// never fails the build. Kustomization files, Helm chart templates (files containing "{{"),
// files used as kustomize patches and YAML that is not a Kubernetes object (no apiVersion or
// kind) are not indexed.
package index
