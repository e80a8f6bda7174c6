#!/usr/bin/env bash
# release.sh publishes one version of minicluster to an OCI registry, from a clean git tree:
#
#   VERSION=x.y.z REGISTRY=host[:port]/path bash ci/release.sh     (make release does this)
#
# 1. refuses a dirty tree (any line of `git status --porcelain`, untracked files included), a
#    VERSION other than the commit's ./VERSION, a tree whose Chart.yaml, plugin.yaml or values/
#    do not carry ./VERSION (`go run ./ci/version --check`), and a version already released there
#    (flux-keygen:VERSION or charts/minicluster:VERSION exists: an OCI HEAD through
#    `ci/push --check`; a registry that cannot answer stops the release too);
# 2. builds the images into bin/release/images-VERSION (go run ./ci/images --version VERSION; the
#    flux, flux-view and app images only when MINICLUSTER_FLUX_DIR names a ci/flux/build.sh
#    output, as `make release` sets it; without it they are skipped, with a warning);
# 3. pushes them (go run ./ci/push: flux-keygen as a linux/amd64+arm64 index);
# 4. `helm package`s the chart as committed (nothing is stamped here: `make version` wrote
#    ./VERSION into it before the commit) into bin/release/ and `helm push`es it to
#    oci://REGISTRY/charts, the provenance file with it when signed;
# 5. packages the Helm 4 post-renderer plugin (this host's platform) into bin/release/ (not
#    pushed), and builds the user's command minicluster, and flux-keygen (its drop-in for flux
#    keygen; its `kube wait` until the alias goes), for linux and darwin, amd64 and arm64, there too;
# 6. reads the chart back (helm pull --verify when signed);
# 7. runs the end-to-end test of a registry install (test/e2e TestInstallFromRegistry) against
#    exactly what was pushed: the chart from oci://REGISTRY/charts and every image from REGISTRY,
#    with Helm 3 and Helm 4, as a namespace admin, on the cluster in KUBECONFIG (which must pull
#    from REGISTRY); then prints every pushed reference with its digest and size. Whether a cluster
#    answers is checked before anything is pushed.
#
# Environment:
#   VERSION      x.y.z[-pre] (default: ./VERSION, and it must be ./VERSION: to release another
#                version, write it there, run make version and commit); no +build metadata (OCI tags
#                cannot carry '+')
#   REGISTRY     host[:port]/path, no scheme (required)
#   INSECURE=1   plain HTTP to REGISTRY (always so for localhost and loopback addresses)
#   SIGN_KEY, KEYRING  sign the chart (helm package --sign --key SIGN_KEY --keyring KEYRING, a
#                GnuPG secret keyring in the legacy format: gpg --export-secret-keys >KEYRING) and the
#                plugin; VERIFY_KEYRING (default KEYRING) is what the read-back verifies against.
#                Unset: nothing is signed and the summary says so.
#   HELM         the helm CLI (default: $HELM3, else bin/tools/helm3/helm); HELM4 (default
#                bin/tools/helm4/helm) packages the plugin.
#   RELEASE_DIR  output directory (default bin/release)
#   E2E=0        skip step 7 (the summary then says the release is NOT tested end to end)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

SAY_AS=release
# shellcheck source=lib/say.sh
source "$REPO/ci/lib/say.sh"

tree_version=$(cat VERSION)
VERSION=${VERSION:-$tree_version}
REGISTRY=${REGISTRY:-}
HELM=${HELM:-${HELM3:-$REPO/bin/tools/helm3/helm}}
HELM4=${HELM4:-$REPO/bin/tools/helm4/helm}
RELEASE_DIR=${RELEASE_DIR:-$REPO/bin/release}
SIGN_KEY=${SIGN_KEY:-}
KEYRING=${KEYRING:-}
VERIFY_KEYRING=${VERIFY_KEYRING:-$KEYRING}

