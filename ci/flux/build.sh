#!/usr/bin/env bash
# Builds a real flux-core from source and lays it out the way the real flux-view images do
# (spack-style prefixes under /opt/software with absolute paths and RPATHs compiled in, and a view
# /opt/view -> /opt/views/view -> /opt/views/._view/<hash>/ of symlinks into them).
#
#   bash ci/flux/build.sh              (root; Debian 12 with apt)
#   bash ci/flux/build.sh --print-dir  (the output directory for this source; builds nothing)
#
# FLUX_CORE_SRC: a flux-core source tarball (default: the single flux-core-*.tar.gz in
# ../shared/flux-core/ beside the repository) or a git checkout of flux-core.
# Outputs, in ${MINICLUSTER_CACHE:-$HOME/.cache/minicluster}/flux/<id>/ (<id>: sha256 of the
# tarball, or of `git rev-parse HEAD` + `git diff HEAD` of a checkout, and -r<LAYOUT_REVISION>):
#   base.tar      debootstrap --variant=minbase bookworm: the application image without Flux
#   software.tar  opt/software, opt/views, opt/view: flux-core and all of its runtime
#                 dependencies but glibc, each in its own prefix
#   version       the flux-core version;  build.log  the log of the build;  done  the marker
#   lock          held by a running build (flock); work/  the build root while building
# A second run with the same source prints that it used the cache and does nothing else.
# At the end of a fresh build it runs ci/flux/check.sh on the outputs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

die() {
	echo "flux: $*" >&2
	exit 1
}

