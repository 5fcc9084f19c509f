# syntax=docker/dockerfile:1

# Build stage: a static, stripped binary. The source is bind-mounted rather than copied, so no
# list of directories has to be kept in sync here and no source ends up in an image layer.
# Add a .dockerignore excluding bin/ and .git/ to keep the build context small.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder

WORKDIR /src

# Download modules in their own step so that they are cached until go.mod/go.sum change.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=bind,source=go.mod,target=go.mod \
    --mount=type=bind,source=go.sum,target=go.sum \
    go mod download

# Set by BuildKit for each platform of a multi-platform build (docker buildx --platform ...).
ARG TARGETOS
ARG TARGETARCH
# Printed by `kustos version` and sent in the User-Agent; e.g. --build-arg VERSION=v0.1.0.
ARG VERSION=dev

# -buildvcs=false: the .git directory may be absent from the context or owned by another user,
# either of which makes VCS stamping fail the build.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    --mount=type=bind,target=. \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" -o /kustos ./cmd/kustos

# Runtime stage: no shell, no package manager, CA certificates and tzdata only.
FROM gcr.io/distroless/static:nonroot

LABEL org.opencontainers.image.title="kustos" \
      org.opencontainers.image.description="Recommends Kubernetes ResourceQuota increases as Events and logs" \
      org.opencontainers.image.source="https://github.com/kustos-dev/kustos"

COPY --from=builder /kustos /kustos

# The distroless "nonroot" user; matches runAsUser/runAsGroup in the Helm chart.
USER 65532:65532

ENTRYPOINT ["/kustos"]
