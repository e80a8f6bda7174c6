#!/usr/bin/env bash
# Builds a real flux-core, Fluxion (flux-sched) and flux-pmix from source and lays them out the way
# the real flux-view images do (spack-style prefixes under /opt/software with absolute paths and
# RPATHs compiled in, each package in its own, and a view /opt/view -> /opt/views/view ->
# /opt/views/._view/<hash>/ of symlinks into them); and the root filesystem of an MPI application
# image without Flux (MPICH, OpenMPI, LAMMPS and the mpi-hello test program).
#
#   bash ci/flux/build.sh              (root; Debian 12 with apt)
#   bash ci/flux/build.sh --print-dir  (the output directory for this source; builds nothing)
#
# The sources are the pinned ones (internal/sources/sources.txt, `go run ./ci/sources NAME`: from
# a mirror such as ../shared, the build cache, or downloaded), or:
# FLUX_CORE_SRC: a flux-core source tarball flux-core-<version>.tar.gz or a git checkout of it.
# FLUX_SCHED_SRC, FLUX_PMIX_SRC: flux-sched and flux-pmix release tarballs.
# Outputs, in ${MINICLUSTER_CACHE:-$HOME/.cache/minicluster}/flux/<id>/ (<id>: sha256 of the
# flux-core tarball, or of `git rev-parse HEAD` + `git diff HEAD` of a checkout, and of the two
# other tarballs, and -r<LAYOUT_REVISION>):
#   base.tar      debootstrap --variant=minbase bookworm: the application image without Flux
#   software.tar  opt/software, opt/views, opt/view: flux-core, Fluxion, flux-pmix and all of their
#                 runtime dependencies but glibc, each in its own prefix
#   mpi.tar       BASE with Debian's MPICH 4.0.2, OpenMPI 4.1.4 (PMIx 4.2.2) and LAMMPS, and
#                 /usr/local/bin/mpi-hello-{mpich,openmpi}: an MPI application image without Flux;
#                 made again alone when ci/flux/mpi/ or MPI_REVISION changes (mpi.id)
#   version       the flux-core version;  versions  flux-core, flux-sched, flux-pmix versions
#   build.log     the log of the build;  done  the marker
#   lock          held by a running build (flock); work/  the build root while building
#   layers/       the gzipped image layers ci/images makes of the tarballs, kept for its next run
# A second run with the same source prints that it used the cache and does nothing else; a run
# after a failure starts again at the step that failed (markers in work/).
# At the end of a fresh build it runs ci/flux/check.sh on the outputs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/progress.sh"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

SAY_AS=flux
# shellcheck source=../lib/say.sh
source "$here/../lib/say.sh"

