# Kustos — make targets. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
BIN       ?= $(CURDIR)/bin
PKGS      := ./...
FUZZTIME  ?= 30s
# Packages whose fuzz targets `make fuzz` runs, and the targets in each.
FUZZ_TARGETS := \
  ./internal/lifecycle:FuzzParseDuration,FuzzFormatDuration,FuzzParseGroupBy \
  ./internal/detect/ephemeral:FuzzCompileAndDecide \
  ./internal/manifest:FuzzLoad \
  ./internal/detect/quota:FuzzParseValue,FuzzParsePolicy,FuzzParseSizing,FuzzParseEventMessage,FuzzRoundUp \
  ./internal/recommend:FuzzLoad \
  ./internal/detect/expiry:FuzzParsePolicy \
  ./internal/extension:FuzzVerify,FuzzClient,FuzzVerifyOwner,FuzzVerifyKeep,FuzzVerifyResume \
  ./internal/activity:FuzzLoadConfig \
  ./internal/quotahistory:FuzzQuantity,FuzzDecodeRange \
  ./internal/detect/inactivity:FuzzParsePolicy \
  ./internal/objcache:FuzzPacked \
  ./internal/actuate/helmrelease/scope:FuzzCheck \
  ./internal/actuate/helmrelease:FuzzUninstallPlan \
  ./internal/egress:FuzzParsePolicy,FuzzEmbeddedIPv4,FuzzAllowsMailDomain \
  ./internal/actuate/allow:FuzzParsePolicy \
  ./internal/authorship:FuzzVerify \
  ./hack/installmanifest:FuzzAssemble \
  ./internal/doccheck:FuzzLinks \
  ./internal/submit:FuzzParseOffset,FuzzParseCompletion \
  ./internal/vsphere:FuzzParseNotes \
  ./internal/actuate/gate:FuzzCheckDestination \
  ./internal/actuate/pr:FuzzChart,FuzzActivityChart \
  ./internal/state:FuzzParseWrites

export KUSTOS_TESTBIN := $(BIN)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-17s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# What `kustos version` and kustos_build_info report: the tag (or commit) and the commit's time,
# not the wall clock, so that one commit always builds the same binary.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell git log -1 --format=%cI 2>/dev/null)
BUILDINFO := github.com/kustos-dev/kustos/internal/buildinfo
LDFLAGS   := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(DATE)

# bin/kustos is built as the image's binary is (hack/image): without cgo and with the time zone
# database. The benches measure it, so it must be what ships: with cgo, helm's kube package (via
# cli-runtime and kustomize) links Go's plugin package, and the linker then exports every symbol,
# 38 MB more file and 25 MiB more RSS at start (docs/performance.md, "The binary"). The symbol
# table and DWARF stay (make binsize reads them).
.PHONY: build
# Build bin/kustos as the image does (no cgo, time zones built in), stamped with the version, commit
# and commit time (kustos version).
build: ## Build bin/kustos as the image does, stamped with version and commit.
	CGO_ENABLED=0 $(GO) build -trimpath -tags timetzdata -ldflags "$(LDFLAGS)" -o $(BIN)/kustos ./cmd/kustos

.PHONY: binsize
# What bin/kustos costs before it works: size by module, package initialisation by module
# (GODEBUG=inittrace=1) and memory of `kustos version` and `kustos run --help`.
binsize: build ## What bin/kustos costs before it works: size, init time and memory by module.
	$(GO) run ./hack/binsize -kustos $(BIN)/kustos

.PHONY: docs
# Regenerate docs/cli.md (every command, flag, environment variable and default) from the flag
# definitions.
docs: ## Regenerate docs/cli.md from the flag definitions.
	$(GO) test ./cmd/kustos -run TestDocs -count=1 -update

.PHONY: testbin
# Build the real test control plane (kube-apiserver, kube-controller-manager, etcd), helm, mailpit
# (the SMTP server of the mail tests), prometheus and promtool (the activity source of the
# inactivity tests) into bin/ (cached).
testbin: ## Build the test control plane, helm, mailpit, prometheus into bin/ (cached).
	hack/setup-testbin.sh
	hack/setup-openapi.sh

# controller-gen, at the version api/v1alpha1/generated_test.go checks the committed files with.
CONTROLLER_GEN := $(GO) run $(shell sed -n 's/^const controllerGen = "\(.*\)"/\1/p' api/v1alpha1/generated_test.go)

.PHONY: generate
# Regenerate the deepcopy functions (api/v1alpha1) and the CRD (charts/kustos/files/crds, which the
# chart's templates/crds.yaml includes) from the Go types.
generate: ## Regenerate deepcopy functions and the CRD from the Go types in api/v1alpha1.
	$(CONTROLLER_GEN) object crd:crdVersions=v1 paths=./api/... output:crd:artifacts:config=charts/kustos/files/crds

