# Kustos — make targets. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
BIN       ?= $(CURDIR)/bin
PKGS      := ./...
FUZZTIME  ?= 30s
# Packages whose fuzz targets `make fuzz` runs, and the targets in each.
FUZZ_TARGETS := ./internal/lifecycle:FuzzParseDuration ./internal/detect/ephemeral:FuzzCompileAndDecide ./internal/manifest:FuzzLoad ./internal/detect/quota:FuzzParseValue,FuzzParsePolicy,FuzzParseEventMessage,FuzzRoundUp ./internal/recommend:FuzzLoad ./internal/detect/expiry:FuzzParsePolicy ./internal/extension:FuzzVerify,FuzzClient ./internal/activity:FuzzLoadConfig ./internal/detect/inactivity:FuzzParsePolicy ./internal/actuate/helmrelease/scope:FuzzCheck ./internal/egress:FuzzParsePolicy ./internal/authorship:FuzzVerify

export KUSTOS_TESTBIN := $(BIN)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/kustos.
	$(GO) build -trimpath -o $(BIN)/kustos ./cmd/kustos

.PHONY: testbin
testbin: ## Build the real test control plane (kube-apiserver, kube-controller-manager, etcd), helm, mailpit (the SMTP server of the mail tests), prometheus and promtool (the activity source of the inactivity tests) into bin/ (cached).
	hack/setup-testbin.sh
	hack/setup-openapi.sh

# controller-gen, at the version api/v1alpha1/generated_test.go checks the committed files with.
CONTROLLER_GEN := $(GO) run $(shell sed -n 's/^const controllerGen = "\(.*\)"/\1/p' api/v1alpha1/generated_test.go)

.PHONY: generate
generate: ## Regenerate the deepcopy functions (api/v1alpha1) and the CRD (charts/kustos/files/crds, which the chart's templates/crds.yaml includes) from the Go types.
	$(CONTROLLER_GEN) object crd:crdVersions=v1 paths=./api/... output:crd:artifacts:config=charts/kustos/files/crds

.PHONY: vet
vet: ## go vet and a gofmt check.
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi

.PHONY: unit
unit: ## Unit tests and fuzz seed corpora (no cluster needed; the Lease store, the direct actuator, helm uninstall, the webhook and the mail notifier (against mailpit) are tested by `make e2e`).
	$(GO) test -count=1 $$($(GO) list ./... | grep -v -e /e2e -e /internal/testenv -e /internal/state -e /internal/actuate/direct -e /internal/actuate/helmrelease -e /internal/admission -e /internal/notify -e /internal/activity/promtest)

.PHONY: e2e
e2e: testbin ## End-to-end tests on the real control plane.
	$(GO) test -count=1 -timeout 30m -v ./internal/testenv/... ./internal/state/... ./internal/actuate/direct/... ./internal/actuate/helmrelease/... ./internal/admission/... ./internal/notify/... ./internal/activity/promtest/... ./e2e/... 2>&1 | tee $(BIN)/e2e.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|_test.go:' || true
	@grep -qE '^(FAIL|panic)' $(BIN)/e2e.log && exit 1 || true

.PHONY: chart
chart: testbin ## helm lint and helm template of charts/kustos.
	$(BIN)/helm lint --strict charts/kustos
	@# The same values render the same bytes (Argo CD renders and compares): nothing is generated at render time.
	@a=$$($(BIN)/helm template kustos charts/kustos --namespace kustos-system | sha256sum); \
	  b=$$($(BIN)/helm template kustos charts/kustos --namespace kustos-system | sha256sum); \
	  if [ "$$a" != "$$b" ]; then echo "two renders of the chart differ"; exit 1; fi
	@if $(BIN)/helm template kustos charts/kustos --set mode=bogus >/dev/null 2>&1; then \
	  echo "chart accepted an invalid mode"; exit 1; fi

.PHONY: test
test: testbin vet lint ## Everything: vet, lint, unit, fuzz seeds, e2e on the real control plane, chart checks.
	$(GO) test -count=1 -timeout 40m ./... 2>&1 | tee $(BIN)/test.log
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

.PHONY: demo
demo: testbin build ## The main job: a real control plane, Kustos in observer mode (what it recommends), then PR mode against a local GitHub-compatible server (the PR it opens and merges), then a Cleaner (its schedule, the deletion, the CloudEvent), then expiring previews (warning, extension link, PRs), then an idle lab environment (its alerts and its pause PR).
	$(GO) run ./cmd/kustos-demo -kustos $(BIN)/kustos

.PHONY: lint
lint: ## golangci-lint with the curated .golangci.yml.
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.6.2 run ./...

.PHONY: clean
clean: ## Remove bin/ (including the cached control plane).
	rm -rf $(BIN)
