#!/usr/bin/env bash
# down.sh stops the local cluster that up.sh started and removes what it made: on every node the
# pods' containers, kubelet, kube-proxy (and its iptables chains) and containerd; the control
# plane, CoreDNS, etcd, the registry (ci/registry/down.sh), the mounts under $CLUSTER_DIR, the
# cgroups, the network namespaces with their veths and host routes, and the cluster state (the
# registry's storage with it). It keeps $CLUSTER_DIR/logs and the binary cache
# ($CLUSTER_DIR/bin links to it).
# Idempotent: with nothing running it only makes sure nothing is left.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(( EUID == 0 )) || die "needs root, like up.sh"
lock
T0=$(date +%s%N)
# MINICLUSTER_TRACE=1 prints how long each step took.
step() { [[ -z ${MINICLUSTER_TRACE:-} ]] || say "  $((($(date +%s%N) - T0) / 1000000))ms: $*"; }

# stop NAME: SIGTERM, up to 10 s of grace, then SIGKILL.
stop() {
	local name=$1 pid i how=SIGTERM
	pid=$(pid_of "$name") || return 0
	if alive "$name"; then
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 100; i++)); do alive "$name" || break; sleep 0.1; done
		if alive "$name"; then kill -KILL "$pid" 2>/dev/null && sleep 0.2; how=SIGKILL; fi
		say "stopped $name (pid $pid, $how, $((i / 10)).$((i % 10))s)"
	fi
	rm -f "$PID_DIR/$name.pid"
}

# running NAME: a live (not zombie) process of that name exists (no procps on a fresh machine).
running() {
	local stat
	for stat in /proc/[0-9]*/stat; do
		[[ $(cat "$stat" 2>/dev/null) =~ ^[0-9]+\ \((.*)\)\ ([A-Z]) ]] || continue
		[[ ${BASH_REMATCH[1]} == "$1" && ${BASH_REMATCH[2]} != Z ]] && return 0
	done
	return 1
}

