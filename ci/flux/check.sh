#!/usr/bin/env bash
# Checks the outputs of ci/flux/build.sh the way the chart uses them: in a chroot of base.tar
# (Debian minbase: no python, no flux) with software.tar unpacked at /opt/software, the view
# copied as the chart's flux-view container does (files/view-copy.sh) (cp -a "$(readlink -f /opt/view)/." /mnt/flux/view),
# and flux run from the copy with PATH, PYTHONPATH, LUA_PATH and LUA_CPATH pointing into it.
#
#   bash ci/flux/check.sh [CACHE_DIR]   (root; default: the newest build in the cache)
#
# Exits non-zero when anything fails: an ELF file under /opt/software that loads a library
# from outside /opt/software (glibc excepted) or misses one, a flux runtime package in BASE,
# the broker starting without PYTHONPATH (it must fail in rc1: the python modules come only
# from the view), a 2-broker instance that does not run a 2-node job, or one that does not
# load Fluxion as its scheduler and flux-pmix for `-o pmi=pmix` from the view.
set -euo pipefail

SAY_AS="flux check"
# shellcheck source=../lib/say.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/say.sh"
[[ $(id -u) == 0 ]] || die "needs root (chroot, mount)"
dir=${1:-}
if [[ -z $dir ]]; then
	dir=$(find "${MINICLUSTER_CACHE:-$HOME/.cache/minicluster}/flux" -mindepth 2 -maxdepth 2 -name software.tar -printf '%T@ %h\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2-)
	[[ -n $dir ]] || die "no build in ${MINICLUSTER_CACHE:-$HOME/.cache/minicluster}/flux: run ci/flux/build.sh"
fi
for f in base.tar software.tar; do [[ -f $dir/$f ]] || die "$dir/$f is missing"; done

root=$(mktemp -d /tmp/minicluster-flux-check.XXXXXX)
mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
	if grep -q " $root/" /proc/mounts; then
		echo "flux check: $root still has mounts; not removing it" >&2
	else
		rm -rf --one-file-system "$root"
	fi
}
trap cleanup EXIT
tar -C "$root" -xf "$dir/base.tar"
tar -C "$root" -xf "$dir/software.tar"
host=minicluster-flux-check
printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$host" >"$root/etc/hosts"
mount -t proc proc "$root/proc"
mounted+=("$root/proc")
# BASE has no device nodes (a container runtime provides /dev, and /sys, which hwloc reads).
for m in dev sys; do
	mount --rbind "/$m" "$root/$m"
	mount --make-rslave "$root/$m"
	mounted+=("$root/$m")
done

cat >"$root/check-inner.sh" <<'EOF'
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
echo "== BASE has none of flux's runtime packages, no python, no flux"
for p in python3 python3.11 python3-minimal libpython3.11 libpython3.11-minimal libpython3.11-stdlib \
	python3-cffi python3-yaml python3-ply python3-jsonschema libzmq5 libsodium23 libjansson4 \
	libarchive13 libhwloc15 libsqlite3-0 libncursesw6 liblua5.1-0 lua5.1 lua-posix; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		fail "BASE has the Debian package $p"
	fi
done
for c in python3 python flux lua lua5.1; do
	if command -v "$c" >/dev/null; then fail "BASE has $c on PATH: $(command -v "$c")"; fi
done
echo "ok"

echo "== every ELF file under /opt/software loads only from /opt/software and glibc"
n=0
outside=/tmp/outside.libs
: >"$outside"
find /opt/software -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) >/tmp/candidates
while IFS= read -r f; do
	out=$(ldd "$f" 2>&1) || continue
	case $out in *"not a dynamic executable"*) continue ;; esac
	n=$((n + 1))
	if printf '%s\n' "$out" | grep -q 'not found'; then
		printf '%s\n' "$out" >&2
		fail "$f: a library is not found"
	fi
	printf '%s\n' "$out" | awk -v f="$f" '$2 == "=>" && $3 !~ /^\/opt\/software\// { print $3 }
		$1 ~ /^\// && $2 ~ /^\(/ && $1 !~ /^\/opt\/software\// { print $1 }' >>"$outside"
done </tmp/candidates
[ "$n" -gt 100 ] || fail "only $n ELF files under /opt/software"
for lib in $(sort -u "$outside"); do
	pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "${lib#/usr}" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null || true)
	case $pkg in libc6:*) ;; *) fail "$lib is loaded from outside /opt/software (owner: ${pkg:-none})" ;; esac
done
echo "ok: $n ELF files; from outside /opt/software only glibc: $(sort -u "$outside" | xargs -n1 basename | tr '\n' ' ')"

echo "== the view, copied as the chart's flux-view container does (files/view-copy.sh)"
view=/mnt/flux/view
mkdir -p "$view"
cp -a "$(readlink -f /opt/view)/." "$view"
[ -L "$view/bin/flux" ] || fail "$view/bin/flux is not a symlink into /opt/software"
pyver=$(cd "$view/lib" && ls -d python3.* | head -1)
[ -d "$view/lib/$pyver/site-packages" ] || fail "no $view/lib/$pyver/site-packages"
export PATH="$view/bin:/usr/sbin:/usr/bin:/sbin:/bin"
unset PYTHONPATH LUA_PATH LUA_CPATH || true

echo "== PATH only: the broker must fail in rc1 (the python modules come from the view)"
if out=$(timeout 60 flux start --test-size=2 true 2>&1); then
	printf '%s\n' "$out"
	fail "flux start worked without PYTHONPATH"
