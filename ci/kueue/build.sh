#!/usr/bin/env bash
# build.sh builds Kueue (sigs.k8s.io/kueue, the job queueing controller) from its source tarball
# with vendor/ (Kueue is not on the Go module proxy): the pinned one (`go run ./ci/sources kueue`:
# a mirror such as ../shared, the build cache, or downloaded), or KUEUE_SRC, into
# $MINICLUSTER_CACHE/kueue-v$KUEUE_VERSION (default cache: ~/.cache/minicluster): the source tree
# (its config/components/ has the CRDs, RBAC and webhook manifests ci/kueue/up.sh applies),
# bin/kueue (a static binary) and version (vX.Y.Z). The build itself takes nothing from the network.
# Once per version: a second run finds it and returns at once. --print-dir prints the directory.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../lib/progress.sh
source "$REPO/ci/lib/progress.sh"

KUEUE_VERSION=${KUEUE_VERSION:-0.19.2}
CACHE=${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minicluster}
DIR=$CACHE/kueue-v$KUEUE_VERSION

if [[ ${1:-} == --print-dir ]]; then
	echo "$DIR"
	exit 0
fi
mkdir -p "$DIR"
# One build at a time: .ci/run starts one in the background while the tests run, and the
# Kueue tests' own call then waits for it here.
exec 9>"$DIR/.lock"
flock 9
if [[ -x $DIR/bin/kueue && -s $DIR/version ]]; then
	echo "kueue: cached v$KUEUE_VERSION in $DIR"
	exit 0
fi
if [[ -z ${KUEUE_SRC:-} ]]; then
	KUEUE_SRC=$(cd "$REPO" && go run ./ci/sources kueue)
	[[ $(basename "$KUEUE_SRC") == "kueue-$KUEUE_VERSION.tar.gz" ]] || { echo "kueue: KUEUE_VERSION=$KUEUE_VERSION, but the pinned source is $KUEUE_SRC: set KUEUE_SRC to Kueue $KUEUE_VERSION's source with vendor/, or unset KUEUE_VERSION" >&2; exit 1; }
fi
[[ -f $KUEUE_SRC ]] || { echo "kueue: KUEUE_SRC=$KUEUE_SRC: no such file (Kueue's source tarball with vendor/)" >&2; exit 1; }
command -v go >/dev/null || { echo "kueue: go not found on PATH; install Go >= 1.25" >&2; exit 1; }

if [[ ! -f $DIR/src/go.mod ]]; then
	rm -rf "$DIR/src" "$DIR/src.tmp"
	mkdir -p "$DIR/src.tmp"
	tar -xzf "$KUEUE_SRC" -C "$DIR/src.tmp" --strip-components=1
	mv "$DIR/src.tmp" "$DIR/src"
fi
echo "kueue: building v$KUEUE_VERSION from $KUEUE_SRC into $DIR/bin (about 8 minutes on 2 cores)"
# Static, from vendor/ only (the first build takes a while: it compiles about 1,800 packages).
build() {
	cd "$DIR/src" &&
		CGO_ENABLED=0 GOFLAGS=-mod=vendor GOPROXY=off go build -trimpath -ldflags "-s -w" -o "$DIR/bin/kueue.tmp" ./cmd/kueue &&
		mv "$DIR/bin/kueue.tmp" "$DIR/bin/kueue" &&
		echo "v$KUEUE_VERSION" >"$DIR/version"
}
progress "kueue: go build ./cmd/kueue" "$DIR/build.log" build
ls -l "$DIR/bin/kueue"
