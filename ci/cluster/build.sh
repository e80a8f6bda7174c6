#!/usr/bin/env bash
# build.sh builds the local cluster's binaries from the Go module proxy, once per version:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl from
# k8s.io/kubernetes, a slim CoreDNS, all static (CGO_ENABLED=0), and containerd with its runc shim
# and ctr (Debian's containerd 1.6 cannot mount image volumes: flux.view.mode=image), netpol
# (kube-router's NetworkPolicy controller alone: ci/cluster/netpol/main.go, netpol.sh), into
# $MINICLUSTER_CACHE/k8s-$K8S_VERSION/bin (default cache: ~/.cache/minicluster). Binaries
# already there are not built again, so a second run returns at once.
#
# k8s.io/kubernetes is not meant to be a dependency: its go.mod points its 31 staging modules
# (k8s.io/api, client-go, ...) at ./staging/..., so a scratch module requires it and replaces
# each of them with the same module at v0.MINOR.PATCH. netpol is built in that module, on the
# client libraries the Kubernetes binaries compiled (kube-router's requirements raise none of
# their versions but go-openapi/jsonreference's patch level). CoreDNS gets a module of its own: its
# newer etcd, gRPC and OpenTelemetry requirements would otherwise raise the versions the
# Kubernetes binaries were released with.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/progress.sh"

K8S_VERSION=${K8S_VERSION:-v1.36.3}
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.2.9}
CACHE=${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minicluster}
WORK=$CACHE/k8s-$K8S_VERSION
BIN=$WORK/bin
K8S_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
# The plugins the cluster's Corefile uses (up.sh), and no more.
COREDNS_PLUGINS=(bind cache errors health kubernetes loadbalance log ready template)
COREDNS_STAMP=$BIN/.coredns-$COREDNS_VERSION-$(echo "${COREDNS_PLUGINS[*]}" | md5sum | cut -c1-8)
CONTAINERD_COMMANDS=(containerd containerd-shim-runc-v2 ctr)
CONTAINERD_STAMP=$BIN/.containerd-$CONTAINERD_VERSION
# The NetworkPolicy enforcer. kube-router's controller works with iptables and ipsets; Kubernetes
# SIG Network's kube-network-policies needs the kernel's nftables queue (CONFIG_NFT_QUEUE), which
# kernels built without it (such as the one these tests run on) refuse.
KUBE_ROUTER_VERSION=${KUBE_ROUTER_VERSION:-v2.1.0}
NETPOL_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/netpol/main.go
NETPOL_STAMP=$BIN/.netpol-$KUBE_ROUTER_VERSION-$(md5sum <"$NETPOL_SRC" | cut -c1-8)

