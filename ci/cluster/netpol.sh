#!/usr/bin/env bash
# netpol.sh starts the local cluster's NetworkPolicy enforcer (kube-router's firewall alone, built
# by build.sh from netpol/main.go) on every node of the running cluster where it does not run
# yet; up.sh starts it with each node, so this is for a cluster started before it did. Its log:
# $CLUSTER_DIR/logs/netpol*.log; down.sh stops it. Idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v ipset >/dev/null || die "ipset is missing (the enforcer keeps its address sets there): apt-get install ipset"
[[ -x $CLUSTER_BIN/netpol ]] || bash "$(dirname "${BASH_SOURCE[0]}")/build.sh"
kubectl_admin get --raw /readyz >/dev/null 2>&1 || die "no cluster answers at $KUBECONFIG_FILE: start it with make cluster-up"
for ((k = 1; k <= $(node_count); k++)); do
	node_vars "$k"
	if alive "netpol$N_SFX"; then
		say "node $N_NAME: NetworkPolicy enforcer already running"
		continue
	fi
	start_netpol
	say "node $N_NAME: NetworkPolicy enforcer started (log: $LOG_DIR/netpol$N_SFX.log)"
done