# source_tarball VAR NAME: the tarball $VAR names, or the pinned source NAME.
source_tarball() {
	local given=${!1:-}
	if [[ -z $given ]]; then
		(cd "$repo" && go run ./ci/sources "$2")
		return
	fi
	[[ -f $given ]] || die "$1=$given: no such file"
	echo "$given"
}
src=${FLUX_CORE_SRC:-}
if [[ -z $src ]]; then
	src=$(cd "$repo" && go run ./ci/sources flux-core)
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
sched_src=$(source_tarball FLUX_SCHED_SRC flux-sched)
pmix_src=$(source_tarball FLUX_PMIX_SRC flux-pmix)
sched_version=$(basename "$sched_src" .tar.gz)
sched_version=${sched_version#flux-sched-}
pmix_version=$(basename "$pmix_src" .tar.gz)
pmix_version=${pmix_version#flux-pmix-}
id=$({ echo "$id"; sha256sum "$sched_src" "$pmix_src" | cut -d' ' -f1; } | sha256sum | cut -d' ' -f1)
# The MPI image's root filesystem is made again, alone, when its sources or recipe change.
MPI_REVISION=2
mpi_id=$({ echo "$MPI_REVISION"; cat "$here"/mpi/*; } | sha256sum | cut -d' ' -f1)
# Raised when what this script makes changes, so that a cached build is made again.
LAYOUT_REVISION=3
cache=${MINICLUSTER_CACHE:-$HOME/.cache/minicluster}/flux/$id-r$LAYOUT_REVISION
if [[ ${1:-} == --print-dir ]]; then
	echo "$cache"
	exit 0
fi
mpi_current() { [[ -f $cache/mpi.tar && $(cat "$cache/mpi.id" 2>/dev/null) == "$mpi_id" ]]; }
if [[ -f $cache/done ]] && mpi_current; then
	echo "flux: used the cache $cache (flux-core $version, flux-sched $sched_version, flux-pmix $pmix_version): nothing to do"
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
if [[ -f $cache/done ]] && mpi_current; then
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
echo "flux: building flux-core $version, flux-sched $sched_version and flux-pmix $pmix_version into $cache (mirror $mirror)"

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
# in_root DIR CMD...: CMD in the chroot DIR, with a clean environment.
in_root() {
	local root=$1
	shift
	chroot "$root" /usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
in_build() { in_root "$build" "$@"; }
# rm -rf that never crosses into a mount left behind.
remove() {
	if grep -q " $1/" /proc/mounts; then die "refusing to remove $1: something is mounted below it"; fi
	rm -rf --one-file-system "$1"
}
# root_from_base DIR: BASE unpacked at DIR, ready for apt-get in a chroot: the host's resolv.conf,
# the .deb cache all roots share, /proc, /sys and /dev (undone by cleanup).
root_from_base() {
	remove "$1"
	mkdir -p "$1" "$work/debs"
	tar -C "$1" -xf "$cache/base.tar"
	cp /etc/resolv.conf "$1/etc/resolv.conf"
	mkdir -p "$1/var/cache/apt/archives"
	mount --bind "$work/debs" "$1/var/cache/apt/archives"
	mounted+=("$1/var/cache/apt/archives")
	mount_chroot "$1"
}
# pack_root DIR TAR: DIR without package lists, .debs or device nodes (a container runtime
# provides /dev) as the root filesystem tarball TAR, written whole or not at all.
pack_root() {
	rm -rf "${1:?}"/var/lib/apt/lists/* "${1:?}"/var/cache/apt/*.bin "${1:?}"/var/cache/apt/archives/*.deb "${1:?}"/dev/*
	tar -C "$1" --numeric-owner --sort=name -cf "$2.tmp" .
	mv "$2.tmp" "$2"
}

# 1. BASE: the application image without Flux.
if [[ ! -f $cache/base.tar ]]; then
	t=$SECONDS
	remove "$work/base"
	mkdir -p "$work/debs"
	debootstrap --variant=minbase --cache-dir="$work/debs" bookworm "$work/base" "$mirror"
	: >"$work/base/etc/hostname"
	pack_root "$work/base" "$cache/base.tar"
	remove "$work/base"
	echo "flux: base.tar ($(du -h "$cache/base.tar" | cut -f1)) in $((SECONDS - t)) s"
fi

# 2-5: Flux, unless an earlier run made it (then only the MPI image is made again).
if [[ ! -f $cache/done ]]; then
	# 2. BUILD root: BASE + the build packages.
	build_packages=(autoconf automake libtool make pkg-config gcc g++ libc6-dev libzmq3-dev uuid-dev
		libjansson-dev liblz4-dev libarchive-dev libhwloc-dev libsqlite3-dev libncurses-dev lua5.1
		liblua5.1-dev lua-posix python3-dev python3-cffi python3-ply python3-setuptools python3-yaml
		python3-jsonschema jq patchelf
		cmake libboost-dev libboost-graph-dev libedit-dev libyaml-cpp-dev
		libpmix-dev)
	if [[ ! -f $build/.packages-done ]]; then
		t=$SECONDS
		root_from_base "$build"
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
		lua5.1 lua-posix libffi8 python3-setuptools python3-distutils
		libyaml-cpp0.7 libedit2 libboost-graph1.74.0 libpmix2)
	# Each step below leaves a marker in the build root, so that a run after a failure starts again
	# at the step that failed.
	if [[ ! -f $build/.core-done ]]; then
		t=$SECONDS
		rm -f "$build/.sched-done" "$build/.pmix-done"
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
		in_build env SCHED_VERSION="$sched_version" PMIX_VERSION="$pmix_version" \
			python3 /root/layout.py deps "$version" "$id" "${seeds[@]}" >"$build/root/layout.env"
		cat "$build/root/layout.env"
		echo "flux: dependency prefixes in $((SECONDS - t)) s"

		t=$SECONDS
		# shellcheck source=/dev/null
		. "$build/root/layout.env"
		# shellcheck disable=SC2016 # expanded by the shell in the chroot
		progress "flux: flux-core configure, make, install" "$build/core.log" in_build /bin/bash -c '
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
		cleanup
		touch "$build/.core-done"
		echo "flux: flux-core $version built and installed in $((SECONDS - t)) s"
	fi
	# shellcheck source=/dev/null
	. "$build/root/layout.env"

	# 4. Fluxion in its own prefix, against flux-core's (found through pkg-config). Only the targets
	# it installs are built: its test programs take longer than the rest together.
	if [[ ! -f $build/.sched-done ]]; then
		t=$SECONDS
		remove "$build/root/sched"
		mkdir -p "$build/root/sched"
		tar -C "$build/root/sched" --strip-components=1 -xzf "$sched_src"
		mount_chroot "$build"
		# shellcheck disable=SC2016 # expanded by the shell in the chroot
		progress "flux: Fluxion cmake, make, install" "$build/sched.log" in_build /bin/bash -c '
			set -euo pipefail
			mkdir -p /root/sched/build && cd /root/sched/build
			PKG_CONFIG_PATH="$1/lib/pkgconfig" cmake .. -DCMAKE_INSTALL_PREFIX="$2" \
				-DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE=/usr/bin/python3 >cmake.log 2>&1 ||
				{ tail -40 cmake.log; exit 1; }
			make -j2 sched-fluxion-resource sched-fluxion-feasibility sched-fluxion-qmanager \
				sched-fluxion-resource-module fluxion-data reapi_cli >make.log 2>&1 ||
				{ tail -60 make.log; exit 1; }
			cmake --install . >install.log 2>&1 || { tail -60 install.log; exit 1; }
			# Debian'"'"'s python puts the bindings under local/lib/python3.11/dist-packages; a spack
			# prefix has them in lib/python3.11/site-packages, where the view links them.
			if [ -d "$2/local/lib/python3.11/dist-packages" ]; then
				mkdir -p "$2/lib/python3.11/site-packages"
				cp -a "$2/local/lib/python3.11/dist-packages/." "$2/lib/python3.11/site-packages/"
				rm -rf "$2/local"
			fi
		' build "$FLUX_PREFIX" "$SCHED_PREFIX"
		cleanup
		touch "$build/.sched-done"
		echo "flux: flux-sched $sched_version built and installed in $((SECONDS - t)) s"
	fi

	# 5. flux-pmix in its own prefix. Its configure.ac takes the version from `git describe`, which
	# a release tarball cannot answer: the version (from the tarball's name) is written into AC_INIT.
	if [[ ! -f $build/.pmix-done ]]; then
		t=$SECONDS
		remove "$build/root/pmix"
		mkdir -p "$build/root/pmix"
		tar -C "$build/root/pmix" --strip-components=1 -xzf "$pmix_src"
		sed -i "s/^\\( *\\)m4_esyscmd(\\[git describe.*\\]))\$/\\1[$pmix_version])/" "$build/root/pmix/configure.ac"
		if ! grep -q "^ *\\[$pmix_version\\])\$" "$build/root/pmix/configure.ac"; then
			die "flux-pmix: could not write version $pmix_version into AC_INIT of configure.ac"
		fi
		mount_chroot "$build"
		# shellcheck disable=SC2016 # expanded by the shell in the chroot
		progress "flux: flux-pmix autogen, configure, make, install" "$build/pmix.log" in_build /bin/bash -c '
			set -euo pipefail
			cd /root/pmix
			./autogen.sh >autogen.log 2>&1 || { tail -40 autogen.log; exit 1; }
			PKG_CONFIG_PATH="$1/lib/pkgconfig" ./configure --prefix="$2" >configure.log 2>&1 ||
				{ tail -40 config.log; exit 1; }
			make -j2 >make.log 2>&1 || { tail -60 make.log; exit 1; }
			make install >install.log 2>&1 || { tail -60 install.log; exit 1; }
		' build "$FLUX_PREFIX" "$PMIX_PREFIX"
		cleanup
		touch "$build/.pmix-done"
		echo "flux: flux-pmix $pmix_version built and installed in $((SECONDS - t)) s"
	fi

	if [[ ! -f $cache/software.tar ]]; then
		cp "$here/layout.py" "$build/root/layout.py"
		mount_chroot "$build"
		in_build python3 /root/layout.py finish
		cleanup
		tar -C "$build" --numeric-owner --sort=name -cf "$cache/software.tar.tmp" opt/software opt/views opt/view
		mv "$cache/software.tar.tmp" "$cache/software.tar"
		echo "$version" >"$cache/version"
		printf 'flux-core %s\nflux-sched %s\nflux-pmix %s\n' "$version" "$sched_version" "$pmix_version" >"$cache/versions"
		echo "flux: software.tar ($(du -h "$cache/software.tar" | cut -f1)), build took $((SECONDS - start)) s"
	fi
fi

# 6. MPI: BASE with the runtime packages of MPICH, OpenMPI and LAMMPS, mpi-hello compiled against
# each MPI there (the -dev packages are removed again) and LAMMPS's melt example. No Flux.
if ! mpi_current; then
	t=$SECONDS
	mpi=$work/mpi
	root_from_base "$mpi"
	mkdir -p "$mpi/root/mpi"
	cp "$here"/mpi/*.c "$mpi/root/mpi/"
	# shellcheck disable=SC2016 # expanded by the shell in the chroot
	progress "mpi: the MPI root filesystem" "$cache/mpi-build.log" in_root "$mpi" /bin/bash -c '
		set -euo pipefail
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends libmpich12 openmpi-bin libopenmpi3 lammps \
			lammps-examples gcc libc6-dev libmpich-dev libopenmpi-dev >/dev/null
		cd /root/mpi
		mpicc.mpich -O2 -o /usr/local/bin/mpi-hello-mpich mpi-hello.c
		mpicc.openmpi -O2 -o /usr/local/bin/mpi-hello-openmpi mpi-hello.c
		gcc -O2 -fPIC -shared -o /usr/local/lib/mpich-ucx-finalize.so mpich-ucx-finalize.c
		# LAMMPS examples: keep the Lennard-Jones melt (the bench input users know), not 100 MB.
		mkdir -p /opt/lammps/examples
		cp -a /usr/share/lammps/examples/melt /opt/lammps/examples/
		# Not libc6-dev: LAMMPS needs it (libkim-api2 depends on gfortran).
		apt-get purge -y -qq --autoremove lammps-examples libmpich-dev libopenmpi-dev >/dev/null
		rm -rf /root/mpi
		for c in lmp mpi-hello-mpich mpi-hello-openmpi; do
			command -v "$c" >/dev/null || { echo "mpi: $c is missing from the image" >&2; exit 1; }
		done
	'
	cleanup
	rm -f "$mpi/etc/resolv.conf"
	pack_root "$mpi" "$cache/mpi.tar"
	echo "$mpi_id" >"$cache/mpi.id"
	remove "$mpi"
	echo "flux: mpi.tar ($(du -h "$cache/mpi.tar" | cut -f1)) in $((SECONDS - t)) s"
fi

if [[ -f $cache/done ]]; then
	remove "$work"
	echo "flux: done in $((SECONDS - start)) s: $cache (Flux from the cache, the MPI image made again)"
	exit 0
fi
bash "$here/check.sh" "$cache"
remove "$work"
touch "$cache/done"
echo "flux: done in $((SECONDS - start)) s: $cache"
