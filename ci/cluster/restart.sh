#!/usr/bin/env bash
# restart.sh NAME: restart one component of the local cluster (make cluster-up) as an operator
# or a package upgrade does: SIGTERM, wait until it is gone, start it again with the same command
# line and environment in the same network namespace. NAME is a component's name in the
# cluster's pid directory: kube-apiserver, kube-controller-manager, kube-scheduler, etcd, and for
# the nodes kubelet, containerd, kube-proxy (node 1) or kubelet-nK, containerd-nK, kube-proxy-nK.
# What runs under a component keeps running: containers outlive containerd and the kubelet.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(( EUID == 0 )) || die "needs root, like up.sh"
name=${1:-}
if [[ -z $name ]]; then
	names=("$PID_DIR"/*.pid)
	names=("${names[@]##*/}")
	die "usage: restart.sh NAME (one of: ${names[*]%.pid})"
fi
pid=$(pid_of "$name") || die "no component $name in $PID_DIR"
alive "$name" || die "$name (pid $pid) is not running"

# Its network namespace: the node's for a component of node K, else the cluster's.
ns=$NETNS
if [[ $name =~ -n([0-9]+)$ ]]; then ns=$NETNS-n${BASH_REMATCH[1]}; fi
mapfile -d '' argv <"/proc/$pid/cmdline"
mapfile -d '' environ <"/proc/$pid/environ"

start=$(date +%s%N)
kill -TERM "$pid"
for ((i = 0; i < 300; i++)); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
start_in "$ns" "$name" env -i "${environ[@]}" "${argv[@]}"
say "restarted $name (was pid $pid, now $(pid_of "$name")) in $(( ($(date +%s%N) - start) / 1000000 )) ms"
