# minicluster: a Helm chart and the Go programs that run a Flux MiniCluster on Kubernetes.
SHELL := /bin/bash
ROOT := $(abspath .)
BIN := $(ROOT)/bin
export HELM3 ?= $(BIN)/tools/helm3/helm
export HELM4 ?= $(BIN)/tools/helm4/helm
# helm-docs renders the chart's README.md (make docs), run as a tool: `go install pkg@version`
# leaves go.mod alone. The version is in the path, so that changing it builds the new one.
HELM_DOCS_VERSION := v1.14.2
export HELM_DOCS ?= $(BIN)/tools/helm-docs-$(HELM_DOCS_VERSION)/helm-docs
# The local cluster keeps all of its state here; its kubeconfig is $(CLUSTER_DIR)/kubeconfig.
export CLUSTER_DIR ?= $(ROOT)/.cluster
# The version is written in ./VERSION alone: `make version` writes it into the files that carry it
# too (Chart.yaml's version, appVersion and artifacthub.io/images, the Helm 4 plugin's
# plugin.yaml, the project's image tags in values/), and `make lint` fails when one is stale.
VERSION ?= $(shell cat VERSION)
# One way to compile Go for everything here: the images' and the release's static binaries are
# built with CGO_ENABLED=0 and -trimpath (internal/staticbuild, ci/release.sh), and Go's build
# cache shares a package only between builds with the same settings, so the tests, go vet and
# the tools use them too (a first run compiles the dependencies once instead of twice).
export CGO_ENABLED ?= 0
export GOFLAGS ?= -trimpath
# make lint runs go vet with every analyzer (and -tags e2e); go test's own vet pass, a subset of
# them, would work out its facts for every dependency again (about 50 s of a first run).
GO_TEST := go test -vet=off
# The end-to-end targets' tests, as go test -v prints them, then the failed ones again, each with
# its own lines only (ci/testrun), also written to bin/logs/TARGET-failures.txt.
GO_TEST_E2E = go run ./ci/testrun --failures $(BIN)/logs/$@-failures.txt -- $(GO_TEST) -json
# Short, bounded fuzz runs that `make test` does (package:target).
# Budgets in executions (pkg:Target:N), about 10 s each here: a duration -fuzztime can fail with a
# spurious "context deadline exceeded" at its end on Go < 1.27 (golang/go#75804).
FUZZ_TARGETS := ./keygen:FuzzParseCert:800000 ./postrender/fuzz:FuzzRender:40000

.PHONY: all help deps build tools flux images push push-keygen test unit lint fuzz e2e e2e-kwok e2e-kueue e2e-extra cluster-up cluster-down kind-up kwok-up kwok-down kueue-up kueue-down demo bench bench-e2e report release version docs

all: build ## the same as build

help: ## this list: every target with what it does
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z0-9-]+):.*## (.*)/\1\t\2/' | awk -F '\t' '{printf "  %-13s %s\n", $$1, $$2}'

