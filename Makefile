# fleetwave — `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
# go.mod asks for Go 1.27 (argo-cd v3.6 declares it) and names the toolchain; exported so every target builds with
# it, fetched from the module proxy by a go 1.26 whose GOTOOLCHAIN=local would otherwise refuse (make GOTOOLCHAIN=…
# overrides it).
export GOTOOLCHAIN := go1.27.4
BIN := bin/fleetwave
CACHE := .cache
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CACHE)/bin/staticcheck-$(STATICCHECK_VERSION)-$(GOTOOLCHAIN)
HELM_VERSION := v3.19.4
# The helm CLI argo-cd v3.6.1's repo-server runs (its hack/tool-versions.sh): what `make goldens` renders with.
HELM4_VERSION := v4.3.1
KUSTOMIZE_VERSION := v5.8.1
# The third-party material beside the repository (fidelity corpus, GitHub's recordings and API description):
# FLEETWAVE_SHARED_DIR, else ../shared. Tests find it themselves (internal/testkit/sharedtest); scripts get it from here.
SHARED_DIR ?= $(or $(FLEETWAVE_SHARED_DIR),$(abspath ../shared))
FIDELITY_DIR ?= $(or $(FLEETWAVE_FIDELITY_DIR),$(SHARED_DIR)/fidelity)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# fleetwave version prints it (and the Argo CD, Helm and Kustomize versions it renders as).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: build
build: ## build bin/fleetwave
	$(GO) build -trimpath -ldflags "-X github.com/fleetwave/fleetwave/internal/cli.version=$(VERSION)" -o $(BIN) ./cmd/bot

.PHONY: demo
demo: ## diff, plan and comment of the example change, then its rollout against the Argo CD simulator (no credentials, no network)
	bash hack/demo.sh

# FLEETWAVE_KEEP_TEST_BINARIES=<dir> also keeps every test binary make test runs there (hack/testbin/keep.sh), for
# .ci/run's lone-clone run.
.PHONY: test
test: ## fast tests, with the race detector
	@echo "make test: go test -race over every package: ≈ 12 min warm on 2 cores, 25 min or more on a first build (compiling); one line per package as it finishes"
	$(GO) test -race -trimpath -count=1 -timeout 30m $(if $(FLEETWAVE_KEEP_TEST_BINARIES),-exec $(abspath hack/testbin/keep.sh)) ./...

# Each fuzz target runs for FUZZTIME: CI bounds the time, a longer run is FUZZTIME=10m make fuzz.
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## fuzz the renderers' inputs, FUZZTIME (30s) per target: Application specs, Helm values, kustomizations, directories and Jsonnet; blockyaml and manifestyaml's encoder against yaml.v2, manifestyaml's split against gitops-engine's and apimachinery's, the worker pipe's JSON decoder against apimachinery's, the port of Helm's SortManifests against Helm's
	$(GO) test -run '^$$' -fuzz '^FuzzRender$$' -fuzztime $(FUZZTIME) ./internal/render
	$(GO) test -run '^$$' -fuzz '^FuzzTemplateValues$$' -fuzztime $(FUZZTIME) ./internal/render/helm
	$(GO) test -run '^$$' -fuzz '^FuzzBuild$$' -fuzztime $(FUZZTIME) ./internal/render/kustomize
	$(GO) test -run '^$$' -fuzz '^FuzzRender$$' -fuzztime $(FUZZTIME) ./internal/render/directory
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/kit/yamlcodec/blockyaml
	$(GO) test -run '^$$' -fuzz '^FuzzStrings$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/kit/yamlcodec/blockyaml
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeObject$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/render/isolate
	$(GO) test -run '^$$' -fuzz '^FuzzMarshal$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/kit/yamlcodec/manifestyaml
	$(GO) test -run '^$$' -fuzz '^FuzzSplit$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/kit/yamlcodec/manifestyaml
	$(GO) test -run '^$$' -fuzz '^FuzzSplitManifests$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/render/helm/helmtemplate
	$(GO) test -run '^$$' -fuzz '^FuzzSortManifests$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/render/helm

# The PR comment as GitHub shows it: GitHub-flavoured Markdown and Mermaid (pinned in hack/commentshot, from the
# npm registry) in Debian's chromium. make test runs the browser check when they are installed (it skips otherwise;
# FLEETWAVE_REQUIRE_BROWSER=1 makes that a failure, as in CI).
.PHONY: comment-deps
comment-deps: ## install the pinned renderer and Mermaid for the browser check (npm ci; chromium comes from apt)
	cd hack/commentshot && npm ci --no-audit --no-fund --loglevel=error

.PHONY: comment-pictures
comment-pictures: ## redraw docs/pictures/comment-*.png from the golden comments, in headless chromium
	bash hack/commentshot/pictures.sh

