#!/usr/bin/env bash
# build.sh builds the Flux Operator's manager (the peer the bench measures the chart against) from
# its pinned source (`go run ./ci/sources flux-operator`: a mirror such as ../shared, the build
# cache, or downloaded; FLUX_OPERATOR_TARBALL names another), once, into
# $MINICLUSTER_CACHE/flux-operator-<commit>/ (default cache: ~/.cache/minicluster): the manager
# binary and the MiniCluster CRD. A second run finds them and returns at once. --print-dir prints
# that directory.
#
# Built as its own `make build` does: the tree's pkg/flux/keygen.go is a stub that writes an empty
# CURVE certificate; the real one (keygen.go.template) needs cgo and CZMQ.
set -euo pipefail
cd "$(dirname "$0")/../.."
source ci/lib/progress.sh

TARBALL=${FLUX_OPERATOR_TARBALL:-$(go run ./ci/sources flux-operator)}
[[ -f $TARBALL ]] || { echo "operator: FLUX_OPERATOR_TARBALL=$TARBALL: no such file" >&2; exit 1; }
NAME=$(basename "$TARBALL" .tar.gz)
CACHE=${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minicluster}
OUT=$CACHE/$NAME

if [[ ${1:-} == --print-dir ]]; then
	echo "$OUT"
	exit 0
fi
if [[ -x $OUT/manager && -f $OUT/crd.yaml ]]; then
	echo "operator: cached $NAME in $OUT"
	exit 0
fi

missing=()
for p in libczmq-dev libzmq3-dev libsodium-dev; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
	[[ $(id -u) == 0 ]] || { echo "operator: needs ${missing[*]} (apt-get install them as root)" >&2; exit 1; }
	progress "operator: apt ${missing[*]}" "$CACHE/logs/operator-apt.log" \
		env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
tar -xzf "$TARBALL" -C "$src" --strip-components=1
cp "$src/pkg/flux/keygen.go.template" "$src/pkg/flux/keygen.go"
mkdir -p "$OUT.tmp"
progress "operator: go build $NAME manager (about 3 minutes on 2 cores)" "$CACHE/logs/operator-build.log" \
	bash -c "cd '$src' && CGO_ENABLED=1 CGO_CFLAGS=-I/usr/include CGO_LDFLAGS='-L/usr/lib -lstdc++ -lczmq -lzmq' go build -trimpath -ldflags=-s -o '$OUT.tmp/manager' main.go"
cp "$src/config/crd/bases/flux-framework.org_miniclusters.yaml" "$OUT.tmp/crd.yaml"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "operator: built $OUT/manager"
