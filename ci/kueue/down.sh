#!/usr/bin/env bash
# down.sh removes what ci/kueue/up.sh put in the cluster. The webhook configurations go first, so
# that from then on no Job (nor any Kueue object) waits on a Kueue that is going. Then Kueue's
# objects in every namespace (Workloads, LocalQueues, ClusterQueues...): the running controller
# takes its finalizers off; any it left are taken off here. Then the rest: the Deployment,
# namespace kueue-system, RBAC, CRDs. Jobs that were waiting in a queue stay suspended: delete
# them, or take their kueue.x-k8s.io/queue-name label off and unsuspend them.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$REPO/.cluster}
DIR=$CLUSTER_DIR/kueue
export KUBECONFIG=$CLUSTER_DIR/kubeconfig
KUBECTL=$CLUSTER_DIR/bin/kubectl
[[ -x $KUBECTL ]] || KUBECTL=$(command -v kubectl || echo kubectl)

if [[ ! -f $KUBECONFIG ]] || ! "$KUBECTL" get --raw /readyz >/dev/null 2>&1; then
	echo "kueue: no cluster answers at $KUBECONFIG: nothing to remove"
	exit 0
fi
"$KUBECTL" delete mutatingwebhookconfiguration kueue-mutating-webhook-configuration --ignore-not-found
"$KUBECTL" delete validatingwebhookconfiguration kueue-validating-webhook-configuration --ignore-not-found

# Kueue's kinds that the API server serves (none when its CRDs are gone).
kinds=$("$KUBECTL" api-resources --api-group=kueue.x-k8s.io -o name 2>/dev/null || true)
if [[ -n $kinds ]]; then
	kinds=${kinds//$'\n'/,}
	"$KUBECTL" delete "$kinds" --all --all-namespaces --wait=false --ignore-not-found >/dev/null
	for ((t = 0; t < 30; t++)); do
		[[ -z $("$KUBECTL" get "$kinds" --all-namespaces -o name 2>/dev/null) ]] && break
		sleep 1
	done
	# What the controller did not finish (it was gone, or slow): its finalizers off.
	"$KUBECTL" get "$kinds" --all-namespaces -o jsonpath='{range .items[*]}{.kind}{" "}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}' 2>/dev/null |
		while read -r kind ns name; do
			[[ -n $name ]] || { name=$ns ns=''; }
			"$KUBECTL" patch "${kind,,}.kueue.x-k8s.io" "$name" ${ns:+-n "$ns"} --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null || true
		done
fi

if [[ -f $DIR/manifests.yaml ]]; then
	"$KUBECTL" delete -f "$DIR/manifests.yaml" --ignore-not-found --wait=true --timeout=120s >/dev/null
else
	# up.sh never finished here: what it would have made, by name.
	"$KUBECTL" delete namespace kueue-system --ignore-not-found --wait=true --timeout=120s
	"$KUBECTL" get crd -o name | grep '\.kueue\.x-k8s\.io$' | xargs -r "$KUBECTL" delete --ignore-not-found
fi
echo "kueue: removed (webhooks, Kueue's objects, CRDs, RBAC, namespace kueue-system)"