# ---- arguments -----------------------------------------------------------------------------
[[ -n $REGISTRY ]] || die "set REGISTRY=host[:port]/path (e.g. 127.0.0.1:5000/minicluster; bash ci/registry/up.sh starts a registry there)"
[[ $REGISTRY != *://* ]] || die "REGISTRY=$REGISTRY: give host[:port]/path, without a scheme"
REGISTRY=${REGISTRY%/}
semver='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$'
[[ $VERSION =~ $semver ]] || die "VERSION=$VERSION is not x.y.z[-prerelease] (semantic version, no +build: OCI tags cannot carry '+')"
if [[ -n $SIGN_KEY || -n $KEYRING ]]; then
	[[ -n $SIGN_KEY && -n $KEYRING ]] || die "signing needs both SIGN_KEY (key name) and KEYRING (secret keyring); give neither to release unsigned"
	[[ -f $KEYRING ]] || die "KEYRING=$KEYRING: no such file"
	[[ -f $VERIFY_KEYRING ]] || die "VERIFY_KEYRING=$VERIFY_KEYRING: no such file"
fi
for h in "$HELM" "$HELM4"; do
	[[ -x $h ]] || die "no helm CLI at $h (make tools builds it)"
done
E2E=${E2E:-1}
if [[ $E2E != 0 && -z ${MINICLUSTER_FLUX_DIR:-} ]]; then
	die "the end-to-end run needs the flux-view and app images: set MINICLUSTER_FLUX_DIR (make release does), or E2E=0 to release untested"
fi
host=${REGISTRY%%/*}
hostname=${host%:*}
hostname=${hostname#[}
hostname=${hostname%]}
plain_http=()
push_flags=()
if [[ ${INSECURE:-} == 1 || $hostname == localhost || $hostname == 127.* || $hostname == ::1 ]]; then
	plain_http=(--plain-http)
	push_flags=(--insecure)
fi

# ---- a clean tree ------------------------------------------------------------------------
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "$REPO is not a git work tree"
dirty=$(git status --porcelain --untracked-files=all)
if [[ -n $dirty ]]; then
	printf '%s\n' "$dirty" | head -n 20 >&2
	die "the git tree is dirty ($(printf '%s\n' "$dirty" | wc -l) paths above, untracked ones count): commit or remove them; a release is built from a commit only"
fi
commit=$(git rev-parse HEAD)
[[ $VERSION == "$tree_version" ]] ||
	die "VERSION=$VERSION, but this commit's ./VERSION is $tree_version: a release is the committed version; write $VERSION into ./VERSION, run make version (it writes it into Chart.yaml, plugin.yaml and values/), commit, then release"
go run ./ci/version --check || die "the tree does not carry ./VERSION everywhere (above): run make version and commit"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/minicluster-release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ---- not released yet ----------------------------------------------------------------------
say "building ci/push"
go build -o "$tmp/push" ./ci/push
rc=0
existing=$("$tmp/push" --registry "$REGISTRY" "${push_flags[@]}" --check "flux-keygen:$VERSION,charts/minicluster:$VERSION" 2>"$tmp/check.err") || rc=$?
case $rc in
0) say "$VERSION is not released at $REGISTRY yet" ;;
3) printf '%s\n' "$existing" >&2
	die "version $VERSION is already released at $REGISTRY (above): released versions are never overwritten; release a new version (VERSION=x.y.z)" ;;
*) cat "$tmp/check.err" >&2
	die "cannot tell whether $VERSION is already released at $REGISTRY (above); nothing was pushed" ;;
esac

# ---- a cluster for the end-to-end run, before anything is pushed ------------------------------
if [[ $E2E != 0 ]]; then
	say "checking that a cluster answers in KUBECONFIG=${KUBECONFIG:-} for the end-to-end run"
	make --no-print-directory build >"$tmp/build.out" 2>&1 || { cat "$tmp/build.out" >&2; die "make build failed"; }
	# -vet=off here and below: these run the end-to-end test, make lint vets it (go test's own vet
	# pass would compute vet facts for every dependency on a machine whose cache lacks them).
	HELM3=$HELM HELM4=$HELM4 go test -vet=off -tags e2e -count=1 -run '^$' ./test/e2e/ >"$tmp/preflight.out" 2>&1 ||
		{ cat "$tmp/preflight.out" >&2; die "no cluster for the end-to-end run (above); nothing was pushed: start one that pulls from $REGISTRY and export KUBECONFIG, or set E2E=0 to release untested"; }
fi

# ---- images --------------------------------------------------------------------------------
images=$RELEASE_DIR/images-$VERSION
rm -rf "$images"
mkdir -p "$RELEASE_DIR"
if [[ -z ${MINICLUSTER_FLUX_DIR:-} ]]; then
	say "WARNING: MINICLUSTER_FLUX_DIR is unset: the flux, flux-view and app images are NOT built or pushed (make release builds Flux and sets it)"
fi
say "building the images into $images"
go run ./ci/images --out "$images" --version "$VERSION" >"$tmp/images.out"
# The pause image is the local test cluster's sandbox image (imported there, never pulled): not
# part of a release.
rm -f "$images/pause.tar"
say "pushing the images to $REGISTRY"
"$tmp/push" --registry "$REGISTRY" --version "$VERSION" "${push_flags[@]}" "$images" >"$tmp/pushed.out"

# ---- chart ---------------------------------------------------------------------------------
sign=()
if [[ -n $SIGN_KEY ]]; then
	sign=(--sign --key "$SIGN_KEY" --keyring "$KEYRING")
fi
tgz=$RELEASE_DIR/minicluster-$VERSION.tgz
rm -f "$tgz" "$tgz.prov"
"$HELM" lint --strict charts/minicluster >"$tmp/lint.out" || { cat "$tmp/lint.out" >&2; die "helm lint --strict failed on the chart"; }
"$HELM" package charts/minicluster -d "$RELEASE_DIR" "${sign[@]}" >/dev/null
[[ -f $tgz ]] || die "helm package wrote no $tgz"
if [[ -n $SIGN_KEY ]]; then
	"$HELM" verify "$tgz" --keyring "$VERIFY_KEYRING" >/dev/null || die "helm verify $tgz failed against $VERIFY_KEYRING"
fi
say "pushing the chart to oci://$REGISTRY/charts"
"$HELM" push "$tgz" "oci://$REGISTRY/charts" "${plain_http[@]}" >"$tmp/helm-push.out" 2>&1 || { cat "$tmp/helm-push.out" >&2; die "helm push failed"; }
chart_digest=$(sed -n 's/^Digest: //p' "$tmp/helm-push.out")

# ---- plugin (Helm 4), this host's platform ---------------------------------------------------
mkdir -p "$tmp/plugin/minicluster"
cp postrender/plugin/plugin.yaml "$tmp/plugin/minicluster/"
CGO_ENABLED=0 go build -trimpath -o "$tmp/plugin/minicluster/minicluster-postrender" ./postrender/cmd/minicluster-postrender
plugin_sign=(--sign=false)
if [[ -n $SIGN_KEY ]]; then
	plugin_sign=(--sign --key "$SIGN_KEY" --keyring "$KEYRING")
fi
"$HELM4" plugin package "$tmp/plugin/minicluster" -d "$tmp/plugin-out" "${plugin_sign[@]}" >/dev/null
plugin_tgz=$RELEASE_DIR/minicluster-postrender-plugin-$VERSION-$(go env GOOS)-$(go env GOARCH).tgz
for f in "$tmp/plugin-out"/*; do
	case $f in
	*.prov) mv "$f" "$plugin_tgz.prov" ;;
	*) mv "$f" "$plugin_tgz" ;;
	esac
done

# ---- the users' commands, static: minicluster, flux-keygen ------------------------------------
for platform in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
	for pkg in ./cmd/minicluster ./keygen/cmd/flux-keygen; do
		CGO_ENABLED=0 GOOS=${platform%/*} GOARCH=${platform#*/} go build -trimpath -ldflags "-s -w -X main.version=$VERSION" \
			-o "$RELEASE_DIR/${pkg##*/}-$VERSION-${platform%/*}-${platform#*/}" "$pkg"
	done
done

# ---- read back -------------------------------------------------------------------------------
pulled=$tmp/pulled
mkdir -p "$pulled"
verify=()
if [[ -n $SIGN_KEY ]]; then
	verify=(--verify --keyring "$VERIFY_KEYRING")
fi
"$HELM" pull "oci://$REGISTRY/charts/minicluster" --version "$VERSION" "${plain_http[@]}" "${verify[@]}" -d "$pulled" >"$tmp/pull.out" 2>&1 ||
	{ cat "$tmp/pull.out" >&2; die "the pushed chart does not pull back${SIGN_KEY:+ with --verify}"; }
"$HELM" show chart "$pulled/minicluster-$VERSION.tgz" | grep -qx "version: $VERSION" || die "the pulled chart is not version $VERSION"
[[ -z $(git status --porcelain --untracked-files=all) ]] || die "the release left the tree dirty (a bug in ci/release.sh): git status"

# ---- end to end, against what was pushed -----------------------------------------------------
if [[ $E2E != 0 ]]; then
	say "end-to-end: installing oci://$REGISTRY/charts/minicluster $VERSION and its images from $REGISTRY (test/e2e TestInstallFromRegistry)"
	plain=0
	if [[ ${#plain_http[@]} -gt 0 ]]; then plain=1; fi
	if ! E2E_RELEASE_REGISTRY=$REGISTRY E2E_RELEASE_VERSION=$VERSION E2E_RELEASE_PLAIN_HTTP=$plain HELM3=$HELM HELM4=$HELM4 \
		go test -vet=off -tags e2e -count=1 -timeout 30m -v -run '^TestInstallFromRegistry$' ./test/e2e/ >"$tmp/e2e.out" 2>&1; then
		cat "$tmp/e2e.out" >&2
		die "version $VERSION is pushed to $REGISTRY but FAILED its end-to-end test (above): do not announce it; fix, then release a new version"
	fi
	grep -E '^(=== RUN|--- |ok|PASS)' "$tmp/e2e.out" | sed 's/^/  /'
fi

# ---- summary ---------------------------------------------------------------------------------
size() { stat -c %s "$1"; }
echo
echo "released minicluster $VERSION from commit $commit to $REGISTRY:"
cat "$tmp/pushed.out"
chart_size=$(size "$tgz")
prov_size=0
if [[ -f $tgz.prov ]]; then prov_size=$(size "$tgz.prov"); fi
printf '%s\t%d bytes (chart %d, provenance %d)\n' "oci://$REGISTRY/charts/minicluster:$VERSION@$chart_digest" \
	"$((chart_size + prov_size))" "$chart_size" "$prov_size"
echo "files in $RELEASE_DIR:"
for f in "$tgz" "$tgz.prov" "$plugin_tgz" "$plugin_tgz.prov" "$RELEASE_DIR"/minicluster-"$VERSION"-* "$RELEASE_DIR"/flux-keygen-"$VERSION"-*; do
	if [[ -f $f ]]; then printf '  %s\t%d bytes\n' "${f#"$RELEASE_DIR"/}" "$(size "$f")"; fi
done
if [[ -n $SIGN_KEY ]]; then
	echo "signed with '$SIGN_KEY' ($KEYRING); pulled back with helm pull --verify: $(grep -m1 '^Signed by' "$tmp/pull.out" || echo ok)"
else
	echo "NOT signed (set SIGN_KEY and KEYRING to sign the chart and the plugin)"
fi
if [[ -z ${MINICLUSTER_FLUX_DIR:-} ]]; then
	echo "NOT pushed: the flux, flux-view and app images (MINICLUSTER_FLUX_DIR unset; make release builds them)"
fi
if [[ $E2E != 0 ]]; then
	echo "tested end to end from $REGISTRY on the cluster in KUBECONFIG: helm 3 and helm 4 install, helm test, resize, uninstall"
else
	echo "NOT tested end to end (E2E=0)"
fi
