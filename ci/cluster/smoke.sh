#!/usr/bin/env bash
# smoke.sh checks a running cluster the way the chart uses it: an indexed Job of SIZE busybox
# pods behind a headless Service (publishNotReadyAddresses) where every pod must resolve every
# pod's FQDN <job>-<i>.<svc>.<ns>.svc.cluster.local and reach the API server's Service IP.
# It prints how long that took and removes what it made. Needs the busybox test image
# (localhost/minicluster/busybox:test, from `make images`).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SIZE=${SIZE:-3}
NS=minicluster-smoke
export KUBECONFIG=${KUBECONFIG:-$KUBECONFIG_FILE}
k() { "$CLUSTER_BIN/kubectl" "$@"; }
[[ -f $KUBECONFIG ]] || die "no kubeconfig at $KUBECONFIG; start the cluster first: make cluster-up"

k delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
k create namespace "$NS" >/dev/null
trap 'k delete namespace "$NS" --wait=false >/dev/null 2>&1 || true' EXIT
t0=$(date +%s%N)
k apply -n "$NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: smoke}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {batch.kubernetes.io/job-name: smoke}
---
apiVersion: batch/v1
kind: Job
metadata: {name: smoke}
spec:
  completionMode: Indexed
  completions: $SIZE
  parallelism: $SIZE
  backoffLimit: 0
  template:
    spec:
      subdomain: smoke
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: check
        image: localhost/minicluster/busybox:test
        imagePullPolicy: IfNotPresent
        command:
        - /bin/sh
        - -c
        - |
          for i in \$(seq 0 $((SIZE - 1))); do
            n=0
            until nslookup smoke-\$i.smoke.$NS.svc.$CLUSTER_DOMAIN >/dev/null 2>&1; do
              n=\$((n + 1)); [ \$n -lt 240 ] || { echo "smoke-\$i unresolved"; exit 1; }; sleep 0.25
            done
          done
          nc -w 3 kubernetes.default.svc.$CLUSTER_DOMAIN 443 </dev/null || { echo "API Service unreachable"; exit 1; }
          echo "\$(hostname): all $SIZE FQDNs resolve, API Service reachable"
          # Stay resolvable a little for peers still checking.
          sleep 5
EOF
# From the host, through the host routes: when do all FQDNs resolve?
resolvable=""
if command -v busybox >/dev/null; then
	for ((n = 0; n < 480; n++)); do
		ok=0
		for ((i = 0; i < SIZE; i++)); do
			busybox nslookup "smoke-$i.smoke.$NS.svc.$CLUSTER_DOMAIN" "$NODE_IP" >/dev/null 2>&1 && ok=$((ok + 1))
		done
		((ok == SIZE)) && break
		sleep 0.25
	done
	ds=$((($(date +%s%N) - t0) / 100000000))
	resolvable="all $SIZE FQDNs resolvable from the host $((ds / 10)).$((ds % 10))s after apply; "
fi
if ! k wait -n "$NS" --for=condition=Complete job/smoke --timeout=120s >/dev/null; then
	k get -n "$NS" pods -o wide >&2
	k logs -n "$NS" -l batch.kubernetes.io/job-name=smoke --prefix >&2 || true
	die "smoke: the Job did not complete"
fi
ds=$((($(date +%s%N) - t0) / 100000000))
k logs -n "$NS" -l batch.kubernetes.io/job-name=smoke --prefix
say "smoke: ${resolvable}Job of $SIZE complete (every pod resolved every pod) $((ds / 10)).$((ds % 10))s after apply"