# The nodes to take down: the first, and every other one of which anything is left (up.sh may
# have failed half-way, or a test may have stopped a node's processes).
nodes=(1)
for ((k = 2; k <= MAX_NODES; k++)); do
	node_vars "$k"
	if [[ -e /run/netns/$N_NS || -d $N_DIR ]] || ls "$PID_DIR"/*"$N_SFX".pid >/dev/null 2>&1; then nodes+=("$k"); fi
done

step "kubelets and containers"
# 1. Nothing may restart pods: each kubelet goes first, then every container of its node.
netns_paths=()
ids=()
for k in "${nodes[@]}"; do
	node_vars "$k"
	stop "kubelet$N_SFX"
	if alive "containerd$N_SFX"; then
		mapfile -t node_ids < <(ctr_node containers ls -q 2>/dev/null)
		ids+=("${node_ids[@]}")
		for id in "${node_ids[@]}"; do
			path=$(ctr_node containers info "$id" 2>/dev/null |
				sed -n 's#.*"path": "\(/[^"]*netns/[^"]*\)".*#\1#p' | head -1)
			[[ -n $path ]] && netns_paths+=("$path")
		done
		for id in $(ctr_node tasks ls -q 2>/dev/null); do ctr_node tasks kill -s SIGKILL "$id" >/dev/null 2>&1; done
		for id in $(ctr_node tasks ls -q 2>/dev/null); do ctr_node tasks delete -f "$id" >/dev/null 2>&1; done
		for id in $(ctr_node containers ls -q 2>/dev/null); do ctr_node containers delete "$id" >/dev/null 2>&1; done
	fi
	# Whatever still runs in the pods' cgroups is the cluster's: kill it.
	kill_cgroup "$N_CGROUP"
done

step "kube-proxy"
# 2. kube-proxy and the NetworkPolicy enforcer, then kube-proxy's iptables chains (they live in
# the namespace, as do the enforcer's rules and sets, which go with it; flushed all the same).
for k in "${nodes[@]}"; do
	node_vars "$k"
	stop "netpol$N_SFX"
	stop "kube-proxy$N_SFX"
	if [[ -e /run/netns/$N_NS && -x $CLUSTER_BIN/kube-proxy ]]; then
		in_node_ns "$CLUSTER_BIN/kube-proxy" --cleanup >>"$LOG_DIR/kube-proxy$N_SFX-cleanup.log" 2>&1 || true
	fi
done

step "control plane"
# 3. The rest, in reverse start order.
for name in provisioner coredns kube-scheduler kube-controller-manager kube-apiserver etcd; do stop "$name"; done
for k in "${nodes[@]}"; do node_vars "$k" && stop "containerd$N_SFX"; done
# The registry lives in the namespace too: it goes before the namespace does.
CLUSTER_DIR=$CLUSTER_DIR bash "$(dirname "${BASH_SOURCE[0]}")/../registry/down.sh" | grep -v 'not running'
REGISTRY_DIR=$CLUSTER_AUTH_DIR bash "$(dirname "${BASH_SOURCE[0]}")/../registry/down.sh" | grep -v 'not running'
# containerd's shims outlive it; ours are the ones that talk to one of its sockets.
socks=()
for k in "${nodes[@]}"; do node_vars "$k" && socks+=("$N_SOCK"); done
kill_shims "${socks[@]}"

step "mounts"
# 4. Mounts: the pods' network namespaces, then everything under $CLUSTER_DIR, deepest first.
for path in "${netns_paths[@]}"; do
	umount "$path" 2>/dev/null || umount -l "$path" 2>/dev/null
	rm -f "$path"
done
mounts_under() { awk -v d="$CLUSTER_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r; }
for m in $(mounts_under); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done

# libcni's result cache (kept outside $CLUSTER_DIR by containerd) of the pods' sandboxes.
for id in "${ids[@]}"; do rm -f /var/lib/cni/results/minicluster-"$id"-* /var/lib/cni/results/cni-loopback-"$id"-*; done

step "cgroups"
cgroups=()
# 5. cgroups, deepest first (a cgroup only goes once its processes have).
for k in "${nodes[@]}"; do
	node_vars "$k"
	mapfile -t -O "${#cgroups[@]}" cgroups < <(cgroup_dirs "$N_CGROUP")
done
for d in "${cgroups[@]}"; do
	[[ -d $d ]] || continue
	for ((i = 0; i < 20; i++)); do
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		[[ -d $d ]] || break
		sleep 0.1
	done
	[[ -d $d ]] && say "cluster: could not remove cgroup $d (processes left in it?)" >&2
done

step "network"
# 6. Network: deleting the namespace deletes its veths (and so the host end and host routes).
ip link del "$HOST_LINK" 2>/dev/null
for k in "${nodes[@]}"; do
	node_vars "$k"
	if [[ -e /run/netns/$N_NS ]]; then ip netns del "$N_NS" && say "deleted network namespace $N_NS"; fi
done

step "state"
# 7. State. Only when nothing is mounted below any more: rm must never walk into a bind mount.
for l in /var/log/containers/*.log; do
	[[ -L $l && $(readlink "$l") == "$CLUSTER_DIR/"* ]] && rm -f "$l"
done
# Host paths containerd and the kubelet use whatever their configuration says; tidy them
# when no other containerd or kubelet runs (rmdir only ever removes empty directories).
if ! running kubelet; then
	rm -f /var/lib/kubelet/device-plugins/kubelet.sock
	rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet 2>/dev/null
fi
if ! running containerd; then
	rmdir /run/containerd/runc/k8s.io /run/containerd/runc /run/containerd/fifo /run/containerd/s \
		/run/containerd /var/lib/cni/results /var/lib/cni 2>/dev/null
fi
rmdir /var/log/containers 2>/dev/null
if [[ -n $(mounts_under) ]]; then
	say "cluster: mounts left under $CLUSTER_DIR, state NOT removed:" >&2
	mounts_under >&2
	exit 1
fi
if [[ -d $CLUSTER_DIR ]]; then
	find "$CLUSTER_DIR" -mindepth 1 -maxdepth 1 ! -name logs ! -name bin -exec rm -rf --one-file-system {} +
fi
ds=$((($(date +%s%N) - T0) / 100000000))
say "cluster down in $((ds / 10)).$((ds % 10))s (logs kept in $LOG_DIR; binaries cached in $CLUSTER_BIN)"