fi
printf '%s\n' "$out" | grep -E "No module named|ModuleNotFoundError" | head -3
printf '%s\n' "$out" | grep -q -E "No module named" || { printf '%s\n' "$out"; fail "flux start failed, but not for a missing python module"; }
echo "ok: failed as expected"

echo "== PATH, PYTHONPATH, LUA_PATH, LUA_CPATH into the view"
export PYTHONPATH="$view/lib/$pyver/site-packages"
export LUA_PATH="$view/share/lua/5.1/?.lua;$view/share/lua/5.1/?/init.lua;;"
export LUA_CPATH="$view/lib/lua/5.1/?.so;;"
flux version
out=$(timeout 120 flux start --test-size=2 flux run -N2 hostname)
printf '%s\n' "$out"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 2 ] || fail "flux run -N2 hostname did not print two lines"
[ "$(printf '%s\n' "$out" | grep -c -x "$(hostname)")" -eq 2 ] || fail "flux run -N2 hostname did not print the hostname twice"
flux R encode --hosts=foo-[0-3] --local | tee /tmp/R.json
grep -q 'foo-\[0-3\]' /tmp/R.json || fail "flux R encode: no foo-[0-3] in R"
rm -f /tmp/x.cert
flux keygen /tmp/x.cert
grep -q 'curve' /tmp/x.cert || fail "flux keygen wrote no curve certificate"
lua -e 'local p = require "posix"; assert(p.getpid)' || fail "luaposix does not load from the view"
# flux cron is a lua script that needs luaposix (LUA_PATH, LUA_CPATH).
timeout 60 flux start --test-size=1 sh -c 'flux cron interval 1s true && flux cron list' >/tmp/cron.out ||
	{ cat /tmp/cron.out; fail "flux cron does not work"; }
cat /tmp/cron.out
timeout 60 flux start --test-size=1 flux python -c 'import flux, yaml, jsonschema, cffi; print("flux python ok", flux.Flux().attr_get("size"))'

echo "== Fluxion and flux-pmix from the view, found as the chart's entrypoint finds them"
(
	export FLUX_MODPROBE_PATH_APPEND="$view/etc/flux/modprobe" FLUX_MODULE_PATH_PREPEND="$view/lib/flux/modules"
	[ -f "$view/lib/flux/shell/plugins/pmix.so" ] || fail "no flux-pmix shell plugin in the view"
	timeout 120 flux start --test-size=2 -Sconf.shell_pluginpath="$view/lib/flux/shell/plugins" sh -c \
		'flux module list && flux run -N2 -o pmi=pmix sh -c "echo \$PMIX_RANK"' >/tmp/hpc.out 2>&1 ||
		{ cat /tmp/hpc.out; fail "Fluxion or flux-pmix does not work from the view"; }
	grep -q "^sched-fluxion-qmanager .* sched$" /tmp/hpc.out || { cat /tmp/hpc.out; fail "sched-fluxion-qmanager is not the scheduler"; }
	[ "$(grep -c -x '[01]' /tmp/hpc.out)" -eq 2 ] || { cat /tmp/hpc.out; fail "flux run -o pmi=pmix set no PMIX_RANK"; }
	echo "ok"
)

echo "== python's byte code stays valid with every mtime at the epoch (as in the images)"
find /opt/software /opt/views -exec touch -h -d @0 {} +
stale=$(flux python -v -c 'import flux.job, yaml, jsonschema' 2>&1 | grep -c 'bytecode is stale' || true)
[ "$stale" -eq 0 ] || fail "$stale .pyc files are stale once mtimes are the epoch: python compiles them on every start"
echo "ok"

echo "== at run time, a broker and a flux python process map libraries only from /opt/software and glibc"
cat >/tmp/maps.sh <<'MAPS'
cat "/proc/$(flux getattr broker.pid)/maps"
flux python -c 'import flux, yaml, jsonschema; flux.Flux().attr_get("size"); print(open("/proc/self/maps").read())'
MAPS
timeout 60 flux start --test-size=1 sh /tmp/maps.sh | awk '$6 ~ /\.so/ { print $6 }' | sort -u >/tmp/maps
[ "$(grep -c '^/opt/software/' /tmp/maps)" -gt 10 ] || fail "fewer than 10 libraries from /opt/software in the maps"
for lib in $(grep -v '^/opt/software/' /tmp/maps); do
	pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "${lib#/usr}" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null || true)
	case $pkg in libc6:*) ;; *) fail "mapped at run time from outside /opt/software: $lib (owner: ${pkg:-none})" ;; esac
done
echo "ok: $(grep -c '^/opt/software/' /tmp/maps) libraries from /opt/software; others: $(grep -v '^/opt/software/' /tmp/maps | xargs -n1 basename | tr '\n' ' ')"

echo "== image (a): flux from /opt/view itself, with the env the flux image sets"
(
	v=/opt/view
	export PATH="$v/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	export PYTHONPATH="$v/lib/$pyver/site-packages"
	export LUA_PATH="$v/share/lua/5.1/?.lua;$v/share/lua/5.1/?/init.lua;;"
	export LUA_CPATH="$v/lib/lua/5.1/?.so;;"
	out=$(timeout 120 flux start --test-size=2 flux run -N2 hostname)
	[ "$(printf '%s\n' "$out" | wc -l)" -eq 2 ] || fail "from /opt/view: flux run -N2 hostname did not print two lines"
	echo "ok"
)
echo "ALL OK"
EOF
echo "flux check: $dir"
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
unshare --uts /bin/sh -c 'hostname "$1" && exec chroot "$2" /usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 /bin/sh /check-inner.sh' check "$host" "$root" ||
	die "FAILED ($dir)"
echo "flux check: passed ($dir)"
