#!/usr/bin/env bash
# make demo: a MiniCluster from nothing, step by step, saying what happens. Builds helm, the
# project's binaries and the test images; starts the local cluster when none answers in
# KUBECONFIG; runs values/hello-world.yaml (the lead prints every broker's hostname, the Job
# completes) and values/openmpi.yaml (an MPI program across 4 brokers); then an interactive
# MiniCluster of 4, resized to 6, and uninstalled to nothing.
# Real Flux: flux-core built from source (ci/flux), copied into a Debian image without Flux from
# a view image with the flux-view layout, as the chart's default does with the real ones.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
source ci/cluster/lib.sh # CLUSTER_DIR, KUBECONFIG_FILE, CLUSTER_BIN (where the cluster's kubectl is)
export KUBECONFIG=${KUBECONFIG:-$KUBECONFIG_FILE}
# Helm 4 by default (Helm 3 works too: DEMO_HELM=$HELM3).
HELM=${DEMO_HELM:-${HELM4:-$REPO/bin/tools/helm4/helm}}
NS=${DEMO_NAMESPACE:-minicluster-demo}
RELEASE=${DEMO_RELEASE:-flux-sample}
CHART=${DEMO_CHART:-charts/minicluster}
read -ra EXTRA <<<"${DEMO_HELM_ARGS:-}" # e.g. --post-renderer bin/minicluster-postrender
# images PREFIX: the chart's values for the images `make images` built, named PREFIX<name>:<VERSION>.
images() {
	local tag
	tag=$(cat VERSION)
	MPI_IMAGE=${1}mpi:$tag
	IMAGES=("${EXTRA[@]}" --set "image=${1}app:$tag,imagePullPolicy=IfNotPresent,flux.view.image=${1}flux-view:$tag,flux.view.imagePullPolicy=IfNotPresent,keygen.image.pullPolicy=IfNotPresent,tests.image=${1}busybox:$tag,tests.imagePullPolicy=IfNotPresent")
	if [[ $1 != localhost/minicluster/ ]]; then IMAGES+=(--set "imageRegistry=${1%/}"); fi
}
images localhost/minicluster/
SEL="app.kubernetes.io/instance=$RELEASE"
LEAD="$SEL,batch.kubernetes.io/job-completion-index=0"

T0=$(date +%s%N)
now() { local ds=$((($(date +%s%N) - T0) / 100000000)); echo "$((ds / 10)).$((ds % 10))s"; }
# step NAME: a new step; the end of the demo lists how long each took.
steps=() step_starts=()
step() {
	printf '\n==== [%s] %s\n' "$(now)" "$*"
	steps+=("$1") step_starts+=("$(date +%s%N)")
}
# detail prints a line under the step's heading.
detail() { printf '     %s\n' "$*"; }

step "build: helm, flux-keygen, minicluster-postrender, flux-core from source, the container images"
# -s: only what the steps detail (each long one says what it builds, every 30 s, and how long it took).
# Only the helm the demo runs (one of the project's: a Makefile target; another: used as it is).
helm_target=()
if [[ $HELM == "$REPO/bin/tools/helm3/helm" || $HELM == "$REPO/bin/tools/helm4/helm" ]]; then helm_target=("$HELM"); fi
make -s --no-print-directory "${helm_target[@]}" build images
detail "$HELM, bin/flux-keygen, bin/minicluster-postrender, bin/images/*.tar"

step "cluster"
if "$HELM" list -n default >/dev/null 2>&1; then
	detail "a cluster answers at KUBECONFIG=$KUBECONFIG: using it"
	if [[ $KUBECONFIG == "$KUBECONFIG_FILE" ]]; then
		detail "pushing the freshly built images to its registry $CLUSTER_REGISTRY (the pods pull them, as on any cluster)"
		go run ./ci/push --registry "$CLUSTER_REGISTRY/minicluster" --version "$(cat VERSION)" --insecure bin/images >/dev/null
		images "$CLUSTER_REGISTRY/minicluster/"
	else
		detail "using the images under their local names: load bin/images/*.tar into that cluster first (make kind-up does)"
	fi
else
	detail "no cluster answers at KUBECONFIG=$KUBECONFIG: starting the local one (make cluster-up; about 6 min the first time, to build it)"
	make --no-print-directory cluster-up
	export KUBECONFIG=$KUBECONFIG_FILE
	detail "pushing the images to its registry $CLUSTER_REGISTRY (the pods pull them, as on any cluster)"
	go run ./ci/push --registry "$CLUSTER_REGISTRY/minicluster" --version "$(cat VERSION)" --insecure bin/images >/dev/null
	images "$CLUSTER_REGISTRY/minicluster/"
fi
if [[ -x $CLUSTER_DIR/bin/kubectl ]]; then KUBECTL=$CLUSTER_DIR/bin/kubectl
elif [[ -x $CLUSTER_BIN/kubectl ]]; then KUBECTL=$CLUSTER_BIN/kubectl
else KUBECTL=$(command -v kubectl) || { echo "demo: no kubectl ($CLUSTER_DIR/bin/kubectl or on PATH) to read pod logs" >&2; exit 1; }; fi
k() { "$KUBECTL" -n "$NS" "$@"; }
"$KUBECTL" get namespace "$NS" >/dev/null 2>&1 || "$KUBECTL" create namespace "$NS" >/dev/null
"$HELM" uninstall "$RELEASE" -n "$NS" --ignore-not-found >/dev/null 2>&1 || true

