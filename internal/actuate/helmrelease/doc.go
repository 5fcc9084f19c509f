// Package helmrelease owns how Kustos removes helm releases and reads them: it drives helm's own
// library (helm.sh/helm/v3/pkg/action) against a *rest.Config, so that a release goes the way
// `helm uninstall` takes it — pre- and post-delete hooks run, the release's objects are deleted,
// and its history (Secrets labelled owner=helm, helm's default storage driver) is purged.
//
// Kustos does not reimplement any of this: a release is more than its objects (hooks, history,
// resource policies), and only helm knows them all. What this package adds is what a controller
// needs around helm's CLI-shaped API: a RESTClientGetter built from an in-cluster *rest.Config
// instead of a kubeconfig file, a context that bounds every API call helm makes (helm's
// Uninstall, GetValues and storage drivers take none), and idempotent results (uninstalling a
// release that is already gone is success with removed=false, so a retry after a crash is safe).
//
// And one refusal helm does not make: a release is a Secret its namespace's tenant may write,
// and helm deletes and creates whatever namespaces its manifest and hooks name. Uninstall acts
// only on a release whose every object stays in its namespace (package scope), checked on the
// very revision helm reads to act on; Check tells a detector the same in advance.
package helmrelease
