#!/usr/bin/env bash
# up.sh starts a plain-HTTP OCI registry: Debian's docker-registry package (the CNCF distribution
# registry, /usr/bin/docker-registry), with a configuration of our own, listening on
# $REGISTRY_ADDR (host:port, default 127.0.0.1:5000). Storage, configuration, pid and log live in
# $REGISTRY_DIR (default ${CLUSTER_DIR:-<repo>/.cluster}/registry). The package's own init/systemd
# service is never used: it would listen on :5000 with /etc/docker/registry/config.yml.
# Idempotent: when our registry already runs on that address it says so and exits 0.
# REGISTRY_HTPASSWD=FILE (an htpasswd file of bcrypt entries) makes it want a login (basic auth
# over plain HTTP: for tests only).
# ci/cluster/up.sh runs it inside the cluster's network namespace on the node IP, so that the
# cluster's containerd pulls from it; `bash ci/registry/down.sh` stops it.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$REPO/.cluster}
REGISTRY_DIR=${REGISTRY_DIR:-$CLUSTER_DIR/registry}
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
REGISTRY_BIN=${REGISTRY_BIN:-/usr/bin/docker-registry}
REGISTRY_HTPASSWD=${REGISTRY_HTPASSWD:-}
PID_FILE=$REGISTRY_DIR/registry.pid
ADDR_FILE=$REGISTRY_DIR/registry.addr
LOG_FILE=$REGISTRY_DIR/registry.log
CONFIG=$REGISTRY_DIR/config.yml

SAY_AS=registry
# shellcheck source=../lib/say.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/say.sh"

# ---- address: host:port, [v6]:port -------------------------------------------------------
[[ $REGISTRY_ADDR =~ ^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]*):([0-9]{1,5})$ ]] ||
	die "REGISTRY_ADDR=$REGISTRY_ADDR is not host:port (e.g. 127.0.0.1:5000 or 10.250.0.2:5000)"
host=${BASH_REMATCH[1]} port=${BASH_REMATCH[2]}
((port > 0 && port < 65536)) || die "REGISTRY_ADDR=$REGISTRY_ADDR: port $port out of range"
# Where to probe it from here: a wildcard address answers on loopback.
probe_host=${host#[}
probe_host=${probe_host%]}
case $probe_host in '' | 0.0.0.0) probe_host=127.0.0.1 ;; ::) probe_host=::1 ;; esac

# ours_alive: the process recorded in $PID_FILE runs and is a docker-registry.
ours_alive() {
	local pid
	[[ -f $PID_FILE ]] || return 1
	pid=$(<"$PID_FILE")
	[[ $pid =~ ^[0-9]+$ && -d /proc/$pid ]] || return 1
	[[ $(</proc/"$pid"/comm) == docker-registr* ]] || return 1
	[[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]
}

# answers: GET /v2/ on the address gives 200, or 401 when it wants a login (bash's /dev/tcp: no
# curl on a fresh machine).
answers() {
	local status
	exec 3<>"/dev/tcp/$probe_host/$port" || return 1
	printf 'GET /v2/ HTTP/1.0\r\nHost: %s\r\n\r\n' "$REGISTRY_ADDR" >&3
	IFS= read -r -t 2 status <&3 || status=
	exec 3>&- 3<&-
	[[ $status == "HTTP/1."[01]" 200"* || (-n $REGISTRY_HTPASSWD && $status == "HTTP/1."[01]" 401"*) ]]
}

port_taken() { (exec 3<>"/dev/tcp/$probe_host/$port") 2>/dev/null; }

if ours_alive; then
	running_addr=$(cat "$ADDR_FILE" 2>/dev/null || echo '?')
	[[ $running_addr == "$REGISTRY_ADDR" ]] ||
		die "already running on $running_addr (pid $(<"$PID_FILE")), not $REGISTRY_ADDR: stop it first (bash ci/registry/down.sh)"
	say "already up at http://$REGISTRY_ADDR (pid $(<"$PID_FILE"), storage $REGISTRY_DIR/data)"
	exit 0
fi

# ---- the binary ---------------------------------------------------------------------------
if [[ ! -x $REGISTRY_BIN ]]; then
	if [[ $REGISTRY_BIN != /usr/bin/docker-registry ]] || (($(id -u) != 0)) || ! command -v apt-get >/dev/null; then
		die "no $REGISTRY_BIN; install Debian's registry as root: apt-get install docker-registry"
	fi
	say "installing Debian's docker-registry package"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq docker-registry >/dev/null
	# Under systemd the package enables and starts its own service on :5000; we do not use it.
	if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
		systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
		say "disabled the package's docker-registry.service (this script runs its own)"
	fi
fi

port_taken && die "something else already listens on $REGISTRY_ADDR (the docker-registry package's own service? 'systemctl disable --now docker-registry' or choose another REGISTRY_ADDR)"

# ---- configuration and start --------------------------------------------------------------
mkdir -p "$REGISTRY_DIR/data"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
cat >"$CONFIG" <<YAML
# Written by ci/registry/up.sh: a plain-HTTP registry, no authentication, for local use only.
version: 0.1
log:
  level: info
  fields:
    service: minicluster-registry
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/data
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $REGISTRY_ADDR
  secret: $secret
  headers:
    X-Content-Type-Options: [nosniff]
health:
  storagedriver:
    enabled: true
    interval: 10s
    threshold: 3
YAML
if [[ -n $REGISTRY_HTPASSWD ]]; then
	[[ -s $REGISTRY_HTPASSWD ]] || die "REGISTRY_HTPASSWD=$REGISTRY_HTPASSWD: no such file, or empty"
	sed -i 's/^# Written by ci\/registry\/up.sh: a plain-HTTP registry, no authentication,/# Written by ci\/registry\/up.sh: a plain-HTTP registry with basic authentication,/' "$CONFIG"
	cat >>"$CONFIG" <<YAML
auth:
  htpasswd:
    realm: minicluster
    path: $REGISTRY_HTPASSWD
YAML
fi
chmod 600 "$CONFIG"
echo "$REGISTRY_ADDR" >"$ADDR_FILE"
# setsid and no inherited descriptors beyond stdio: the registry outlives this script and must not
# hold its caller's pipes (or the cluster scripts' lock, which ci/cluster/up.sh closes for us).
setsid "$REGISTRY_BIN" serve "$CONFIG" >>"$LOG_FILE" 2>&1 </dev/null &
echo $! >"$PID_FILE"
disown $!

pid=$(<"$PID_FILE")
# (Right after the fork the child may not have become docker-registry yet: only its pid counts.)
for ((i = 0; i < 100; i++)); do
	if [[ ! -d /proc/$pid || $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]]; then
		tail -n 20 "$LOG_FILE" >&2 2>/dev/null
		rm -f "$PID_FILE" "$ADDR_FILE"
		die "docker-registry exited at start (log: $LOG_FILE)"
	fi
	if answers 2>/dev/null && ours_alive; then
		say "up at http://$REGISTRY_ADDR in $((i / 10)).$((i % 10))s (pid $(<"$PID_FILE"), storage $REGISTRY_DIR/data, log $LOG_FILE)"
		exit 0
	fi
	sleep 0.1
done
tail -n 20 "$LOG_FILE" >&2
die "docker-registry (pid $(<"$PID_FILE")) does not answer GET http://$REGISTRY_ADDR/v2/ after 10s (log: $LOG_FILE)"
