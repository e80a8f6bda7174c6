# Shared settings and helpers of the local cluster scripts (sourced by up.sh, down.sh,
# load-images.sh). Everything the cluster keeps lives under $CLUSTER_DIR, except what the
# kernel keeps: a network namespace, a veth pair to the host with three host routes, and a
# cgroup named $CGROUP_NAME in each cgroup controller.

K8S_VERSION=${K8S_VERSION:-v1.36.3}
CLUSTER_DIR=${CLUSTER_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.cluster}
CLUSTER_BIN=${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minicluster}/k8s-$K8S_VERSION/bin

# MINICLUSTER_INDEX=1..9 gives a second cluster its own names and address ranges, so it can run
# next to the default one (with its own CLUSTER_DIR); 0 is the default cluster.
IDX=${MINICLUSTER_INDEX:-0}
[[ $IDX =~ ^[0-9]$ ]] || { echo "cluster: MINICLUSTER_INDEX=$IDX is not a digit 0-9" >&2; exit 1; }
SUFFIX=${IDX#0}
NETNS=minicluster$SUFFIX
NODE_NAME=minicluster
# The node network: a bridge in the control plane's namespace, with node K at .K+1. The first
# node's address is on the bridge itself; the namespace also holds the (dead-end) default route
# via .1, so nothing in the cluster reaches beyond the host.
NODE_NET=10.250.$((IDX * 2))
NODE_IP=$NODE_NET.2
NODE_GW=$NODE_NET.1
# The host end and the namespace end of the link that lets the host reach the cluster.
HOST_LINK=mc-host$SUFFIX
HOST_LINK_IP=10.250.$((IDX * 2 + 1)).1
NS_LINK=mc-ns
NS_LINK_IP=10.250.$((IDX * 2 + 1)).2
# Every node's pods get a /24 of this range (node K: 10.244.K-1.0/24).
POD_CIDR=10.$((244 + IDX)).0.0/16
SERVICE_CIDR=10.$((96 + IDX)).0.0/16
API_SERVICE_IP=10.$((96 + IDX)).0.1
CLUSTER_DOMAIN=cluster.local
CGROUP_NAME=minicluster$SUFFIX

# The cluster's plain-HTTP image registry (ci/registry/up.sh), on the node IP: the host pushes
# to it (make push REGISTRY=$CLUSTER_REGISTRY/minicluster), the cluster's containerd pulls from it.
CLUSTER_REGISTRY=$NODE_IP:${CLUSTER_REGISTRY_PORT:-5000}
# A second one that wants a login (user minicluster, the password in $CLUSTER_AUTH_DIR/password):
# the end-to-end tests check what a pull secret that does not work does.
CLUSTER_AUTH_REGISTRY=$NODE_IP:$((${CLUSTER_REGISTRY_PORT:-5000} + 1))
CLUSTER_AUTH_DIR=$CLUSTER_DIR/registry-auth

CONTAINERD_SOCK=$CLUSTER_DIR/run/containerd.sock
KUBECONFIG_FILE=$CLUSTER_DIR/kubeconfig
LOG_DIR=$CLUSTER_DIR/logs
PID_DIR=$CLUSTER_DIR/run
# Configuration files of every component (up.sh writes them) and the cluster's PKI.
CONF=$CLUSTER_DIR/conf
PKI=$CLUSTER_DIR/pki
# Start order; down.sh stops them in reverse.
COMPONENTS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns provisioner)
# The number of nodes up.sh started (NODES=...), kept for down.sh and later runs of up.sh.
NODES_FILE=$PID_DIR/nodes
MAX_NODES=9

# node_vars K sets the names of node K (1..MAX_NODES): N_NAME, N_NS (its network namespace),
# N_IP, N_POD_CIDR, N_DIR (its state), N_SFX (suffix of its components' pid and log files),
# N_CGROUP and N_SOCK (its containerd). Node 1 shares the control plane's namespace and
# directory; every other node has its own containerd, kubelet and kube-proxy in a namespace of
# its own, linked to the node network bridge, as a machine of a real cluster is.
node_vars() {
	local k=$1
	N_IP=$NODE_NET.$((k + 1))
	N_POD_CIDR=10.$((244 + IDX)).$((k - 1)).0/24
	if ((k == 1)); then
		N_NAME=$NODE_NAME N_NS=$NETNS N_DIR=$CLUSTER_DIR N_SFX='' N_CGROUP=$CGROUP_NAME
	else
		N_NAME=$NODE_NAME-$k N_NS=$NETNS-n$k N_DIR=$CLUSTER_DIR/nodes/n$k N_SFX=-n$k N_CGROUP=$CGROUP_NAME-n$k
	fi
	N_SOCK=$N_DIR/run/containerd.sock
}

# node_count: how many nodes the running cluster has (1 when up.sh did not record it).
node_count() { if [[ -s $NODES_FILE ]]; then cat "$NODES_FILE"; else echo 1; fi; }

