#!/usr/bin/env bash
# load-images.sh imports every image tarball of a directory (default: bin/images, made by
# `make images`) into the local cluster's containerd, where pods with imagePullPolicy
# IfNotPresent find them. Safe to repeat: an import replaces the image of the same name.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:-$REPO/bin/images}

[[ -S $CONTAINERD_SOCK ]] || die "no containerd at $CONTAINERD_SOCK; start the cluster first: make cluster-up"
shopt -s nullglob
tars=("$dir"/*.tar)
((${#tars[@]} > 0)) || die "no image tarballs in $dir; build them first: make images"
for t in "${tars[@]}"; do
	# A concurrent `make images` may be rewriting the tarball right now: try again a few times.
	for try in 1 2 3 4 5; do
		if out=$(ctr_k8s images import "$t" 2>&1); then
			echo "$(basename "$t"): $out"
			break
		fi
		((try < 5)) || die "importing $t failed: $out"
		echo "$(basename "$t"): import failed ($out); retrying" >&2
		sleep 2
	done
done