missing=()
for c in "${K8S_COMMANDS[@]}"; do [[ -x $BIN/$c ]] || missing+=("$c"); done
need_coredns=true
[[ -x $BIN/coredns && -f $COREDNS_STAMP ]] && need_coredns=false
need_containerd=true
[[ -f $CONTAINERD_STAMP ]] && need_containerd=false
need_netpol=true
[[ -x $BIN/netpol && -f $NETPOL_STAMP ]] && need_netpol=false
if ((${#missing[@]} == 0)) && ! $need_coredns && ! $need_containerd && ! $need_netpol; then
	echo "build: cached Kubernetes $K8S_VERSION, CoreDNS $COREDNS_VERSION, containerd $CONTAINERD_VERSION and netpol (kube-router $KUBE_ROUTER_VERSION) binaries in $BIN"
	exit 0
fi
command -v go >/dev/null || { echo "build: go not found on PATH; install Go >= 1.25" >&2; exit 1; }
[[ $K8S_VERSION =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "build: K8S_VERSION=$K8S_VERSION is not of the form v1.MINOR.PATCH" >&2; exit 1; }
minor=${BASH_REMATCH[1]}
# Staging modules are tagged v0.MINOR.PATCH for Kubernetes v1.MINOR.PATCH.
staging_version=v0.$minor.${BASH_REMATCH[2]}
start=$(date +%s)
mkdir -p "$BIN"

targets=("${missing[@]}")
$need_netpol && targets+=(netpol)
if ((${#targets[@]} > 0)); then
	echo "build: ${targets[*]} (Kubernetes $K8S_VERSION) from the Go module proxy into $BIN (about 8 minutes on 2 cores, once)"
	mkdir -p "$WORK/src/k8s"
	cd "$WORK/src/k8s"
	rm -f go.mod go.sum
	go mod init minicluster.local/k8sbin >/dev/null 2>&1
	k8s_gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
	[[ -f $k8s_gomod ]] || { echo "build: could not download k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
	mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#\1#p' "$k8s_gomod")
	((${#staging[@]} > 0)) || { echo "build: no staging replace lines in $k8s_gomod" >&2; exit 1; }
	edits=(-require="k8s.io/kubernetes@$K8S_VERSION" -require="github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION")
	for m in "${staging[@]}"; do edits+=(-replace="$m=$m@$staging_version"); done
	go mod edit "${edits[@]}"
	echo "build: ${#staging[@]} staging modules replaced by their $staging_version releases"
	# tools.go makes `go mod tidy` keep what the commands need.
	{
		printf '//go:build tools\n\npackage tools\n\nimport (\n'
		for c in "${K8S_COMMANDS[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
		printf ')\n'
	} >tools.go
	mkdir -p cmd/netpol
	sed '/^\/\/go:build ignore$/d' "$NETPOL_SRC" >cmd/netpol/main.go
	progress "build: go mod tidy (Kubernetes)" "$WORK/logs/k8s-tidy.log" go mod tidy
	# Without the version stamped in, the binaries report v0.0.0-master+$Format:%H$, which
	# kubectl and Helm cannot parse.
	ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
	pkgs=()
	for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	$need_netpol && pkgs+=(./cmd/netpol)
	rm -rf "$BIN/.tmp" && mkdir -p "$BIN/.tmp"
	CGO_ENABLED=0 progress "build: go build ${targets[*]}" "$WORK/logs/k8s-build.log" \
		go build -trimpath -ldflags "$ldflags" -o "$BIN/.tmp/" "${pkgs[@]}"
	mv "$BIN/.tmp/"* "$BIN/" && rmdir "$BIN/.tmp"
	$need_netpol && touch "$NETPOL_STAMP"
	"$BIN/kube-apiserver" --version
	echo "build: Kubernetes binaries ready after $(($(date +%s) - start))s"
fi

if $need_coredns; then
	echo "build: CoreDNS $COREDNS_VERSION (slim) from the Go module proxy"
	mkdir -p "$WORK/src/coredns"
	cd "$WORK/src/coredns"
	rm -f go.mod go.sum
	go mod init minicluster.local/coredns >/dev/null 2>&1
	go mod edit -require="github.com/coredns/coredns@$COREDNS_VERSION"
	{
		printf '// Command coredns is CoreDNS with only the plugins the local cluster uses.\npackage main\n\n'
		printf 'import (\n\t_ "github.com/coredns/coredns/core/dnsserver"\n\t"github.com/coredns/coredns/coremain"\n\n'
		for p in "${COREDNS_PLUGINS[@]}"; do printf '\t_ "github.com/coredns/coredns/plugin/%s"\n' "$p"; done
		printf ')\n\nfunc main() { coremain.Run() }\n'
	} >main.go
	progress "build: go mod tidy (CoreDNS)" "$WORK/logs/coredns-tidy.log" go mod tidy
	CGO_ENABLED=0 progress "build: go build coredns" "$WORK/logs/coredns-build.log" go build -trimpath -ldflags "-s -w" -o "$BIN/coredns.tmp" .
	mv "$BIN/coredns.tmp" "$BIN/coredns"
	touch "$COREDNS_STAMP"
	"$BIN/coredns" -version | sed -n 1p
fi
if $need_containerd; then
	echo "build: containerd $CONTAINERD_VERSION (${CONTAINERD_COMMANDS[*]}) from the Go module proxy"
	pkgs=()
	for c in "${CONTAINERD_COMMANDS[@]}"; do pkgs+=("github.com/containerd/containerd/v2/cmd/$c@$CONTAINERD_VERSION"); done
	# Static, without the snapshotters that need cgo libraries; the cluster uses overlayfs.
	rm -rf "$BIN/.tmp" && mkdir -p "$BIN/.tmp"
	GOBIN=$BIN/.tmp CGO_ENABLED=0 progress "build: go install containerd" "$WORK/logs/containerd-build.log" \
		go install -trimpath -ldflags "-s -w" -tags "no_btrfs no_zfs no_devmapper" "${pkgs[@]}"
	mv "$BIN/.tmp/"* "$BIN/" && rmdir "$BIN/.tmp"
	touch "$CONTAINERD_STAMP"
	"$BIN/containerd" --version
fi
echo "build: done in $(($(date +%s) - start))s"
