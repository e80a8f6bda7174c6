#!/usr/bin/env bash
# down.sh stops the kwok (and its watchproxy) that ci/kwok/up.sh started and deletes its simulated nodes (the
# cluster's pod garbage collector then removes the pods that were bound to them).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$REPO/.cluster}
DIR=$CLUSTER_DIR/kwok
export KUBECONFIG=$CLUSTER_DIR/kubeconfig
KUBECTL=$CLUSTER_DIR/bin/kubectl
[[ -x $KUBECTL ]] || KUBECTL=$(command -v kubectl || echo kubectl)

# Nodes first, while kwok still deletes the pods on them; a cluster that is gone has none.
if [[ -f $KUBECONFIG ]] && "$KUBECTL" get --raw /readyz >/dev/null 2>&1; then
	"$KUBECTL" delete nodes -l minicluster.dev/kwok=true --wait=true --timeout=120s
fi
for name in kwok watchproxy; do
	[[ -f $DIR/$name.pid ]] || continue
	pid=$(<"$DIR/$name.pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		for ((t = 0; t < 50; t++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
	fi
	rm -f "$DIR/$name.pid"
	echo "kwok: stopped $name (pid $pid)"
done