.PHONY: vet
vet: ## go vet and a gofmt check.
	$(GO) vet $(PKGS)
	cd hack/image && GOWORK=off $(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi

.PHONY: unit
# Unit tests and fuzz seed corpora (no cluster needed; the Lease store, the direct actuator, the
# group actuator, helm uninstall, the removal gates, the webhook, the packed object cache, the
# mail notifier (against mailpit) and the three-minute soak are tested by `make e2e`).
unit: ## Unit tests and fuzz seed corpora (no cluster needed).
	cd hack/image && GOWORK=off $(GO) test -count=1 ./...
	$(GO) test -count=1 $$($(GO) list ./... | grep -v -e /e2e -e /internal/testenv -e /internal/state -e /internal/actuate/direct -e /internal/actuate/group -e /internal/actuate/helmrelease -e /internal/actuate/gate -e /internal/admission -e /internal/notify -e /internal/objcache/cachetest -e /internal/activity/promtest -e /bench/soak)

.PHONY: e2e
e2e: testbin ## End-to-end tests on the real control plane.
	$(GO) test -count=1 -timeout 30m -v ./internal/testenv/... ./internal/state/... ./internal/actuate/direct/... ./internal/actuate/group/... ./internal/actuate/helmrelease/... ./internal/actuate/gate/... ./internal/admission/... ./internal/notify/... ./internal/objcache/cachetest/... ./internal/activity/promtest/... ./bench/soak/... ./e2e/... 2>&1 | tee $(BIN)/e2e.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|_test.go:' || true
	@grep -qE '^(FAIL|panic)' $(BIN)/e2e.log && exit 1 || true

.PHONY: chart
# helm lint and helm template of charts/kustos; promtool check and test of its alerts.
chart: testbin ## helm lint and helm template of charts/kustos; promtool tests of its alerts.
	$(BIN)/helm lint --strict charts/kustos
	$(BIN)/helm lint --strict charts/kustos --set prometheusRule.enabled=true --set dashboard.enabled=true
	cd charts/kustos/files && $(abspath $(BIN))/promtool check rules alerts.yaml && $(abspath $(BIN))/promtool test rules alerts_test.yaml
	@# The same values render the same bytes (Argo CD renders and compares): nothing is generated at render time.
	@a=$$($(BIN)/helm template kustos charts/kustos --namespace kustos-system | sha256sum); \
	  b=$$($(BIN)/helm template kustos charts/kustos --namespace kustos-system | sha256sum); \
	  if [ "$$a" != "$$b" ]; then echo "two renders of the chart differ"; exit 1; fi
	@if $(BIN)/helm template kustos charts/kustos --set mode=bogus >/dev/null 2>&1; then \
	  echo "chart accepted an invalid mode"; exit 1; fi

.PHONY: test
# Everything: vet, lint, unit, fuzz seeds, e2e on the real control plane, chart checks.
test: testbin vet lint ## Everything: vet, lint, unit, fuzz seeds, e2e on the real control plane, chart.
	$(GO) test -count=1 -timeout 40m ./... 2>&1 | tee $(BIN)/test.log
	cd hack/image && GOWORK=off $(GO) test -count=1 ./...
	$(MAKE) --no-print-directory chart

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 30s) each.
	@for spec in $(FUZZ_TARGETS); do pkg=$${spec%%:*}; for f in $$(tr , ' ' <<<"$${spec#*:}"); do \
	  echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; done; done

.PHONY: bench
bench: testbin build ## Benchmarks: the pure decision, and latency/RSS/CPU on the real control plane.
	$(GO) test -run='^$$' -bench=. -benchmem ./internal/...
	$(GO) run ./bench/controlplane -kustos $(BIN)/kustos
	$(GO) run ./bench/cleaners -kustos $(BIN)/kustos
	$(GO) run ./bench/expiry -kustos $(BIN)/kustos
	$(GO) run ./bench/inactivity -kustos $(BIN)/kustos
	$(GO) run ./bench/wholecluster -kustos $(BIN)/kustos

.PHONY: bench-churn
# The whole-cluster bench with 30 minutes of churn: fails if Kustos's heap after GC grows more than
# 10% from minute 5 to minute 30.
bench-churn: testbin build ## Whole-cluster bench with 30 minutes of churn: fails if the heap grows >10%.
	$(GO) run ./bench/wholecluster -kustos $(BIN)/kustos -churn 30m

# How long `make soak` runs, and its seed (empty: from the clock; the run prints the one it used).
SOAK_DURATION ?= 20m
SOAK_SEED     ?=

.PHONY: soak
# The randomized soak: two replicas in PR mode, a seeded workload and seeded faults (GitHub 5xx,
# slow and secondary-limit answers, SIGKILL), invariants checked all along; fails on a violation.
soak: testbin build ## Randomized soak, faults and invariants (SOAK_DURATION=20m, SOAK_SEED).
	$(GO) run ./bench/soak -kustos $(BIN)/kustos -duration $(SOAK_DURATION) $(if $(SOAK_SEED),-seed $(SOAK_SEED))

