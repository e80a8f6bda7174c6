#!/usr/bin/env bash
# up.sh runs Kueue (the job queueing controller the Flux Operator's users queue MiniClusters
# with) in the local cluster ($CLUSTER_DIR/kubeconfig): built from source once (build.sh), as an
# image of its static binary (go run ./ci/images --kueue-dir) pushed to the cluster's registry,
# and its objects from Kueue's own kustomization, narrowed by ci/kueue/manifests (batch/job the
# only integration, Jobs without the kueue.x-k8s.io/queue-name label never seen by its webhooks,
# no visibility APIService). Kueue makes its webhook certificate itself; up.sh returns once the
# webhook answers. Idempotent. ci/kueue/down.sh removes it all, webhooks first.
# Files: $CLUSTER_DIR/kueue (the image tarball, the applied manifests, logs).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$REPO/.cluster}
# shellcheck source=../cluster/lib.sh
source "$REPO/ci/cluster/lib.sh"
DIR=$CLUSTER_DIR/kueue
export KUBECONFIG=$CLUSTER_DIR/kubeconfig
SAY_AS=kueue
# shellcheck source=../lib/say.sh
source "$REPO/ci/lib/say.sh"

[[ -f $KUBECONFIG ]] || die "no cluster: $KUBECONFIG is missing; start one with 'make cluster-up' (or set CLUSTER_DIR)"
KUBECTL=$CLUSTER_DIR/bin/kubectl
[[ -x $KUBECTL ]] || KUBECTL=$(command -v kubectl) || die "no kubectl in $CLUSTER_DIR/bin or on PATH"
"$KUBECTL" get --raw /readyz >/dev/null || die "the cluster in $KUBECONFIG does not answer"
# The local cluster pulls from its registry; another cluster: set CLUSTER_REGISTRY to one it pulls from.
REGISTRY=${KUEUE_REGISTRY:-$CLUSTER_REGISTRY/minicluster}

bash "$REPO/ci/kueue/build.sh"
BUILD=$(bash "$REPO/ci/kueue/build.sh" --print-dir)
VERSION=$(<"$BUILD/version")
mkdir -p "$DIR/images"
cd "$REPO"
go run ./ci/images --out "$DIR/images" --kueue-dir "$BUILD" >/dev/null
go run ./ci/push --registry "$REGISTRY" --insecure "$DIR/images" >/dev/null
go run ./ci/kueue/manifests --src "$BUILD/src" --image "$REGISTRY/kueue:$VERSION" >"$DIR/manifests.yaml"

start=$SECONDS
# Server-side: Kueue's CRDs are larger than client-side apply's last-applied annotation allows.
"$KUBECTL" apply --server-side --force-conflicts --field-manager=minicluster-kueue -f "$DIR/manifests.yaml" >"$DIR/apply.log" ||
	die "kubectl apply failed (log: $DIR/apply.log)"
logs() { "$KUBECTL" -n kueue-system logs deployment/kueue-controller-manager --tail=30 >&2 || true; }
ready() { "$KUBECTL" -n kueue-system rollout status deployment/kueue-controller-manager --timeout="$1" >/dev/null; }
filled() { [[ -n $("$KUBECTL" -n kueue-system get secret kueue-webhook-server-cert -o jsonpath='{.data.tls\.crt}' 2>/dev/null) ]]; }
# within SECONDS COMMAND...: true once COMMAND succeeds, asked every second; false after SECONDS.
within() {
	local t
	for ((t = 0; t < $1; t++)); do
		"${@:2}" && return 0
		sleep 1
	done
	return 1
}

# Kueue's first pod writes its webhook certificate into a Secret, then stays not ready until the
# Secret's volume in the pod shows it, which the kubelet refreshes only on its sync period: 95 s
# here, more than 180 s on a busy machine. A pod started once the Secret is filled finds the
# certificate at once, so restart it then unless it is already ready (Recreate: never two Kueues).
within 180 filled || { logs; die "Kueue wrote no certificate into Secret kueue-system/kueue-webhook-server-cert in 180 s; kubectl -n kueue-system describe pods"; }
if ! ready 5s 2>/dev/null; then
	"$KUBECTL" -n kueue-system rollout restart deployment/kueue-controller-manager >/dev/null
fi
ready 180s || { logs; die "the Kueue controller did not become ready in 180 s"; }

# The webhook answers once the CA is in the webhook configurations: a dry-run of a queued Job
# goes through the mutating webhook, which suspends it.
probe=$(cat <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: kueue-webhook-probe
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: kueue-webhook-probe}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: probe, image: probe, command: ["true"]}]
YAML
)
answers() { got=$("$KUBECTL" create --dry-run=server -o jsonpath='{.spec.suspend}' -f - <<<"$probe" 2>&1) && [[ $got == true ]]; }
within 120 answers || die "the webhook did not answer in 120 s (last: $got); kubectl -n kueue-system logs deployment/kueue-controller-manager"
echo "kueue: $VERSION running, its webhook answers ($((SECONDS - start)) s after apply); queue a Job with the label kueue.x-k8s.io/queue-name=<LocalQueue>"
