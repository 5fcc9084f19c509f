// Package helmrelease owns how Kustos removes helm releases and reads them, the way
// `helm uninstall` takes a release: pre- and post-delete hooks run, the release's objects are
// deleted, and its history (Secrets labelled owner=helm, helm's default storage driver) is purged.
//
// What comes from helm: its release storage and Secrets driver (pkg/storage), its release types
// and manifest sorting (pkg/release, pkg/releaseutil). A release is more than its objects
// (hooks, history, resource policies), and these packages are where helm keeps that knowledge.
//
// What Kustos does itself: the steps of the uninstall (uninstall.go), following helm's own
// action.Uninstall and its hook execution (helm v3.21, pkg/action/uninstall.go and hooks.go)
// step by step: status uninstalling, pre-delete hooks by weight with their delete policies,
// the manifest's objects in helm's uninstall order except those with helm.sh/resource-policy:
// keep, post-delete hooks, history purged. And what helm's kube client (pkg/kube) does for
// them (kube.go): building objects from a manifest (scope.Decoder, compared with helm's own
// client by a test and a fuzz test), creating them, watching a hook until it is ready (a Job
// complete, a Pod succeeded), deleting, waiting for deletion, on client-go's dynamic client.
// Calling pkg/action links what the helm command line needs (OCI registry clients, chart
// downloaders, the chart linter: about 12 MiB of RSS at start), and pkg/kube links kubectl's
// command-line factory and resource builder (cli-runtime, kustomize: 16 MB of binary, about
// 5 MiB at start), code an uninstall never runs (docs/performance.md, "The binary"). Keep uninstall.go and kube.go in
// step with helm's when helm is upgraded.
//
// And around helm's storage, what a controller needs: clients built from an in-cluster
// *rest.Config instead of a kubeconfig file, a context that bounds every API call (helm's
// storage driver takes none), and idempotent results
// (uninstalling a release that is already gone is success with removed=false, so a retry after a
// crash is safe).
//
// And one refusal helm does not make: a release is a Secret its namespace's tenant may write,
// and helm deletes and creates whatever namespaces its manifest and hooks name. Uninstall acts
// only on a release whose every object stays in its namespace (package scope), checked on the
// very revision it reads to act on; Check tells a detector the same in advance. And a second
// one: an uninstall on someone's behalf (a Cleaner's author) asks whether they may make every
// request it makes, in that same read (UninstallFor). What those requests are is one plan
// (touches.go: planOf), decoded by the functions the uninstall's steps decode with; Touches
// lists it for a detector to ask in advance, and FuzzUninstallPlan holds the steps to it.
// ExpiryReleases gives the expiry detector its reads of releases (values, first deployment).
package helmrelease