# Where the end-to-end tests' pods pull the images from: CLUSTER_REGISTRY, else the local
# cluster's registry (ci/cluster/lib.sh) when the local cluster runs, else none (the images must
# be on the nodes: make kind-up). The local cluster's login registry goes with its own.
# The local-cluster-only targets (e2e-kwok, e2e-kueue) use LOCAL_REGISTRY.
LOCAL_CLUSTER = $(shell [ -S "$(CLUSTER_DIR)/run/containerd.sock" ] && echo yes)
LOCAL_REGISTRY = $(or $(CLUSTER_REGISTRY),$(shell source ci/cluster/lib.sh && echo "$$CLUSTER_REGISTRY"))
E2E_REGISTRY = $(or $(CLUSTER_REGISTRY),$(if $(LOCAL_CLUSTER),$(LOCAL_REGISTRY)))
E2E_AUTH = $(if $(CLUSTER_REGISTRY),,$(if $(LOCAL_CLUSTER),$(shell source ci/cluster/lib.sh && echo "CLUSTER_AUTH_REGISTRY=$$CLUSTER_AUTH_REGISTRY CLUSTER_AUTH_DIR=$$CLUSTER_AUTH_DIR")))
E2E_KUBECONFIG = $(or $(KUBECONFIG),$(CLUSTER_DIR)/kubeconfig)
# push-images DIR REGISTRY FLAGS: the images of DIR, tagged VERSION, to REGISTRY (nothing when empty).
push-images = $(if $(2),go run ./ci/push --registry "$(2)" --version $(VERSION) $(3) $(1))
# push-e2e: ./bin/images to where the end-to-end tests' pods pull from (E2E_REGISTRY); push-local:
# to the local cluster's registry (LOCAL_REGISTRY).
push-e2e = $(call push-images,$(BIN)/images,$(E2E_REGISTRY)$(if $(E2E_REGISTRY),/minicluster),--insecure)
push-local = $(call push-images,$(BIN)/images,$(LOCAL_REGISTRY)/minicluster,--insecure)
# require-registry: make TARGET stops, saying how, when REGISTRY is not set.
require-registry = @if [ -z "$(REGISTRY)" ]; then echo "make $@: set REGISTRY=host[:port][/path]$(1)" >&2; exit 1; fi

deps: ## the Debian packages the tests and the local cluster need (installed when missing; root)
	bash ci/deps.sh

build: ## minicluster (the user's command), flux-keygen, minicluster-postrender and its Helm 4 plugin, minicluster-convert into ./bin
	go build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/minicluster ./cmd/minicluster
	go build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/flux-keygen ./keygen/cmd/flux-keygen
	go build -o $(BIN)/minicluster-postrender ./postrender/cmd/minicluster-postrender
	go build -o $(BIN)/minicluster-convert ./convert/cmd/minicluster-convert
	mkdir -p $(BIN)/helm-plugin/minicluster
	cp postrender/plugin/plugin.yaml $(BIN)/minicluster-postrender $(BIN)/helm-plugin/minicluster/

tools: $(HELM3) $(HELM4) $(HELM_DOCS) ## the helm v3 and v4 CLIs and helm-docs, built from the Go module proxy

# The helm CLIs are tools of this module (go.mod's tool block, which pins their versions): built
# with its dependencies, they share Go's build cache with the SDK this module already compiles.
$(HELM3): go.mod
	bash ci/lib/progress.sh "tools: helm v3" $(BIN)/logs/helm3.log go build -o $(HELM3) helm.sh/helm/v3/cmd/helm

$(HELM4): go.mod
	bash ci/lib/progress.sh "tools: helm v4" $(BIN)/logs/helm4.log go build -o $(HELM4) helm.sh/helm/v4/cmd/helm

$(HELM_DOCS):
	GOBIN=$(dir $(HELM_DOCS)) bash ci/lib/progress.sh "tools: helm-docs $(HELM_DOCS_VERSION)" $(BIN)/logs/helm-docs.log go install github.com/norwoodj/helm-docs/cmd/helm-docs@$(HELM_DOCS_VERSION)

flux: ## real flux-core from source, laid out like the flux-view images (cached; root)
	bash ci/flux/build.sh

images: flux ## container images as tarballs in ./bin/images (no Docker needed), the Flux ones too
	go run ./ci/images --out $(BIN)/images --version $(VERSION) --flux-dir "$$(bash ci/flux/build.sh --print-dir)"


push: ## the images to REGISTRY=host[:port][/path] (flux-keygen as a linux/amd64+arm64 index); plain HTTP for loopback, PUSH_FLAGS=--insecure for others
	$(call require-registry,, e.g. make push REGISTRY=127.0.0.1:5000/minicluster (bash ci/registry/up.sh starts a registry there))
	$(MAKE) --no-print-directory images
	$(call push-images,$(BIN)/images,$(REGISTRY),$(PUSH_FLAGS))

