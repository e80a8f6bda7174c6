#!/usr/bin/env bash
# build.sh builds kwok (sigs.k8s.io/kwok, fake nodes and pods for control-plane tests at scale)
# from the Go module proxy into the same cache as the local cluster's binaries,
# $MINICLUSTER_CACHE/kwok-$KWOK_VERSION/kwok (default cache: ~/.cache/minicluster), once per
# version: a second run finds it and returns at once. --print prints the binary's path.
set -euo pipefail

KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
CACHE=${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minicluster}
BIN=$CACHE/kwok-$KWOK_VERSION

if [[ ${1:-} == --print ]]; then
	echo "$BIN/kwok"
	exit 0
fi
if [[ -x $BIN/kwok ]]; then
	echo "kwok: cached $KWOK_VERSION in $BIN"
	exit 0
fi
command -v go >/dev/null || { echo "kwok: go not found on PATH; install Go >= 1.25" >&2; exit 1; }
echo "kwok: building sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION into $BIN (about 3 minutes on 2 cores)"
mkdir -p "$BIN"
# Static, and one compile at a time: the machine's cores are shared.
CGO_ENABLED=0 GOBIN=$BIN GOFLAGS=-p=1 go install -trimpath -ldflags=-s "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
"$BIN/kwok" --version
