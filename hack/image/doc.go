// Command image builds, checks and pushes Kustos's container image without Docker or a
// registry: the image is assembled from files with go-containerregistry, so the only inputs are
// the Go toolchain, this repository and the build machine's CA bundle.
//
//	image build  compile cmd/kustos for linux/amd64 and linux/arm64 and write an OCI image index
//	             as an OCI layout (dist/image): scratch plus CA certificates, /etc/passwd and
//	             /etc/group naming the non-root user 65532 (nonroot), and /kustos; named by
//	             each --tag (make image: the chart's appVersion and the version)
//	image check  verify a layout: both platforms, a non-root user, the entrypoint, the OCI labels,
//	             the CA bundle, static binaries for the right platform, and that the binary of the
//	             build machine's platform runs `kustos version` and prints the version it was
//	             built as
//	image push   copy the layout's index to a registry: to REPOSITORY:TAG (the release workflow:
//	             ghcr.io), or to a REPOSITORY under every tag the layout names
//
// The image is reproducible: every timestamp (files, history, config, the `created` label) is
// SOURCE_DATE_EPOCH, so the same commit builds the same digests.
//
// It is a module of its own, like hack/tools, so that go-containerregistry never enters Kustos's
// go.mod. `make image` and `make image-push` run it.
package main
