#!/usr/bin/env bash
# kind-up.sh: the alternative to `make cluster-up` for machines with a Docker engine. It creates
# a kind cluster (sigs.k8s.io/kind) and loads the project's image tarballs (bin/images/*.tar,
# `make images`) into its node, so pods with imagePullPolicy IfNotPresent use them.
#
# NOT TESTED in this project's CI: the machines it runs on have no Docker engine and no
# registry to pull kind's node image from. Checked here: kind v0.33.0 builds with Go 1.26 and
# has the flags used below (create cluster --name/--image/--wait, load image-archive --name).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NAME=${KIND_CLUSTER_NAME:-minicluster}
# KIND_NODE_IMAGE picks the node image (kind's default otherwise); any Kubernetes >= 1.33 has what
# the chart needs: indexed Jobs, elastic indexed Jobs, Job successPolicy.
NODE_IMAGE=${KIND_NODE_IMAGE:-}
KIND=${KIND:-kind}

command -v docker >/dev/null || { echo "kind-up: docker not found; kind needs a Docker engine (on Linux without one: make cluster-up)" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "kind-up: no Docker engine answers ('docker info' fails); start it, or on Linux: make cluster-up" >&2; exit 1; }
if ! command -v "$KIND" >/dev/null; then
	echo "kind-up: installing kind: go install sigs.k8s.io/kind@v0.33.0"
	GOBIN=$REPO/bin/tools go install sigs.k8s.io/kind@v0.33.0
	KIND=$REPO/bin/tools/kind
fi

if "$KIND" get clusters 2>/dev/null | grep -qx "$NAME"; then
	echo "kind-up: cluster $NAME already exists"
else
	"$KIND" create cluster --name "$NAME" ${NODE_IMAGE:+--image "$NODE_IMAGE"} --wait 120s
fi
(cd "$REPO" && make images)
shopt -s nullglob
for t in "$REPO"/bin/images/*.tar; do
	"$KIND" load image-archive "$t" --name "$NAME"
done
echo "kind-up: images loaded; kubectl context kind-$NAME (kind set it as current)"