src=${FLUX_CORE_SRC:-}
if [[ -z $src ]]; then
	shopt -s nullglob
	tarballs=("$repo"/../shared/flux-core/flux-core-*.tar.gz)
	shopt -u nullglob
	((${#tarballs[@]} == 1)) || die "want exactly one flux-core-*.tar.gz in $repo/../shared/flux-core (found ${#tarballs[@]}); or set FLUX_CORE_SRC"
	src=${tarballs[0]}
fi
if [[ -d $src ]]; then
	git -C "$src" rev-parse HEAD >/dev/null 2>&1 || die "$src is a directory but not a git checkout"
	version=$(git -C "$src" describe --tags --always)
	version=${version#v}
	id=$({ git -C "$src" rev-parse HEAD && git -C "$src" diff HEAD; } | sha256sum | cut -d' ' -f1)
elif [[ -f $src ]]; then
	base=$(basename "$src")
	[[ $base =~ ^flux-core-(.+)\.tar\.gz$ ]] || die "$src: want a name flux-core-<version>.tar.gz"
	version=${BASH_REMATCH[1]}
	id=$(sha256sum "$src" | cut -d' ' -f1)
else
	die "FLUX_CORE_SRC=$src: no such file or directory"
fi
# Raised when what this script makes changes, so that a cached build is made again.
LAYOUT_REVISION=2
cache=${MINICLUSTER_CACHE:-$HOME/.cache/minicluster}/flux/$id-r$LAYOUT_REVISION
if [[ ${1:-} == --print-dir ]]; then
	echo "$cache"
	exit 0
fi
if [[ -f $cache/done ]]; then
	echo "flux: used the cache $cache (flux-core $version): nothing to do"
	exit 0
fi

[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, mount)"
# One build per output directory at a time; a second run waits and then uses its result.
mkdir -p "$cache"
exec 9>"$cache/lock"
if ! flock -n 9; then
	echo "flux: another build of $cache is running; waiting for it"
	flock 9
fi
if [[ -f $cache/done ]]; then
	echo "flux: used the cache $cache (flux-core $version), built by the run we waited for"
	exit 0
fi
need=()
for p in debootstrap patchelf; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if ((${#need[@]} > 0)); then
	echo "flux: installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The Debian mirror apt uses here (deb822 .sources or one-line .list files).
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
	awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }')
if [[ -z $mirror ]]; then
	mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }')
fi
[[ -n $mirror ]] || die "found no Debian mirror in /etc/apt/sources.list{,.d/*}"

mkdir -p "$cache"
log=$cache/build.log
exec > >(tee -a "$log") 2>&1
start=$SECONDS
echo "flux: building flux-core $version from $src into $cache (mirror $mirror)"

work=$cache/work
build=$work/build
mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[i]}" 2>/dev/null || true
	done
	mounted=()
}
trap cleanup EXIT
mount_chroot() {
	local m
	for m in proc sys dev; do
		mkdir -p "$1/$m"
		if [[ $m == proc ]]; then mount -t proc proc "$1/proc"; else mount --rbind "/$m" "$1/$m" && mount --make-rslave "$1/$m"; fi
		mounted+=("$1/$m")
	done
}
in_build() {
	chroot "$build" /usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
# rm -rf that never crosses into a mount left behind.
remove() {
	if grep -q " $1/" /proc/mounts; then die "refusing to remove $1: something is mounted below it"; fi
	rm -rf --one-file-system "$1"
}

# 1. BASE: the application image without Flux.
if [[ ! -f $cache/base.tar ]]; then
	t=$SECONDS
	remove "$work/base"
	mkdir -p "$work/debs"
	debootstrap --variant=minbase --cache-dir="$work/debs" bookworm "$work/base" "$mirror"
	# No package lists, no .debs, no device nodes (a container runtime provides /dev).
	rm -rf "${work:?}"/base/var/lib/apt/lists/* "$work"/base/var/cache/apt/*.bin "$work"/base/var/cache/apt/archives/*.deb "$work"/base/dev/*
	: >"$work/base/etc/hostname"
	tar -C "$work/base" --numeric-owner --sort=name -cf "$cache/base.tar.tmp" .
	mv "$cache/base.tar.tmp" "$cache/base.tar"
	remove "$work/base"
	echo "flux: base.tar ($(du -h "$cache/base.tar" | cut -f1)) in $((SECONDS - t)) s"
fi

# 2. BUILD root: BASE + the build packages.
build_packages=(autoconf automake libtool make pkg-config gcc g++ libc6-dev libzmq3-dev uuid-dev
	libjansson-dev liblz4-dev libarchive-dev libhwloc-dev libsqlite3-dev libncurses-dev lua5.1
	liblua5.1-dev lua-posix python3-dev python3-cffi python3-ply python3-setuptools python3-yaml
	python3-jsonschema jq patchelf)
if [[ ! -f $build/.packages-done ]]; then
	t=$SECONDS
	remove "$build"
	mkdir -p "$build"
	tar -C "$build" -xf "$cache/base.tar"
	cp /etc/resolv.conf "$build/etc/resolv.conf"
	mkdir -p "$build/var/cache/apt/archives"
	mount --bind "$work/debs" "$build/var/cache/apt/archives"
	mounted+=("$build/var/cache/apt/archives")
	mount_chroot "$build"
	in_build apt-get update -qq
	in_build apt-get install -y -qq --no-install-recommends "${build_packages[@]}" >/dev/null
	cleanup
	touch "$build/.packages-done"
	echo "flux: build root with ${#build_packages[@]} build packages in $((SECONDS - t)) s"
fi

# 3. The dependency prefixes, then flux-core configured and installed with its own prefix.
# Seeds: flux-core's runtime packages (FLUX-BUILD.md); layout.py adds what their ELF files load.
seeds=(python3.11 libpython3.11 python3-cffi python3-yaml python3-ply python3-jsonschema libzmq5
	libjansson4 liblz4-1 libarchive13 libhwloc15 libsqlite3-0 libuuid1 libncursesw6 liblua5.1-0
	lua5.1 lua-posix libffi8 python3-setuptools python3-distutils)
t=$SECONDS
remove "$build/opt"
remove "$build/root/src"
mkdir -p "$build/opt" "$build/root/src"
cp "$here/layout.py" "$build/root/layout.py"
if [[ -d $src ]]; then
	tar -C "$src" --exclude=.git -cf - . | tar -C "$build/root/src" -xf -
else
	tar -C "$build/root/src" --strip-components=1 -xzf "$src"
fi
mount_chroot "$build"
in_build python3 /root/layout.py deps "$version" "$id" "${seeds[@]}" >"$work/layout.env"
cat "$work/layout.env"
# shellcheck source=/dev/null
. "$work/layout.env"
echo "flux: dependency prefixes in $((SECONDS - t)) s"

t=$SECONDS
# shellcheck disable=SC2016 # expanded by the shell in the chroot
in_build /bin/bash -c '
	set -euo pipefail
	cd /root/src
	FLUX_VERSION="$1" ./autogen.sh >/dev/null
	export PYTHONPATH="$4"
	./configure --prefix="$2" --disable-docs PYTHON="$3/bin/python3.11" \
		--with-systemdsystemunitdir="$2/lib/systemd/system" >configure.log ||
		{ tail -40 config.log; exit 1; }
	make -j2 >make.log 2>&1 || { tail -60 make.log; exit 1; }
	make install >install.log 2>&1 || { tail -60 install.log; exit 1; }
' build "$version" "$FLUX_PREFIX" "$PYTHON_PREFIX" "$PY_SITE_PATH"
echo "flux: flux-core $version built and installed in $((SECONDS - t)) s"

in_build python3 /root/layout.py finish
cleanup
tar -C "$build" --numeric-owner --sort=name -cf "$cache/software.tar.tmp" opt/software opt/views opt/view
mv "$cache/software.tar.tmp" "$cache/software.tar"
echo "$version" >"$cache/version"
echo "flux: software.tar ($(du -h "$cache/software.tar" | cut -f1)), build took $((SECONDS - start)) s"

bash "$here/check.sh" "$cache"
remove "$work"
touch "$cache/done"
echo "flux: done in $((SECONDS - start)) s: $cache"