push-keygen: ## flux-keygen alone to REGISTRY (linux/amd64+arm64, no Flux build): the one image of ours a user's cluster needs with the chart's defaults
	$(call require-registry, that your cluster's nodes can pull from, e.g. make push-keygen REGISTRY=registry.example.com/minicluster)
	rm -rf $(BIN)/images-keygen
	go run ./ci/images --out $(BIN)/images-keygen --version $(VERSION) --only flux-keygen
	$(call push-images,$(BIN)/images-keygen,$(REGISTRY),$(PUSH_FLAGS))

release: tools flux ## REGISTRY=host[:port]/path: the committed version (./VERSION): images (Flux ones too) + chart (signed with SIGN_KEY and KEYRING if set) to REGISTRY, from a clean tree, once per version
	$(call require-registry, (the version is ./VERSION: edit it, make version, commit))
	MINICLUSTER_FLUX_DIR="$$(bash ci/flux/build.sh --print-dir)" VERSION=$(VERSION) REGISTRY=$(REGISTRY) bash ci/release.sh

# Under `make test` a test whose tool is missing fails instead of skipping (internal/tooltest),
# naming the Debian package: `make deps` (root) installs them all.
test: export MINICLUSTER_REQUIRE_TOOLS = 1
test: build tools lint unit fuzz ## everything; the end-to-end part too when a cluster is reachable
	@kc=$${KUBECONFIG:-$(CLUSTER_DIR)/kubeconfig}; \
	if [ -f "$$kc" ] && KUBECONFIG=$$kc $(HELM3) list >/dev/null 2>&1; then $(MAKE) e2e; \
	elif [ -n "$(E2E_REQUIRED)" ]; then echo "make test: E2E_REQUIRED is set but no cluster answers at $$kc" >&2; exit 1; \
	else echo "make test: no cluster answers at $$kc: end-to-end tests NOT run ('make cluster-up' starts one)"; fi

# ci/push's and ci/release's tests run at once and both build the flux-keygen image's programs for
# linux/arm64 (ci/release the user's command too): compiled here first, a first run compiles their
# dependencies once instead of twice side by side.
ARM64_PROGRAMS := ./keygen/cmd/flux-keygen ./restapi/cmd/minicluster-api ./autoscale/cmd/minicluster-autoscale ./supervisor/cmd/minicluster-broker ./cmd/minicluster

unit: ## unit, render, CLI and fuzz-corpus tests (go test ./...)
	GOOS=linux GOARCH=arm64 go build $(ARM64_PROGRAMS)
	$(GO_TEST) ./...

lint: $(HELM3) $(HELM_DOCS) ## gofmt, go vet, helm lint of every values file, shellcheck; fails when a generated doc or version is stale
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt -w these files: $$unformatted" >&2; exit 1; fi
	go vet ./...
	go vet -tags e2e ./...
	@go build -o $(BIN)/valuesdoc ./ci/valuesdoc && $(BIN)/valuesdoc --helm-docs $(HELM_DOCS) --check
	@go run ./ci/version --check
	$(HELM3) lint --strict charts/minicluster
	for f in values/*.yaml; do $(HELM3) lint --strict charts/minicluster -f $$f || exit 1; done
	bash ci/lint-scripts.sh
	@dot -Tsvg docs/architecture.dot | cmp -s - docs/architecture.svg || { echo "stale: docs/architecture.svg: run make docs (it renders docs/architecture.dot)" >&2; exit 1; }
	@go run ./ci/report --check
	@go run ./ci/poddoc --check
	@go run ./ci/doclint

version: ## write ./VERSION into Chart.yaml, plugin.yaml and the image tags of values/ (after editing VERSION)
	go run ./ci/version

docs: $(HELM_DOCS) ## the chart's README.md (helm-docs, the values table from values.yaml's comments), values.schema.json's descriptions, docs/architecture.svg (Graphviz), the broker pod's tables in docs/architecture.md (a render)
	go run ./ci/valuesdoc --helm-docs $(HELM_DOCS)
	go run ./ci/poddoc
	dot -Tsvg docs/architecture.dot -o docs/architecture.svg

fuzz: ## short, bounded fuzz runs (FUZZ_TARGETS; FUZZ_EXECS overrides each budget)
	for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; rest=$${t#*:}; $(GO_TEST) -run='^$$' -fuzz="^$${rest%%:*}$$" -fuzztime=$${FUZZ_EXECS:-$${rest#*:}}x "$$pkg" || exit 1; done

# How many end-to-end tests run at once. Most of a test's time is spent waiting for Kubernetes
# and Flux, so more than go test's default (one a core) shortens the run; -p 1 tests one
# package at a time, so that the log shows each test as it runs.
E2E_PARALLEL ?= 4

# The Kueue and kwok tests need Kueue and simulated nodes started for them: make e2e-kueue and
# make e2e-kwok run them, so that nothing here skips for want of either.
e2e: build tools images ## end-to-end tests against the cluster in KUBECONFIG (default: the local one), the Kueue and kwok ones aside
	$(push-e2e)
	CLUSTER_REGISTRY=$(E2E_REGISTRY) $(E2E_AUTH) KUBECONFIG=$(E2E_KUBECONFIG) $(GO_TEST_E2E) -tags e2e -count=1 -timeout 70m -v -p 1 -parallel $(E2E_PARALLEL) -skip 'Kueue|Kwok' ./test/e2e/... ./keygen/kube/...

# The simulated nodes of the scale tests: enough for 1,000 brokers by default (10 nodes of 110 pods).
KWOK_NODES ?= 10
export KWOK_NODES

e2e-kwok: build tools ## the end-to-end tests at scale (E2E_KWOK_SIZE=1000 brokers) on simulated nodes of the local cluster (kwok-up first)
	bash ci/kwok/up.sh
	@# Only the keygen image is pulled for real (its Job runs on the real node); the brokers' never are.
	go run ./ci/images --out $(BIN)/images --version $(VERSION)
	$(push-local)
	CLUSTER_REGISTRY=$(LOCAL_REGISTRY) KUBECONFIG=$(CLUSTER_DIR)/kubeconfig MINICLUSTER_REQUIRE_KWOK=1 $(GO_TEST_E2E) -tags e2e -count=1 -timeout 40m -v -run 'Kwok' ./test/e2e/...

e2e-kueue: build tools images ## the Kueue tests (queue.name) with real Flux on the local cluster: kueue-up, the tests, kueue-down (also when they fail)
	bash ci/kueue/up.sh
	$(push-local) && \
	CLUSTER_REGISTRY=$(LOCAL_REGISTRY) KUBECONFIG=$(CLUSTER_DIR)/kubeconfig MINICLUSTER_REQUIRE_KUEUE=1 $(GO_TEST_E2E) -tags e2e -count=1 -timeout 30m -v -run 'Kueue' ./test/e2e/...; \
	rc=$$?; bash ci/kueue/down.sh; exit $$rc

e2e-extra: build tools images ## tests run alone, on the local cluster: ten MiniClusters at once, a broker with a foreign certificate, a namespace of 64 brokers deleted, the API server, a kubelet and a containerd restarted under one
	$(push-local)
	CLUSTER_REGISTRY=$(LOCAL_REGISTRY) KUBECONFIG=$(CLUSTER_DIR)/kubeconfig $(GO_TEST_E2E) -tags 'e2e extra' -count=1 -timeout 40m -v -run 'TestManyTenants|TestForeignCertificateRefused|TestNamespaceDeletedAt64|TestControlPlaneRestarts' ./test/e2e/

# Each benchmark run writes its results (figures, command, runs, date, machine) to
# BENCH_RESULTS, one JSON file a benchmark; ci/report writes docs/performance.md from them.
export BENCH_RESULTS ?= $(ROOT)/docs/results

bench-e2e: build tools images ## timings on the cluster in KUBECONFIG with real Flux, next to a bare indexed Job (the floor) and the Flux Operator; kwok at 1,000 on the local cluster; then docs/performance.md
	bash ci/operator/build.sh
	if [ -n "$(LOCAL_CLUSTER)" ] && [ "$(E2E_KUBECONFIG)" = "$(CLUSTER_DIR)/kubeconfig" ]; then bash ci/kwok/up.sh; fi
	$(push-e2e)
	CLUSTER_REGISTRY=$(E2E_REGISTRY) KUBECONFIG=$(E2E_KUBECONFIG) $(GO_TEST) -tags e2e -count=1 -timeout 90m -run '^$$' -bench 'Floor|MiniCluster|HPC|MPI|Kwok|Operator|Uninstall|API|Autoscale' -benchtime $${BENCHTIME:-3x} ./test/e2e/...
	@# Sizes 6 to 64 and the overlay shapes at 64, once each (BENCH_SIZES, BENCH_TOPOLOGIES).
	CLUSTER_REGISTRY=$(E2E_REGISTRY) KUBECONFIG=$(E2E_KUBECONFIG) $(GO_TEST) -tags e2e -count=1 -timeout 90m -run '^$$' -bench 'Scale|Topology|Throughput|Metrics|PodCost' -benchtime $${BENCH_SCALE_TIME:-1x} ./test/e2e/...
	@# Kueue's admission: on the local cluster Kueue is started for it and removed after (also on failure).
	local=$(if $(and $(LOCAL_CLUSTER),$(filter $(CLUSTER_DIR)/kubeconfig,$(E2E_KUBECONFIG))),yes); \
	if [ -n "$$local" ]; then bash ci/kueue/up.sh || exit 1; fi; \
	CLUSTER_REGISTRY=$(E2E_REGISTRY) KUBECONFIG=$(E2E_KUBECONFIG) $(GO_TEST) -tags e2e -count=1 -timeout 30m -run '^$$' -bench 'Kueue' -benchtime $${BENCHTIME:-3x} ./test/e2e/...; \
	rc=$$?; if [ -n "$$local" ]; then bash ci/kueue/down.sh; fi; exit $$rc
	$(MAKE) --no-print-directory report

report: ## docs/performance.md from the benchmark results in BENCH_RESULTS (make bench-e2e does this at its end)
	go run ./ci/report --results $(BENCH_RESULTS)

bench: ## Go benchmarks of render, post-render and key generation
	go test -run='^$$' -bench=. -benchmem ./...

cluster-up: deps ## a real Kubernetes on this machine (root, Linux); NODES=3 for three nodes (default 1)
	NODES=$(or $(NODES),1) bash ci/cluster/up.sh

cluster-down: ## stop the local cluster (and kwok) and remove everything it made
	bash ci/kwok/down.sh
	bash ci/cluster/down.sh

kwok-up: ## KWOK_NODES simulated nodes (KWOK_MAX_PODS pods each, default 110) on the local cluster: kwok, built once from the Go module proxy
	bash ci/kwok/up.sh

kwok-down: ## stop kwok and delete its nodes
	bash ci/kwok/down.sh

kueue-up: ## Kueue (built once from its pinned source, cached) in the local cluster, webhooks included; queue.name then queues a MiniCluster
	bash ci/kueue/up.sh

kueue-down: ## remove Kueue from the local cluster, its webhooks first (Jobs still queued stay suspended)
	bash ci/kueue/down.sh

kind-up: ## a kind cluster instead (needs Docker), with the images loaded
	bash ci/cluster/kind-up.sh

demo: deps ## cluster up, install hello world, show the lead's output, resize, uninstall
	bash ci/demo.sh
