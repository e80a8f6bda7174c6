#!/usr/bin/env bash
# load-images.sh imports every image tarball of a directory (default: bin/images, made by
# `make images`) into the containerd of each of the local cluster's nodes, where pods with
# imagePullPolicy IfNotPresent find them. Safe to repeat: an import replaces the image of the
# same name.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:-$REPO/bin/images}

[[ -S $CONTAINERD_SOCK ]] || die "no containerd at $CONTAINERD_SOCK; start the cluster first: make cluster-up"
shopt -s nullglob
tars=("$dir"/*.tar)
((${#tars[@]} > 0)) || die "no image tarballs in $dir; build them first: make images"
# import_into: every tarball into node N_*'s containerd.
import_into() {
	local t try out
	for t in "${tars[@]}"; do
		# A concurrent `make images` may be rewriting the tarball right now: try again a few times.
		for try in 1 2 3 4 5; do
			if out=$(ctr_node images import "$t" 2>&1); then
				echo "$N_NAME: $(basename "$t"): $out"
				break
			fi
			((try < 5)) || die "importing $t into $N_NAME failed: $out"
			echo "$N_NAME: $(basename "$t"): import failed ($out); retrying" >&2
			sleep 2
		done
	done
}
# The nodes import side by side.
pids=()
for ((k = 1; k <= $(node_count); k++)); do
	node_vars "$k"
	import_into &
	pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || die "importing the images failed"; done