# lock: one up.sh or down.sh at a time per cluster (up.sh calls down.sh under its own lock).
lock() {
	[[ -n ${MINICLUSTER_LOCKED:-} ]] && return 0
	mkdir -p /run/lock
	exec 9>"/run/lock/minicluster-$NETNS.lock"
	flock -w 600 9 || die "another up.sh or down.sh holds /run/lock/minicluster-$NETNS.lock"
	export MINICLUSTER_LOCKED=1
}

SAY_AS=${SAY_AS:-cluster}
# shellcheck source=../lib/say.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/say.sh"

# in_ns runs a command inside the cluster's network namespace (nsenter, not `ip netns exec`,
# which remounts /sys under the kubelet's feet); in_node_ns inside node N_NS's.
in_ns() { nsenter --net="/run/netns/$NETNS" "$@"; }
in_node_ns() { nsenter --net="/run/netns/$N_NS" "$@"; }

pid_of() { local f=$PID_DIR/$1.pid; [[ -f $f ]] && cat "$f"; }

# alive NAME: the process recorded for NAME still runs (and is not a zombie).
alive() {
	local pid
	pid=$(pid_of "$1") || return 1
	[[ -n $pid && -d /proc/$pid ]] || return 1
	[[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]
}

kubectl_admin() { "$CLUSTER_BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# ctr_k8s runs ctr against the first node's containerd, in the namespace the CRI uses;
# ctr_node against node N_SOCK's.
ctr_k8s() { "$CLUSTER_BIN/ctr" --address "$CONTAINERD_SOCK" -n k8s.io "$@"; }
ctr_node() { "$CLUSTER_BIN/ctr" --address "$N_SOCK" -n k8s.io "$@"; }

# cgroup_dirs [NAME] prints the cgroup directory NAME (default: the first node's) in every
# mounted cgroup hierarchy (in hybrid mode the pods' cgroups appear in the cgroup2 tree
# "unified" too).
cgroup_dirs() {
	local m name=${1:-$CGROUP_NAME}
	if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
		echo "/sys/fs/cgroup/$name"
		return
	fi
	for m in /sys/fs/cgroup/*/; do
		[[ -L ${m%/} ]] && continue # cpu,cpuacct style symlinks
		[[ -f $m/cgroup.procs ]] && echo "${m%/}/$name"
	done
}

# kill_cgroup NAME: SIGKILL every process left in a node's pod cgroups (down.sh, node.sh stop).
kill_cgroup() {
	local d pid
	for d in $(cgroup_dirs "$1"); do
		[[ -d $d ]] || continue
		for pid in $(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u); do
			kill -KILL "$pid" 2>/dev/null || true
		done
	done
}

# kill_shims SOCK...: SIGKILL the containerd shims that talk to one of these sockets; they
# outlive their containerd.
kill_shims() {
	local p cmd sock
	for p in /proc/[0-9]*; do
		cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		[[ $cmd == *containerd-shim* ]] || continue
		for sock; do
			if [[ $cmd == *"-address $sock "* ]]; then kill -KILL "${p#/proc/}" 2>/dev/null || true; fi
		done
	done
}

# start_in NETNS NAME COMMAND...: runs COMMAND in network namespace NETNS, detached, with its
# output in $LOG_DIR/NAME.log and its pid in $PID_DIR/NAME.pid (current: for up.sh's messages).
start_in() {
	local ns=$1 name=$2
	shift 2
	current=$name
	setsid nsenter --net="/run/netns/$ns" "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null 9>&- &
	echo $! >"$PID_DIR/$name.pid"
	disown $! # its lifetime is down.sh's business, not this shell's
}

# Node N_*'s components, from the configuration up.sh wrote (up.sh, node.sh start).
# PATH: containerd starts the runc shim it finds there; ours, not a host one.
start_containerd() {
	start_in "$N_NS" "containerd$N_SFX" env PATH="$CLUSTER_BIN:$PATH" "$CLUSTER_BIN/containerd" --config "$CONF/containerd$N_SFX.toml"
}
start_kubelet() {
	start_in "$N_NS" "kubelet$N_SFX" "$CLUSTER_BIN/kubelet" --config="$CONF/kubelet$N_SFX.yaml" --kubeconfig="$CONF/kubelet$N_SFX.kubeconfig" \
		--root-dir="$N_DIR/kubelet" --hostname-override="$N_NAME" --node-ip="$N_IP"
}
start_kube_proxy() { start_in "$N_NS" "kube-proxy$N_SFX" "$CLUSTER_BIN/kube-proxy" --config="$CONF/kube-proxy$N_SFX.yaml"; }
# start_netpol: node N_*'s NetworkPolicy enforcer (the reference bridge plugin enforces none):
# kube-router's firewall alone (ci/cluster/netpol/main.go), in the node's namespace, where the
# pods' bridge and kube-proxy's rules are. It admits what comes from the node itself (the
# kubelet's probes).
start_netpol() {
	start_in "$N_NS" "netpol$N_SFX" env PATH="$CLUSTER_BIN:$PATH" "$CLUSTER_BIN/netpol" \
		--kubeconfig="$KUBECONFIG_FILE" --hostname-override="$N_NAME" --iptables-sync-period=1m
}