.PHONY: demo
# The main job: a real control plane, Kustos in observer mode (what it recommends), then PR mode
# against a local GitHub-compatible server (the PR it opens and merges), then a Cleaner (its
# schedule, the deletion, the CloudEvent), then expiring previews (warning, extension link, PRs),
# then an idle lab environment (its alerts and its pause PR), then vSphere lab VMs in a simulated
# vCenter (a warning, an extension, a quarantine).
demo: testbin build ## The main job: every detector on a real control plane, observer then PR mode.
	$(GO) run ./cmd/kustos-demo -kustos $(BIN)/kustos

# How many demo runs `make demo-soak` makes.
N ?= 10

.PHONY: demo-soak
# Run `make demo` N times (N=10) while `make test` runs beside it; prints "demo-soak: P of N
# passed", keeps failed runs' output in bin/demo-soak/.
demo-soak: ## Run `make demo` N times (N=10) beside `make test`; keeps failed runs' output.
	hack/demo-soak.sh $(N)

# What `make image` stamps into the binary and the image's labels. SOURCE_DATE_EPOCH (the commit
# time) fixes every timestamp, so one commit builds one digest.
# VERSION and COMMIT are those `make build` stamps (above).
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_LAYOUT      ?= dist/image
# The tags the layout names the image by: the chart's appVersion, which the chart pulls when
# image.tag is empty, and VERSION (`git describe`: the commit, or the release tag).
CHART_APP_VERSION := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' charts/kustos/Chart.yaml)
IMAGE_TAGS        ?= $(CHART_APP_VERSION) $(VERSION)
# Where `make image-push` pushes the index: a repository, e.g. registry.example.com/you/kustos,
# gets every tag of IMAGE_TAGS; REPOSITORY:TAG (the release workflow) that tag only. And a file
# it writes the pushed index's digest to (the release workflow attests that digest).
IMAGE_REF         ?=
IMAGE_DIGEST_FILE ?=
# hack/image is a module of its own (go-containerregistry stays out of Kustos's go.mod).
IMAGE_TOOL         = GOWORK=off $(GO) run -C hack/image .

.PHONY: image
# Build the container image without Docker (linux/amd64 and linux/arm64, scratch + CA certificates +
# non-root user) as an OCI layout in dist/image, then check it (platforms, user, entrypoint, labels,
# CA bundle, `kustos version`).
image: ## Build and check the container image without Docker (OCI layout in dist/image).
	$(IMAGE_TOOL) build --repo $(CURDIR) --out $(abspath $(IMAGE_LAYOUT)) --version $(VERSION) --commit $(COMMIT) --source-date-epoch $(SOURCE_DATE_EPOCH) $(addprefix --tag ,$(IMAGE_TAGS))
	$(IMAGE_TOOL) check --layout $(abspath $(IMAGE_LAYOUT)) --version $(VERSION) --commit $(COMMIT)

.PHONY: image-push
# Push dist/image (built by `make image`) to IMAGE_REF: a repository (every tag of the layout,
# IMAGE_TAGS) or REPOSITORY:TAG (that tag). Credentials: REGISTRY_USERNAME/REGISTRY_PASSWORD or
# the Docker config.
image-push: ## Push dist/image to IMAGE_REF (a repository: appVersion and version tags; or REPO:TAG).
	@test -n "$(IMAGE_REF)" || { echo "image-push: set IMAGE_REF, e.g. IMAGE_REF=registry.example.com/you/kustos (tags $(IMAGE_TAGS))"; exit 1; }
	$(IMAGE_TOOL) push --layout $(abspath $(IMAGE_LAYOUT)) --ref $(IMAGE_REF) $(if $(IMAGE_DIGEST_FILE),--digest-file $(abspath $(IMAGE_DIGEST_FILE)))

# The chart dist/install.yaml is rendered from: the directory, or a packaged chart (the release
# workflow renders the tag's package into its own file).
INSTALL_CHART    ?= charts/kustos
INSTALL_MANIFEST ?= dist/install.yaml

.PHONY: install-manifest
# Render dist/install.yaml (kubectl apply --server-side -f) from the chart: observer mode, namespace
# kustos-system, CRDs, values in hack/install-values.yaml. Commit the result; e2e/install_test.go
# fails while it is stale.
install-manifest: testbin ## Render dist/install.yaml from the chart (commit it; e2e checks it).
	$(GO) run ./hack/installmanifest -helm $(BIN)/helm -chart $(INSTALL_CHART) -values hack/install-values.yaml -o $(INSTALL_MANIFEST)

.PHONY: lint
lint: ## golangci-lint with the curated .golangci.yml (the main module and hack/image).
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.6.2 run ./...
	cd hack/image && GOWORK=off $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.6.2 run -c ../../.golangci.yml ./...

.PHONY: actionlint
actionlint: ## Check the GitHub workflows (.github/workflows) with actionlint.
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

.PHONY: clean
clean: ## Remove bin/ (including the cached control plane).
	rm -rf $(BIN)