.PHONY: test-all
test-all: test ## fast tests, the slow suites, and the end-to-end suite against a real Argo CD (make e2e)
	FLEETWAVE_SLOW_TESTS=1 $(GO) test -count=1 -timeout 30m ./...
	$(MAKE) e2e

.PHONY: fidelity
fidelity: build ## render the fidelity corpus (shared/fidelity beside the repo) and compare with Argo CD's own output
	FLEETWAVE_FIDELITY_DIR=$(FIDELITY_DIR) bash hack/fidelity.sh

.PHONY: lint
lint: $(STATICCHECK) ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

# staticcheck can only load packages as new as the Go it was built with: one binary per version and toolchain.
$(STATICCHECK):
	mkdir -p $(CACHE)/bin
	GOBIN=$(abspath $(CACHE)/tmp-staticcheck) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(CACHE)/tmp-staticcheck/staticcheck $@ && rm -rf $(CACHE)/tmp-staticcheck

$(CACHE)/bin/helm-$(HELM_VERSION):
	mkdir -p $(CACHE)/bin
	GOBIN=$(abspath $(CACHE)/tmp-helm) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(CACHE)/tmp-helm/helm $@ && rm -rf $(CACHE)/tmp-helm

# helm 4, any version, cached by version: the repo-server's helm in the end-to-end environment (hack/e2e/versions.sh),
# stamped with its version as helm's release Makefile does (else `.Capabilities.HelmVersion` says v4.3, not v4.3.1).
$(CACHE)/bin/helm-v4.%:
	mkdir -p $(CACHE)/bin
	GOBIN=$(abspath $(CACHE)/tmp-$(@F)) $(GO) install -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v4.$* \
		-X helm.sh/helm/v4/internal/version.gitTreeState=clean" helm.sh/helm/v4/cmd/helm@v4.$*
	mv $(CACHE)/tmp-$(@F)/helm $@ && rm -rf $(CACHE)/tmp-$(@F)

$(CACHE)/bin/kustomize-$(KUSTOMIZE_VERSION):
	mkdir -p $(CACHE)/bin
	GOBIN=$(abspath $(CACHE)/tmp-kustomize) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(CACHE)/tmp-kustomize/kustomize $@ && rm -rf $(CACHE)/tmp-kustomize

.PHONY: tools-cli
tools-cli: $(CACHE)/bin/helm-$(HELM_VERSION) $(CACHE)/bin/kustomize-$(KUSTOMIZE_VERSION) ## build the helm and kustomize CLIs benchmarks compare against

.PHONY: goldens
goldens: $(CACHE)/bin/helm-$(HELM4_VERSION) $(CACHE)/bin/kustomize-$(KUSTOMIZE_VERSION) ## regenerate render fixtures' expected output with Argo CD's own code (tools/oracle: argo-cd v3.6.1, helm 4)
	HELM_BIN=$(abspath $(CACHE)/bin/helm-$(HELM4_VERSION)) KUSTOMIZE_BIN=$(abspath $(CACHE)/bin/kustomize-$(KUSTOMIZE_VERSION)) \
	bash hack/goldens.sh

.PHONY: bench
bench: build tools-cli ## benchmarks: Go micro-benchmarks and end-to-end figures vs the helm/kustomize CLIs
	FLEETWAVE_HELM_BIN=$(abspath $(CACHE)/bin/helm-$(HELM_VERSION)) \
	FLEETWAVE_KUSTOMIZE_BIN=$(abspath $(CACHE)/bin/kustomize-$(KUSTOMIZE_VERSION)) \
	FLEETWAVE_FIDELITY_DIR=$(FIDELITY_DIR) bash hack/bench.sh

.PHONY: clean
clean: ## remove build outputs (keeps the tool cache)
	rm -rf bin out

# --- end-to-end environment (issue #8): a real Argo CD syncing into a real kube-apiserver, in a network namespace.
# hack/e2e/README.md describes it. Needs root (ip netns); the cold build takes ~30 min on 2 cores, then seconds.

.PHONY: e2e-build
e2e-build: ## build kube-apiserver, etcd, Argo CD, kwok... from the module proxy into .cache/e2e/bin
	bash hack/e2e/build.sh

.PHONY: e2e-up
e2e-up: e2e-build ## start the end-to-end environment (writes .cache/e2e/run/env)
	bash hack/e2e/up.sh

.PHONY: e2e-down
e2e-down: ## stop the end-to-end environment
	bash hack/e2e/down.sh

.PHONY: e2e
e2e: e2e-build ## end-to-end tests against the real Argo CD (starts and always stops the environment)
	bash hack/e2e/test.sh
