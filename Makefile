# minicluster: a Helm chart and two Go helpers that run a Flux MiniCluster on Kubernetes.
SHELL := /bin/bash
ROOT := $(abspath .)
BIN := $(ROOT)/bin
HELM3_VERSION := v3.22.0
HELM4_VERSION := v4.3.1
export HELM3 ?= $(BIN)/tools/helm3/helm
export HELM4 ?= $(BIN)/tools/helm4/helm
# The local cluster keeps all of its state here; its kubeconfig is $(CLUSTER_DIR)/kubeconfig.
export CLUSTER_DIR ?= $(ROOT)/.cluster
VERSION := 0.1.0

.PHONY: all build tools images test unit lint e2e cluster-up cluster-down demo bench fmt vet kind-up

all: build

build: ## flux-keygen and minicluster-postrender into ./bin
	go build -o $(BIN)/flux-keygen ./keygen/cmd/flux-keygen
	go build -o $(BIN)/minicluster-postrender ./postrender/cmd/minicluster-postrender

tools: $(HELM3) $(HELM4) ## the helm v3 and v4 CLIs, built from the Go module proxy

$(HELM3):
	GOBIN=$(dir $(HELM3)) go install helm.sh/helm/v3/cmd/helm@$(HELM3_VERSION)

$(HELM4):
	GOBIN=$(dir $(HELM4)) go install helm.sh/helm/v4/cmd/helm@$(HELM4_VERSION)

images: ## container images as tarballs in ./bin/images (no Docker needed)
	go run ./ci/images --out $(BIN)/images --version $(VERSION)
