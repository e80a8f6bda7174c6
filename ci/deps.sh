#!/usr/bin/env bash
# Installs the Debian packages the project needs when any is missing (root, apt): the local
# cluster's parts (ipset for its NetworkPolicy enforcer), busybox-static for the test images, python3-zmq for the real-ZeroMQ test and
# gnupg for the signed-release test (ci/release); shellcheck and graphviz (docs/architecture.svg)
# for `make lint` and `make docs`; the Flux RESTful API's real Python client's dependencies,
# pytest and FastAPI (the reference's own test suites) and chromium for the API's tests; a
# Prometheus server that the autoscale test runs to scrape a MiniCluster's metrics (test/e2e).
# A no-op when all are there, so `make test` and `make demo` can always call it.
set -euo pipefail
packages=(runc containernetworking-plugins etcd-server iptables conntrack iproute2 ipset
	busybox-static python3-zmq openssl docker-registry debootstrap patchelf gnupg shellcheck graphviz
	python3-httpx python3-jose python3-ruamel.yaml python3-jsonschema python3-pytest python3-fastapi chromium prometheus)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
	echo "deps: missing Debian packages: ${missing[*]}; install them as root: apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Packages with a daemon (prometheus) are installed without starting it: the tests run their own.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' > "$policy"
	chmod 0755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
apt-get install -y -qq "${missing[@]}" >/dev/null