# flux_in_lead ARGS...: runs flux in the running lead, as NOTES.txt shows.
flux_in_lead() {
	local lead
	lead=$(k get pods -o name --field-selector=status.phase=Running -l "$LEAD,app.kubernetes.io/component=broker")
	[[ -n $lead ]] || return 1
	k exec "$lead" -c flux -- flux "$@"
}

# wait_up N SECONDS: wait until Flux in the lead shows N nodes up. The output is captured
# before it is searched: a pipe into grep -q would race the command under pipefail.
wait_up() {
	local deadline=$((SECONDS + $2)) out
	while :; do
		out=$(flux_in_lead resource list --no-header --format '{state} {nnodes}' 2>/dev/null) || out=
		[[ $(awk '$1 != "down" {n += $2} END {print n + 0}' <<<"$out") == "$1" ]] && return 0
		((SECONDS < deadline)) || { echo "demo: Flux never showed $1 nodes up (last: ${out:-no answer})" >&2; k get pods -l "$SEL" >&2; exit 1; }
		sleep 0.5
	done
}

# nothing_left: no object of the release remains (by label or by name).
nothing_left() {
	local kinds=jobs,pods,services,configmaps,secrets,serviceaccounts,roles,rolebindings
	[[ -z $(k get "$kinds" -l "$SEL" -o name 2>/dev/null) ]] &&
		! k get "secret/$RELEASE-curve" "configmap/$RELEASE-broker" "job/$RELEASE-keygen" >/dev/null 2>&1
}

step "helm install $RELEASE -f values/hello-world.yaml (4 brokers; the lead runs hostname as 4 tasks under Flux)"
"$HELM" install "$RELEASE" "$CHART" -n "$NS" -f values/hello-world.yaml "${IMAGES[@]}" | sed -n '1,/^NOTES/p' | sed 's/^/     /'
k wait --for=condition=complete "job/$RELEASE" --timeout=300s >/dev/null
detail "the keygen Job made the CURVE certificate while the brokers started: $(k get secret "$RELEASE-curve" -o name)"
step "the Job completed; the lead broker's log (Flux's lines, then the command's output):"
k logs -l "$LEAD" -c flux --tail=-1 >"${TMPDIR:-/tmp}/demo-lead.log"
sed 's/^/     | /' "${TMPDIR:-/tmp}/demo-lead.log"
"$HELM" uninstall "$RELEASE" -n "$NS" >/dev/null
until nothing_left; do sleep 0.2; done
step "uninstalled: nothing of $RELEASE is left"

step "helm install $RELEASE -f values/openmpi.yaml (MPI: 8 OpenMPI ranks on 4 brokers, Fluxion schedules, flux-pmix serves PMIx)"
"$HELM" install "$RELEASE" "$CHART" -n "$NS" -f values/openmpi.yaml "${IMAGES[@]}" --set "image=$MPI_IMAGE" >/dev/null
k wait --for=condition=complete "job/$RELEASE" --timeout=300s >/dev/null
detail "the Job completed; the lead's log, the program's output (hello from each rank, then the ring and allreduce across the pods):"
k logs -l "$LEAD" -c flux --tail=-1 >"${TMPDIR:-/tmp}/demo-mpi.log"
{ grep "^hello from" "${TMPDIR:-/tmp}/demo-mpi.log" | sort -V; grep -E "^(ring:|mpi-hello)" "${TMPDIR:-/tmp}/demo-mpi.log"; } | sed 's/^/     | /'
"$HELM" uninstall "$RELEASE" -n "$NS" >/dev/null
until nothing_left; do sleep 0.2; done

step "helm install $RELEASE -f values/interactive.yaml (4 brokers that stay up)"
"$HELM" install "$RELEASE" "$CHART" -n "$NS" -f values/interactive.yaml "${IMAGES[@]}" >/dev/null
wait_up 4 300
detail "flux resource list in the lead:"
flux_in_lead resource list | sed 's/^/     | /'

step "helm upgrade --reuse-values --set size=6 (resize: the Job's parallelism and completions change, broker.toml does not)"
"$HELM" upgrade "$RELEASE" "$CHART" -n "$NS" --reuse-values --set size=6 >/dev/null
wait_up 6 180
k get pods -l "$SEL,app.kubernetes.io/component=broker" | sed 's/^/     /'
detail "flux run -N 6 hostname:"
flux_in_lead run -N 6 hostname | sort | sed 's/^/     | /'

step "helm test $RELEASE (every broker's FQDN resolves, the lead answers as a ZeroMQ CURVE server)"
"$HELM" test "$RELEASE" -n "$NS" | grep -E "^(TEST SUITE|Phase)" | sed 's/^/     /'

step "helm uninstall $RELEASE"
"$HELM" uninstall "$RELEASE" -n "$NS" >/dev/null
start=$(date +%s%N)
until nothing_left; do sleep 0.1; done
detail "nothing of $RELEASE is left after $((($(date +%s%N) - start) / 1000000)) ms (Jobs, Pods, Services, ConfigMaps, Secrets incl. the certificate, ServiceAccounts, Roles, RoleBindings)"
"$KUBECTL" delete namespace "$NS" --wait=false >/dev/null
step "done"
detail "where the time went:"
for ((i = 0; i + 1 < ${#steps[@]}; i++)); do
	ds=$(((step_starts[i + 1] - step_starts[i]) / 100000000))
	printf '     %6s  %s\n' "$((ds / 10)).$((ds % 10))s" "${steps[i]:0:90}"
done
detail "in all: $(now)"
