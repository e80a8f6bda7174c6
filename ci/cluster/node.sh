#!/usr/bin/env bash
# node.sh stop|start K: what a machine of a real cluster does when it dies and comes back, for
# node K (2..NODES) of the local cluster (make cluster-up NODES=3). stop cuts the node's link
# and kills its kubelet, kube-proxy, NetworkPolicy enforcer, containerd, the shims and every
# process of its pods at once, as a power loss would: nothing tells the API server, which marks
# the node NotReady when its heartbeats stop. start brings the link and the four components back
# with the same configuration; the kubelet then reconciles what the API server says with what it
# finds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(( EUID == 0 )) || die "needs root, like up.sh"
action=${1:-}
k=${2:-}
nodes=$(node_count)
if ! [[ $action == stop || $action == start ]] || ! [[ $k =~ ^[0-9]+$ ]] || ((k < 2 || k > nodes)); then
	die "usage: node.sh stop|start K, with K from 2 to $nodes (the cluster's nodes but the first, which runs the control plane)"
fi
node_vars "$k"
[[ -e /run/netns/$N_NS ]] || die "node $N_NAME has no network namespace $N_NS: is the cluster up (make cluster-up NODES=$nodes)?"

kill_node() {
	local name pid
	for name in "kubelet$N_SFX" "kube-proxy$N_SFX" "netpol$N_SFX" "containerd$N_SFX"; do
		if pid=$(pid_of "$name"); then kill -KILL "$pid" 2>/dev/null || true; fi
	done
	kill_shims "$N_SOCK"
	kill_cgroup "$N_CGROUP"
}

case $action in
stop)
	in_ns ip link set "mc-n$k" down
	kill_node
	say "node $N_NAME stopped: link down, kubelet, kube-proxy, containerd and its pods' processes killed"
	;;
start)
	# Whatever a half-done stop left running goes first.
	kill_node
	sleep 0.2
	start_containerd
	for ((i = 0; i < 150; i++)); do
		"$CLUSTER_BIN/ctr" --address "$N_SOCK" version >/dev/null 2>&1 && break
		sleep 0.2
	done
	((i < 150)) || die "node $N_NAME: containerd did not answer within 30s (log: $LOG_DIR/containerd$N_SFX.log)"
	start_kubelet
	start_kube_proxy
	start_netpol
	in_ns ip link set "mc-n$k" up
	say "node $N_NAME started: link up, containerd, kubelet, kube-proxy and the NetworkPolicy enforcer running (it turns Ready at the kubelet's next status update)"
	;;
esac
