// Command installmanifest renders dist/install.yaml, the plain-manifest install of Kustos
// (`kubectl apply -f dist/install.yaml`), from the Helm chart: `helm template` with the CRDs and
// the values in hack/install-values.yaml (observer mode), into the namespace kustos-system, with
// that Namespace as the manifest's first object.
//
// The manifest is public and shared by every installation, so it must carry no key material:
// a rendered Secret (a generated webhook certificate, a signing key) fails the render instead
// of publishing one key for everybody.
//
// `make install-manifest` runs it; e2e/install_test.go renders again and fails when the
// committed file differs, then installs it on a real control plane.
package main
