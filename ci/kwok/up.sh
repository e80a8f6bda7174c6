#!/usr/bin/env bash
# up.sh adds simulated nodes to the local cluster (or any cluster in $CLUSTER_DIR/kubeconfig):
# kwok runs as a process on this host and plays the kubelet of KWOK_NODES fake Nodes (default
# 10), each of which holds KWOK_MAX_PODS pods (default 110, the kubelet's maxPods). Their pods
# never start a process: they turn Running with an IP, stay so until deleted, and then go
# (ci/kwok/kwok.yaml). For the control plane at scale: 1,000 brokers need 10 such nodes, 10,000
# need 91. The nodes are labelled minicluster.dev/kwok=true and tainted with it (NoSchedule),
# so only pods that tolerate it land there. State, logs and pids: $CLUSTER_DIR/kwok.
# Idempotent: run it again with another KWOK_NODES to add nodes. ci/kwok/down.sh removes it all.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$REPO/.cluster}
KWOK_NODES=${KWOK_NODES:-10}
KWOK_MAX_PODS=${KWOK_MAX_PODS:-110}
DIR=$CLUSTER_DIR/kwok
KUBECONFIG=$CLUSTER_DIR/kubeconfig
export KUBECONFIG
SAY_AS=kwok
# shellcheck source=../lib/say.sh
source "$REPO/ci/lib/say.sh"

[[ $KWOK_NODES =~ ^[0-9]+$ && $KWOK_NODES -ge 1 ]] || die "KWOK_NODES=$KWOK_NODES: give the number of simulated nodes, e.g. 10"
[[ $KWOK_MAX_PODS =~ ^[0-9]+$ && $KWOK_MAX_PODS -ge 1 ]] || die "KWOK_MAX_PODS=$KWOK_MAX_PODS: give the pods each node holds, e.g. 110"
[[ -f $KUBECONFIG ]] || die "no cluster: $KUBECONFIG is missing; start one with 'make cluster-up' (or set CLUSTER_DIR)"
KUBECTL=$CLUSTER_DIR/bin/kubectl
[[ -x $KUBECTL ]] || KUBECTL=$(command -v kubectl) || die "no kubectl in $CLUSTER_DIR/bin or on PATH"
"$KUBECTL" get --raw /readyz >/dev/null || die "the cluster in $KUBECONFIG does not answer"

bash "$REPO/ci/kwok/build.sh"
KWOK=$(bash "$REPO/ci/kwok/build.sh" --print)
mkdir -p "$DIR"

alive() { [[ -f $DIR/$1.pid ]] && kill -0 "$(<"$DIR/$1.pid")" 2>/dev/null; }
# Each in its own session: they outlive this script and a make that started it.
if alive watchproxy; then
	echo "kwok: watchproxy already running (pid $(<"$DIR/watchproxy.pid"))"
else
	# kwok talks to the API server through ci/kwok/watchproxy (see there why), with a token of
	# its own in the path: the proxy holds the admin credentials.
	(cd "$REPO" && go build -o "$DIR/watchproxy" ./ci/kwok/watchproxy)
	(umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$DIR/token")
	rm -f "$DIR/watchproxy.addr"
	setsid "$DIR/watchproxy" --kubeconfig="$KUBECONFIG" --token-file="$DIR/token" --address-file="$DIR/watchproxy.addr" \
		>"$DIR/watchproxy.log" 2>&1 </dev/null &
	echo $! >"$DIR/watchproxy.pid"
	for ((t = 0; t < 50; t++)); do [[ -s $DIR/watchproxy.addr ]] && break; sleep 0.1; done
	[[ -s $DIR/watchproxy.addr ]] || { cat "$DIR/watchproxy.log" >&2; die "watchproxy did not start (log: $DIR/watchproxy.log)"; }
	(umask 077 && cat >"$DIR/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: "http://$(<"$DIR/watchproxy.addr")/$(<"$DIR/token")"}}]
users: [{name: kwok, user: {}}]
contexts: [{name: kwok, context: {cluster: proxy, user: kwok}}]
current-context: kwok
YAML
	)
fi
if alive kwok; then
	echo "kwok: already running (pid $(<"$DIR/kwok.pid"))"
else
	cp "$REPO/ci/kwok/kwok.yaml" "$DIR/kwok.yaml"
	setsid "$KWOK" --kubeconfig="$DIR/kubeconfig" --config="$DIR/kwok.yaml" >"$DIR/kwok.log" 2>&1 </dev/null &
	echo $! >"$DIR/kwok.pid"
	echo "kwok: started (pid $!, log $DIR/kwok.log)"
fi

# The nodes: capacity as a kubelet with maxPods=KWOK_MAX_PODS would report it.
{
	for ((i = 0; i < KWOK_NODES; i++)); do
		cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  labels:
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    minicluster.dev/kwok: "true"
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
spec:
  taints:
    - {key: minicluster.dev/kwok, value: "true", effect: NoSchedule}
status:
  capacity: {cpu: "32", memory: 256Gi, pods: "$KWOK_MAX_PODS"}
  allocatable: {cpu: "32", memory: 256Gi, pods: "$KWOK_MAX_PODS"}
YAML
	done
} >"$DIR/nodes.yaml"
"$KUBECTL" apply --server-side --field-manager=minicluster-kwok -f "$DIR/nodes.yaml" >/dev/null

# Ready once kwok has taken each node through its first stage.
for ((t = 0; t < 120; t++)); do
	alive kwok || { tail -20 "$DIR/kwok.log" >&2; die "kwok exited (log: $DIR/kwok.log)"; }
	ready=$("$KUBECTL" get nodes -l minicluster.dev/kwok=true -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)
	((ready >= KWOK_NODES)) && break
	sleep 1
done
((ready >= KWOK_NODES)) || die "only $ready of $KWOK_NODES simulated nodes turned Ready in 120 s (log: $DIR/kwok.log)"
total=$("$KUBECTL" get nodes -l minicluster.dev/kwok=true -o jsonpath='{range .items[*]}{.status.allocatable.pods}{"\n"}{end}' | awk '{s += $1} END {print s}')
echo "kwok: $ready simulated nodes Ready, room for $total pods; pods get there with"
echo "  nodeSelector {minicluster.dev/kwok: \"true\"} and a toleration of minicluster.dev/kwok (NoSchedule)"
