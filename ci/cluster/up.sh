#!/usr/bin/env bash
# up.sh starts a real Kubernetes on this machine (Linux, root): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy (iptables), a NetworkPolicy
# enforcer (kube-router's firewall: netpol.sh), CoreDNS, a
# containerd of its own and a plain-HTTP image registry on the node IP that containerd pulls
# from, all inside their own network namespace, reachable from the host through a veth pair and
# host routes (node network, pod and service ranges), and a default StorageClass local-path
# (ci/cluster/provisioner: hostPath volumes under $CLUSTER_DIR/volumes). State and logs: $CLUSTER_DIR.
# NODES=N (1-9, default 1) adds N-1 nodes, each a kubelet, kube-proxy and containerd of its own
# in a network namespace of its own, on a bridge with the first; every node routes to the
# others' pod ranges, so traffic between pods on two nodes crosses a (virtual) link.
# Idempotent: when the cluster already runs it says so and exits 0. `make cluster-down` stops it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/progress.sh"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

NODES=${NODES:-1}
[[ $NODES =~ ^[1-9]$ ]] || die "NODES=$NODES: give a number of nodes from 1 to $MAX_NODES"
say "a real $NODES-node Kubernetes $K8S_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy built from k8s.io/kubernetes, etcd, containerd, CoreDNS) in network namespace '$NETNS', state in $CLUSTER_DIR"
T0=$(date +%s%N)
timeline=()
mark() { timeline+=("$1 $(elapsed)s"); }
elapsed() { local ds=$((($(date +%s%N) - T0) / 100000000)); echo "$((ds / 10)).$((ds % 10))"; }

