#!/usr/bin/env bash
# down.sh stops the registry that ci/registry/up.sh started (the pid in $REGISTRY_DIR, default
# ${CLUSTER_DIR:-<repo>/.cluster}/registry): SIGTERM, up to 10 s of grace, then SIGKILL. Its
# storage stays (ci/cluster/down.sh removes $CLUSTER_DIR's state, the registry's with it).
# Idempotent: with nothing running it says so and exits 0.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$REPO/.cluster}
REGISTRY_DIR=${REGISTRY_DIR:-$CLUSTER_DIR/registry}
PID_FILE=$REGISTRY_DIR/registry.pid
ADDR_FILE=$REGISTRY_DIR/registry.addr

SAY_AS=registry
# shellcheck source=../lib/say.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/say.sh"

# alive PID: runs, is a docker-registry (not a recycled pid) and is not a zombie.
alive() {
	[[ -d /proc/$1 ]] || return 1
	[[ $(cat "/proc/$1/comm" 2>/dev/null) == docker-registr* ]] || return 1
	[[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

pid=$(cat "$PID_FILE" 2>/dev/null || true)
if [[ ! $pid =~ ^[0-9]+$ ]] || ! alive "$pid"; then
	rm -f "$PID_FILE" "$ADDR_FILE"
	say "not running (nothing to do)"
	exit 0
fi
addr=$(cat "$ADDR_FILE" 2>/dev/null || echo '?')
how=SIGTERM
kill -TERM "$pid" 2>/dev/null || true
for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
if alive "$pid"; then
	kill -KILL "$pid" 2>/dev/null || true
	how=SIGKILL
	for ((j = 0; j < 20; j++)); do alive "$pid" || break; sleep 0.1; done
fi
rm -f "$PID_FILE" "$ADDR_FILE"
say "stopped (pid $pid on $addr, $how, $((i / 10)).$((i % 10))s)"
