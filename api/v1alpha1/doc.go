// Package v1alpha1 holds Kustos's custom resources (group kustos.io, version v1alpha1): today the
// Cleaner, with which a team declares when the short-lived objects an API created for it may
// go. The types carry kubebuilder markers; the deepcopy functions (zz_generated.deepcopy.go) and
// the CRD (charts/kustos/files/crds/) are generated from them by `make generate` (controller-gen) and
// must not be edited by hand. The package imports only apimachinery, so the offline tools and the
// admission webhook can use it without the rest of Kustos.
//
// +kubebuilder:object:generate=true
// +groupName=kustos.io
package v1alpha1