# ---- checks --------------------------------------------------------------------------------
[[ $(uname -s) == Linux ]] || die "needs Linux; on other systems use 'make kind-up' (Docker + kind)"
(( EUID == 0 )) || die "needs root (network namespace, cgroups, mounts); run as root or use 'make kind-up'"
missing=()
for tool in runc etcd iptables ipset ip nsenter setsid flock openssl docker-registry; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
for p in bridge host-local portmap loopback; do [[ -x /usr/lib/cni/$p ]] || missing+=("/usr/lib/cni/$p"); done
command -v conntrack >/dev/null || missing+=(conntrack)
((${#missing[@]} == 0)) || die "missing ${missing[*]}; install: apt-get install runc containernetworking-plugins etcd-server iptables ipset conntrack iproute2 openssl busybox-static docker-registry"
# What a node costs here: its kubelet, kube-proxy and containerd take about 200 MiB and a few
# percent of a core idle; the control plane 750 MiB; pods come on top.
avail_mib=$(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) / 1024))
need_mib=$((1024 + NODES * 512))
((avail_mib >= need_mib)) || die "NODES=$NODES needs about $need_mib MiB of free memory (1 GiB for the control plane and 512 MiB a node before any pod) and this machine has $avail_mib MiB available; ask for fewer nodes"
cores=$(nproc)
((NODES <= 4 * cores)) || die "NODES=$NODES is more than 4 nodes per core ($cores cores here): every kubelet polls its pods and containers, and more would leave the pods too little CPU; ask for at most $((4 * cores))"
lock
(( ${#CONTAINERD_SOCK} < 100 )) || die "CLUSTER_DIR=$CLUSTER_DIR is too long for a unix socket path; choose a shorter CLUSTER_DIR"

all_alive() {
	local c k
	for c in "${COMPONENTS[@]}"; do alive "$c" || return 1; done
	for ((k = 2; k <= $(node_count); k++)); do
		for c in containerd kubelet kube-proxy; do alive "$c-n$k" || return 1; done
	done
}
# registry_up: ci/registry/up.sh (idempotent) inside the namespace, on the node IP. fd 9 (our
# lock) closed: the registry outlives this script and must not hold the lock.
registry_up() {
	in_ns env REGISTRY_ADDR="$CLUSTER_REGISTRY" CLUSTER_DIR="$CLUSTER_DIR" \
		bash "$REPO/ci/registry/up.sh" 9>&- || return 1
	# The login registry: a random password, its bcrypt hash in htpasswd (python's crypt: glibc's
	# libxcrypt makes bcrypt; docker-registry accepts only bcrypt).
	mkdir -p "$CLUSTER_AUTH_DIR"
	if [[ ! -s $CLUSTER_AUTH_DIR/htpasswd ]]; then
		(umask 077 && od -An -N12 -tx1 /dev/urandom | tr -d ' \n' >"$CLUSTER_AUTH_DIR/password")
		python3 -W ignore -c 'import crypt, sys; print("minicluster:" + crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
			"$(<"$CLUSTER_AUTH_DIR/password")" >"$CLUSTER_AUTH_DIR/htpasswd"
	fi
	in_ns env REGISTRY_ADDR="$CLUSTER_AUTH_REGISTRY" REGISTRY_DIR="$CLUSTER_AUTH_DIR" REGISTRY_HTPASSWD="$CLUSTER_AUTH_DIR/htpasswd" \
		bash "$REPO/ci/registry/up.sh" 9>&-
}
if all_alive && [[ -f $KUBECONFIG_FILE ]] && kubectl_admin get --raw /readyz >/dev/null 2>&1; then
	running_nodes=$(node_count)
	((running_nodes == NODES)) || die "the cluster runs with $running_nodes node(s) and NODES=$NODES asks for $NODES; stop it first (make cluster-down), then make cluster-up NODES=$NODES"
	say "cluster already up (nothing to do)"
	registry_up || say "cluster: WARNING: the registries on $CLUSTER_REGISTRY and $CLUSTER_AUTH_REGISTRY did not start" >&2
	# A cluster started before its nodes ran a NetworkPolicy enforcer gets one now.
	bash "$(dirname "${BASH_SOURCE[0]}")/netpol.sh" 9>&- || say "cluster: WARNING: the NetworkPolicy enforcer did not start" >&2
	say "export KUBECONFIG=$KUBECONFIG_FILE"
	exit 0
fi
if ls "$PID_DIR"/*.pid >/dev/null 2>&1 || [[ -e /run/netns/$NETNS ]]; then
	say "cluster: leftovers of an earlier run found; cleaning them up first"
	bash "$(dirname "${BASH_SOURCE[0]}")/down.sh" >/dev/null
fi

# ---- binaries and images -------------------------------------------------------------------
bash "$(dirname "${BASH_SOURCE[0]}")/build.sh"
mark binaries
mkdir -p "$CLUSTER_DIR"
# $CLUSTER_DIR/bin/kubectl (and the rest) for scripts and tests: a fresh machine has no kubectl.
ln -sfn "$CLUSTER_BIN" "$CLUSTER_DIR/bin"
rm -rf "$LOG_DIR"
mkdir -p "$LOG_DIR" "$PID_DIR"
if [[ -f $REPO/ci/images/main.go ]]; then
	if ! (cd "$REPO" && progress "images: go run ./ci/images --out bin/images" "$LOG_DIR/images.log" \
		go run ./ci/images --out "$REPO/bin/images" --version "${VERSION:-$(<"$REPO/VERSION")}"); then
		# The cluster itself only needs the pause image; the tests rebuild and reload theirs.
		[[ -f $REPO/bin/images/pause.tar ]] || die "building the images failed (log: $LOG_DIR/images.log)"
		say "cluster: WARNING: building the images failed (log: $LOG_DIR/images.log); importing the existing bin/images/*.tar" >&2
	fi
fi
mark images
IMAGES_DIR=${IMAGES_DIR:-$REPO/bin/images}
[[ -f $IMAGES_DIR/pause.tar ]] || die "no $IMAGES_DIR/pause.tar; build the images first: make images"

# ---- failure handling: show the failing component's log, then clean up (logs stay) ---------
current=setup
on_exit() {
	local rc=$?
	((rc == 0)) && return
	say "cluster: FAILED while waiting for $current after $(elapsed)s" >&2
	if [[ -f $LOG_DIR/$current.log ]]; then
		say "---- last lines of $LOG_DIR/$current.log ----" >&2
		tail -n 30 "$LOG_DIR/$current.log" >&2
	fi
	if [[ ${MINICLUSTER_KEEP_ON_FAILURE:-} != 1 ]]; then
		bash "$(dirname "${BASH_SOURCE[0]}")/down.sh" >/dev/null 2>&1 || true
		say "cluster: stopped what had started; logs kept in $LOG_DIR (MINICLUSTER_KEEP_ON_FAILURE=1 leaves it running)" >&2
	fi
}
trap on_exit EXIT

# wait_for NAME SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds; fails early when
# the component NAME has died.
wait_for() {
	local name=$1 timeout=$2 what=$3 deadline
	shift 3
	current=$name
	deadline=$(($(date +%s) + timeout))
	until "$@" >/dev/null 2>&1; do
		if [[ $name != setup ]] && ! alive "$name"; then die "$name exited while waiting for $what"; fi
		(($(date +%s) < deadline)) || die "timed out after ${timeout}s waiting for $what"
		sleep 0.2
	done
}

# start NAME COMMAND...: start_in (lib.sh) the cluster's namespace.
start() { start_in "$NETNS" "$@"; }

# ---- network namespaces --------------------------------------------------------------------
current=setup
echo "$NODES" >"$NODES_FILE"
ip netns add "$NETNS"
in_ns ip link set lo up
# The node network: a bridge with the first node's address. A veth pair whose both ends stay in
# the namespace keeps the bridge's carrier up when it has no other node.
in_ns ip link add mc-br type bridge
in_ns ip addr add "$NODE_IP/24" dev mc-br
in_ns ip link add mc-node type veth peer name mc-node-peer
in_ns ip link set mc-node master mc-br
for l in mc-br mc-node mc-node-peer; do in_ns ip link set "$l" up; done
in_ns ip route add default via "$NODE_GW" dev mc-br
# Every other node: a namespace whose eth0 is a port of the bridge; its default route goes to
# the first node (the way to the host), and every node has a route to each other's pods.
for ((k = 2; k <= NODES; k++)); do
	node_vars "$k"
	ip netns add "$N_NS"
	in_node_ns ip link set lo up
	in_ns ip link add "mc-n$k" type veth peer name eth0 netns "$N_NS"
	in_ns ip link set "mc-n$k" master mc-br
	in_ns ip link set "mc-n$k" up
	in_node_ns ip addr add "$N_IP/24" dev eth0
	in_node_ns ip link set eth0 up
	in_node_ns ip route add default via "$NODE_IP" dev eth0
done
for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	from_ns=$N_NS
	for ((j = 1; j <= NODES; j++)); do
		((j == k)) && continue
		node_vars "$j"
		nsenter --net="/run/netns/$from_ns" ip route add "$N_POD_CIDR" via "$N_IP"
	done
done
ip link add "$HOST_LINK" type veth peer name "$NS_LINK" netns "$NETNS"
ip addr add "$HOST_LINK_IP/30" dev "$HOST_LINK"
ip link set "$HOST_LINK" up
in_ns ip addr add "$NS_LINK_IP/30" dev "$NS_LINK"
in_ns ip link set "$NS_LINK" up
for dst in "$NODE_NET.0/24" "$POD_CIDR" "$SERVICE_CIDR"; do
	ip route replace "$dst" via "$NS_LINK_IP" dev "$HOST_LINK"
done
# The host may open connections into the cluster, nothing in the cluster may open one to the host.
for chain in FORWARD OUTPUT; do
	in_ns iptables -w -I "$chain" -o "$NS_LINK" -m conntrack --ctstate NEW \
		-m comment --comment "minicluster: no new connections to the host" -j REJECT
done
# /proc/sys/net shows the namespace of the process that opens it (no procps sysctl needed).
ns_sysctl() { nsenter --net="/run/netns/$1" bash -c "echo $3 >/proc/sys/$2" 2>/dev/null; }
for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	ns_sysctl "$N_NS" net/ipv4/ip_forward 1
	if ! ns_sysctl "$N_NS" net/bridge/bridge-nf-call-iptables 1; then
		modprobe br_netfilter 2>/dev/null || true
		ns_sysctl "$N_NS" net/bridge/bridge-nf-call-iptables 1 || die "net.bridge.bridge-nf-call-iptables is missing: load the br_netfilter module (modprobe br_netfilter)"
	fi
done

# ---- cgroups: a root of our own for each kubelet's pods ------------------------------------
for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	for d in $(cgroup_dirs "$N_CGROUP"); do
		mkdir -p "$d"
		if [[ $d == */cpuset/$N_CGROUP ]]; then
			cat /sys/fs/cgroup/cpuset/cpuset.cpus >"$d/cpuset.cpus"
			cat /sys/fs/cgroup/cpuset/cpuset.mems >"$d/cpuset.mems"
		fi
	done
	if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
		# cgroup v2 (not tried here: these machines run v1): hand the controllers down to the pods.
		read -ra controllers </sys/fs/cgroup/cgroup.controllers
		for c in "${controllers[@]}"; do
			echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
			echo "+$c" >"/sys/fs/cgroup/$N_CGROUP/cgroup.subtree_control" 2>/dev/null || true
		done
	fi
done

# ---- PKI and kubeconfigs -------------------------------------------------------------------
source "$(dirname "${BASH_SOURCE[0]}")/pki.sh"

# ---- containerd, one per node ---------------------------------------------------------------
source "$(dirname "${BASH_SOURCE[0]}")/containerd-conf.sh"
for reg in "$CLUSTER_REGISTRY" "$CLUSTER_AUTH_REGISTRY"; do
	mkdir -p "$CONF/certs.d/$reg"
	cat >"$CONF/certs.d/$reg/hosts.toml" <<EOF
# A registry of the cluster's own (ci/registry/up.sh on the node IP): plain HTTP, pull only.
server = "http://$reg"

[host."http://$reg"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
EOF
done
for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	containerd_conf
	start_containerd
done

# ---- registry ------------------------------------------------------------------------------
current=registry
registry_up >"$LOG_DIR/registry.log" 2>&1 || die "the registries did not start on $CLUSTER_REGISTRY and $CLUSTER_AUTH_REGISTRY (log: $LOG_DIR/registry.log)"

# ---- etcd ----------------------------------------------------------------------------------
start etcd etcd --name minicluster --data-dir "$CLUSTER_DIR/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster minicluster=http://127.0.0.1:2380

for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	wait_for "containerd$N_SFX" 30 "$N_NAME's containerd socket" "$CLUSTER_BIN/ctr" --address "$N_SOCK" version
done
# Import the images while the control plane comes up.
bash "$(dirname "${BASH_SOURCE[0]}")/load-images.sh" "$IMAGES_DIR" >"$LOG_DIR/load-images.log" 2>&1 &
images_pid=$!
# (bash's /dev/tcp: curl is not among the packages a fresh machine gets)
port_open() { in_ns bash -c "exec 3<>/dev/tcp/$1/$2"; }
wait_for etcd 30 "etcd to listen on 127.0.0.1:2379" port_open 127.0.0.1 2379

# ---- control plane -------------------------------------------------------------------------
B=$CLUSTER_BIN
mark etcd
start kube-apiserver "$B/kube-apiserver" \
	--etcd-servers=http://127.0.0.1:2379 \
	--bind-address=0.0.0.0 --secure-port=6443 --advertise-address="$NODE_IP" \
	--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
	--client-ca-file="$PKI/ca.crt" \
	--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
	--service-account-issuer="https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
	--service-cluster-ip-range="$SERVICE_CIDR" \
	--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
	--allow-privileged=true \
	--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
	--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority="$PKI/ca.crt" \
	--kubelet-preferred-address-types=InternalIP \
	--requestheader-client-ca-file="$PKI/ca.crt" --requestheader-allowed-names=front-proxy-client \
	--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
	--requestheader-extra-headers-prefix=X-Remote-Extra- \
	--proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key"
# Checked from the host: proves the host route too.
wait_for kube-apiserver 60 "the API server to be ready" \
	kubectl_admin get --raw /readyz

mark apiserver
start kube-controller-manager "$B/kube-controller-manager" \
	--kubeconfig="$CONF/controller-manager.kubeconfig" \
	--authentication-kubeconfig="$CONF/controller-manager.kubeconfig" \
	--authorization-kubeconfig="$CONF/controller-manager.kubeconfig" \
	--bind-address=127.0.0.1 --leader-elect=false \
	--use-service-account-credentials \
	--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
	--cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
	--controllers='*,-nodeipam'
start kube-scheduler "$B/kube-scheduler" \
	--kubeconfig="$CONF/scheduler.kubeconfig" \
	--authentication-kubeconfig="$CONF/scheduler.kubeconfig" \
	--authorization-kubeconfig="$CONF/scheduler.kubeconfig" \
	--bind-address=127.0.0.1 --leader-elect=false

# ---- nodes: kubelet and kube-proxy on each; CoreDNS on the first -----------------------------
wait "$images_pid" || { current=load-images; die "importing the images into containerd failed"; }
# Pods get only the cluster's search domains: nothing outside the namespace answers anyway.
: >"$CONF/pod-resolv.conf"
source "$(dirname "${BASH_SOURCE[0]}")/start-node.sh"
for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	start_node
done

# cluster.local from the API; every other name does not exist (nothing outside is reachable), so
# resolvers get a quick NXDOMAIN rather than a timeout.
cat >"$CONF/Corefile" <<EOF
$CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
    bind $NODE_IP
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
        kubeconfig $KUBECONFIG_FILE minicluster
        pods insecure
    }
    cache 5
    loadbalance
}
. {
    bind $NODE_IP
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
EOF
start coredns "$B/coredns" -conf "$CONF/Corefile"

# ---- ready? --------------------------------------------------------------------------------
node_ready() { [[ $(kubectl_admin get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	wait_for "kubelet$N_SFX" 90 "node $N_NAME to be Ready" node_ready "$N_NAME"
done
mark node-Ready
wait_for kube-controller-manager 60 "the default ServiceAccount" kubectl_admin -n default get serviceaccount default
mark default-ServiceAccount
dns_answers() { nslookup_out=$(busybox nslookup "kubernetes.default.svc.$CLUSTER_DOMAIN" "$NODE_IP" 2>&1) && [[ $nslookup_out == *"$API_SERVICE_IP"* ]]; }
if command -v busybox >/dev/null; then
	wait_for coredns 60 "CoreDNS to answer kubernetes.default.svc.$CLUSTER_DOMAIN" dns_answers
else
	wait_for coredns 60 "CoreDNS to listen on $NODE_IP:53" port_open "$NODE_IP" 53
fi
mark DNS
wait_for kube-proxy 60 "the kubernetes Service IP $API_SERVICE_IP from the host" \
	kubectl_admin --server "https://$API_SERVICE_IP" get --raw /readyz
service_ip_open() { nsenter --net="/run/netns/$1" bash -c "exec 3<>/dev/tcp/$API_SERVICE_IP/443"; }
for ((k = 2; k <= NODES; k++)); do
	node_vars "$k"
	wait_for "kube-proxy$N_SFX" 60 "the kubernetes Service IP $API_SERVICE_IP from node $N_NAME" service_ip_open "$N_NS"
done

mark Service-IP
# ---- storage: hostPath volumes under $CLUSTER_DIR/volumes (ci/cluster/provisioner) ------------
# A StorageClass local-path, the default, served by a small provisioner of the repository's own
# on the host: every node shares the host's disk, so a hostPath volume serves a pod anywhere.
current=provisioner
(cd "$REPO" && go build -o "$CLUSTER_DIR/provisioner" ./ci/cluster/provisioner) >"$LOG_DIR/provisioner-build.log" 2>&1 ||
	die "building ci/cluster/provisioner failed (log: $LOG_DIR/provisioner-build.log)"
start provisioner "$CLUSTER_DIR/provisioner" --kubeconfig "$KUBECONFIG_FILE" --dir "$CLUSTER_DIR/volumes" --class local-path
kubectl_admin apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-path
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: minicluster.dev/local-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
EOF
mark storage

trap - EXIT
printf -v tl '%s, ' "${timeline[@]}"
say "cluster: timeline: ${tl%, }"
nodes=()
for ((k = 1; k <= NODES; k++)); do node_vars "$k" && nodes+=("$N_NAME ($N_IP, pods $N_POD_CIDR)"); done
printf -v nodes_list '%s, ' "${nodes[@]}"
say "cluster up in $(elapsed)s: $NODES node(s) Ready: ${nodes_list%, }; pods $POD_CIDR, services $SERVICE_CIDR, DNS $CLUSTER_DOMAIN at $NODE_IP; logs in $LOG_DIR"
say "registry: http://$CLUSTER_REGISTRY (push: make push REGISTRY=$CLUSTER_REGISTRY/minicluster PUSH_FLAGS=--insecure; pods pull $CLUSTER_REGISTRY/minicluster/<name>:<tag>)"
say "login registry: http://$CLUSTER_AUTH_REGISTRY (user minicluster, password in $CLUSTER_AUTH_DIR/password; for the pull-secret tests)"
say "storage: StorageClass local-path (default): hostPath volumes under $CLUSTER_DIR/volumes"
say "export KUBECONFIG=$KUBECONFIG_FILE"
