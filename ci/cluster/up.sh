#!/usr/bin/env bash
# up.sh starts a real single-node Kubernetes on this machine (Linux, root): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy (iptables), CoreDNS, a
# containerd of its own and a plain-HTTP image registry on the node IP that containerd pulls
# from, all inside their own network namespace, reachable from the host through a veth pair and
# host routes (node IP, pod and service ranges). State and logs: $CLUSTER_DIR.
# Idempotent: when the cluster already runs it says so and exits 0. `make cluster-down` stops it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

say "a real single-node Kubernetes $K8S_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy built from k8s.io/kubernetes, etcd, containerd, CoreDNS) in network namespace '$NETNS', state in $CLUSTER_DIR"
T0=$(date +%s%N)
timeline=()
mark() { timeline+=("$1 $(elapsed)s"); }
elapsed() { local ds=$((($(date +%s%N) - T0) / 100000000)); echo "$((ds / 10)).$((ds % 10))"; }

# ---- checks --------------------------------------------------------------------------------
[[ $(uname -s) == Linux ]] || die "needs Linux; on other systems use 'make kind-up' (Docker + kind)"
(( EUID == 0 )) || die "needs root (network namespace, cgroups, mounts); run as root or use 'make kind-up'"
missing=()
for tool in runc etcd iptables ip nsenter setsid flock openssl docker-registry; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
for p in bridge host-local portmap loopback; do [[ -x /usr/lib/cni/$p ]] || missing+=("/usr/lib/cni/$p"); done
command -v conntrack >/dev/null || missing+=(conntrack)
((${#missing[@]} == 0)) || die "missing ${missing[*]}; install: apt-get install runc containernetworking-plugins etcd-server iptables conntrack iproute2 openssl busybox-static docker-registry"
lock
(( ${#CONTAINERD_SOCK} < 100 )) || die "CLUSTER_DIR=$CLUSTER_DIR is too long for a unix socket path; choose a shorter CLUSTER_DIR"

all_alive() { local c; for c in "${COMPONENTS[@]}"; do alive "$c" || return 1; done; }
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
	say "cluster already up (nothing to do)"
	registry_up || say "cluster: WARNING: the registries on $CLUSTER_REGISTRY and $CLUSTER_AUTH_REGISTRY did not start" >&2
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
	say "images: go run ./ci/images --out bin/images"
	if ! (cd "$REPO" && go run ./ci/images --out "$REPO/bin/images" --version "${VERSION:-$(<"$REPO/VERSION")}") >"$LOG_DIR/images.log" 2>&1; then
		tail -20 "$LOG_DIR/images.log" >&2
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

# start NAME COMMAND...: runs COMMAND in the cluster's network namespace, detached, with its
# output in $LOG_DIR/NAME.log and its pid in $PID_DIR/NAME.pid.
start() {
	local name=$1
	shift
	current=$name
	setsid nsenter --net="/run/netns/$NETNS" "$@" >>"$LOG_DIR/$name.log" 2>&1 </dev/null 9>&- &
	echo $! >"$PID_DIR/$name.pid"
	disown $! # its lifetime is down.sh's business, not this shell's
}

# ---- network namespace ---------------------------------------------------------------------
current=setup
ip netns add "$NETNS"
in_ns ip link set lo up
in_ns ip link add mc-node type veth peer name mc-node-peer
in_ns ip addr add "$NODE_IP/24" dev mc-node
in_ns ip link set mc-node up
in_ns ip link set mc-node-peer up
in_ns ip route add default via "$NODE_GW" dev mc-node
ip link add "$HOST_LINK" type veth peer name "$NS_LINK" netns "$NETNS"
ip addr add "$HOST_LINK_IP/30" dev "$HOST_LINK"
ip link set "$HOST_LINK" up
in_ns ip addr add "$NS_LINK_IP/30" dev "$NS_LINK"
in_ns ip link set "$NS_LINK" up
for dst in "$NODE_IP/32" "$POD_CIDR" "$SERVICE_CIDR"; do
	ip route replace "$dst" via "$NS_LINK_IP" dev "$HOST_LINK"
done
# The host may open connections into the cluster, nothing in the cluster may open one to the host.
for chain in FORWARD OUTPUT; do
	in_ns iptables -w -I "$chain" -o "$NS_LINK" -m conntrack --ctstate NEW \
		-m comment --comment "minicluster: no new connections to the host" -j REJECT
done
# /proc/sys/net shows the namespace of the process that opens it (no procps sysctl needed).
ns_sysctl() { in_ns bash -c "echo $2 >/proc/sys/$1" 2>/dev/null; }
ns_sysctl net/ipv4/ip_forward 1
if ! ns_sysctl net/bridge/bridge-nf-call-iptables 1; then
	modprobe br_netfilter 2>/dev/null || true
	ns_sysctl net/bridge/bridge-nf-call-iptables 1 || die "net.bridge.bridge-nf-call-iptables is missing: load the br_netfilter module (modprobe br_netfilter)"
fi

# ---- cgroups: a root of our own for the kubelet's pods -------------------------------------
for d in $(cgroup_dirs); do
	mkdir -p "$d"
	if [[ $d == */cpuset/$CGROUP_NAME ]]; then
		cat /sys/fs/cgroup/cpuset/cpuset.cpus >"$d/cpuset.cpus"
		cat /sys/fs/cgroup/cpuset/cpuset.mems >"$d/cpuset.mems"
	fi
done
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
	# cgroup v2 (not tried here: these machines run v1): hand the controllers down to the pods.
	read -ra controllers </sys/fs/cgroup/cgroup.controllers
	for c in "${controllers[@]}"; do
		echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
		echo "+$c" >"/sys/fs/cgroup/$CGROUP_NAME/cgroup.subtree_control" 2>/dev/null || true
	done
fi

# ---- PKI and kubeconfigs -------------------------------------------------------------------
PKI=$CLUSTER_DIR/pki
rm -rf "$PKI"
mkdir -p "$PKI"
chmod 700 "$PKI"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
	-subj "/CN=minicluster-ca" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
# cert NAME SUBJECT USAGES [SANS]: a key and a certificate signed by the cluster CA.
cert() {
	local name=$1 subject=$2 usages=$3 sans=${4:-}
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$usages"
		[[ -n $sans ]] && echo "subjectAltName=$sans"
	} >"$PKI/$name.ext"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$subject" \
		-keyout "$PKI/$name.key" 2>/dev/null |
		openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
			-days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.ext"
}
cert apiserver "/CN=kube-apiserver" serverAuth \
	"DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,IP:127.0.0.1,IP:$API_SERVICE_IP,IP:$NODE_IP"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert admin "/O=system:masters/CN=minicluster-admin" clientAuth
cert front-proxy-client "/CN=front-proxy-client" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
cert kube-proxy "/CN=system:kube-proxy" clientAuth
cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" serverAuth,clientAuth "DNS:$NODE_NAME,DNS:localhost,IP:$NODE_IP,IP:127.0.0.1"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"

# kubeconfig FILE CERTNAME: a kubeconfig for the API server on the node IP, with embedded data.
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: minicluster
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$PKI/$2.crt")
    client-key-data: $(base64 -w0 <"$PKI/$2.key")
contexts:
- name: minicluster
  context:
    cluster: minicluster
    user: $2
current-context: minicluster
EOF
	chmod 600 "$1"
}
CONF=$CLUSTER_DIR/conf
mkdir -p "$CONF"
kubeconfig "$KUBECONFIG_FILE" admin
for c in controller-manager scheduler kube-proxy kubelet; do kubeconfig "$CONF/$c.kubeconfig" "$c"; done

# ---- containerd ----------------------------------------------------------------------------
CD=$CLUSTER_DIR/containerd
mkdir -p "$CD/root" "$CD/state" "$CLUSTER_DIR/cni/net.d" "$CLUSTER_DIR/cni/ipam"
# containerd 2 (ci/cluster/build.sh): configuration version 3. Nothing from the host's
# /etc/containerd is imported, and NRI (a socket under /var/run) is off.
cat >"$CONF/containerd.toml" <<EOF
version = 3
root = "$CD/root"
state = "$CD/state"
imports = []
disabled_plugins = ["io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.nri.v1.nri"]

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$CD/opt"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"

  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "localhost/minicluster/pause:local"

  # Registry hosts: <config_path>/<host:port>/hosts.toml (the cluster's registry is plain HTTP).
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$CD/certs.d"

[plugins."io.containerd.cri.v1.runtime"]
  # No CAP_SYS_RESOURCE here: without this every sandbox fails ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_cdi = false

  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"

    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$CD/state/runc"

  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$CLUSTER_DIR/cni/net.d"
EOF
for reg in "$CLUSTER_REGISTRY" "$CLUSTER_AUTH_REGISTRY"; do
	mkdir -p "$CD/certs.d/$reg"
	cat >"$CD/certs.d/$reg/hosts.toml" <<EOF
# A registry of the cluster's own (ci/registry/up.sh on the node IP): plain HTTP, pull only.
server = "http://$reg"

[host."http://$reg"]
  capabilities = ["pull", "resolve"]
  skip_verify = true
EOF
done
cat >"$CLUSTER_DIR/cni/net.d/10-minicluster.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "minicluster",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$CLUSTER_DIR/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
# PATH: containerd starts the runc shim it finds there; ours, not a host one.
start containerd env PATH="$CLUSTER_BIN:$PATH" "$CLUSTER_BIN/containerd" --config "$CONF/containerd.toml"

# ---- registry ------------------------------------------------------------------------------
current=registry
registry_up >"$LOG_DIR/registry.log" 2>&1 || die "the registries did not start on $CLUSTER_REGISTRY and $CLUSTER_AUTH_REGISTRY (log: $LOG_DIR/registry.log)"

# ---- etcd ----------------------------------------------------------------------------------
start etcd etcd --name minicluster --data-dir "$CLUSTER_DIR/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster minicluster=http://127.0.0.1:2380

wait_for containerd 30 "containerd's socket" "$CLUSTER_BIN/ctr" --address "$CONTAINERD_SOCK" version
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

# ---- node: kubelet, kube-proxy, CoreDNS ----------------------------------------------------
wait "$images_pid" || { current=load-images; die "importing the images into containerd failed"; }
mkdir -p "$CLUSTER_DIR/kubelet" "$CLUSTER_DIR/pod-logs"
# Pods get only the cluster's search domains: nothing outside the namespace answers anyway.
: >"$CONF/pod-resolv.conf"
cat >"$CONF/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$PKI/kubelet.crt"
tlsPrivateKeyFile: "$PKI/kubelet.key"
containerRuntimeEndpoint: "unix://$CONTAINERD_SOCK"
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_NAME
# Kubernetes 1.35 refuses cgroup v1 unless told otherwise.
failCgroupV1: false
failSwapOn: false
clusterDomain: $CLUSTER_DOMAIN
clusterDNS: ["$NODE_IP"]
resolvConf: "$CONF/pod-resolv.conf"
podLogsDir: "$CLUSTER_DIR/pod-logs"
volumePluginDir: "$CLUSTER_DIR/kubelet/volume-plugins"
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
serializeImagePulls: false
# A busy disk must not evict test pods; locally imported images must never be collected.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%", imagefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
start kubelet "$B/kubelet" --config="$CONF/kubelet.yaml" --kubeconfig="$CONF/kubelet.kubeconfig" \
	--root-dir="$CLUSTER_DIR/kubelet" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP"

cat >"$CONF/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$CONF/kube-proxy.kubeconfig"}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# Leave the host-wide conntrack sysctls alone.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
nodePortAddresses: [primary]
EOF
start kube-proxy "$B/kube-proxy" --config="$CONF/kube-proxy.yaml"

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
node_ready() { [[ $(kubectl_admin get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
wait_for kubelet 90 "node $NODE_NAME to be Ready" node_ready
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

trap - EXIT
mark Service-IP
printf -v tl '%s, ' "${timeline[@]}"
say "cluster: timeline: ${tl%, }"
say "cluster up in $(elapsed)s: node $NODE_NAME ($NODE_IP) Ready, pods $POD_CIDR, services $SERVICE_CIDR, DNS $CLUSTER_DOMAIN at $NODE_IP; logs in $LOG_DIR"
say "registry: http://$CLUSTER_REGISTRY (push: make push REGISTRY=$CLUSTER_REGISTRY/minicluster PUSH_FLAGS=--insecure; pods pull $CLUSTER_REGISTRY/minicluster/<name>:<tag>)"
say "login registry: http://$CLUSTER_AUTH_REGISTRY (user minicluster, password in $CLUSTER_AUTH_DIR/password; for the pull-secret tests)"
say "export KUBECONFIG=$KUBECONFIG_FILE"
