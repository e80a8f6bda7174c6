#!/usr/bin/python3
"""Spack-style software tree from Debian packages; run by ci/flux/build.sh INSIDE the build root.

  layout.py deps FLUX_VERSION FLUX_ID SEED_PACKAGE...
      Puts every seed package, the python3-* packages they depend on and every library their ELF
      files load (the closure, glibc excepted) into its own prefix
      /opt/software/linux-debian12-x86_64/gcc-12.2.0/<name>-<version>-<hash>/ (one prefix per
      Debian source package), gives every ELF file a DT_RPATH listing the lib dirs of the prefixes
      it loads from, and prints shell assignments: PYTHON_PREFIX, FLUX_PREFIX, SCHED_PREFIX,
      PMIX_PREFIX (flux-sched and flux-pmix, versions from $SCHED_VERSION and $PMIX_VERSION),
      PY_SITE_PATH.
  layout.py finish
      After `make install` of flux-core, flux-sched and flux-pmix into their prefixes: rpaths for
      their ELF files, a
      check that every ELF file under /opt/software loads nothing from outside /opt/software but
      glibc, and the view /opt/view -> /opt/views/view -> /opt/views/._view/<hash>/.

State between the two steps: /root/layout.json.
"""

import base64
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = "/opt/software/linux-debian12-x86_64/gcc-12.2.0"
PYVER = "python3.11"
STATE = "/root/layout.json"
GLIBC = "libc6"
MULTIARCH = "x86_64-linux-gnu"
# Packages whose Depends are followed: interpreter modules, which no ELF file links.
MODULES = ("python3-", "python3.11", "libpython3.11", "lua-")

# Debian source package -> spack package name, where they differ.
NAMES = {
    "python3.11": "python", "zeromq3": "libzmq", "sqlite3": "sqlite", "lua5.1": "lua",
    "util-linux": "util-linux-uuid", "gcc-12": "gcc-runtime", "python-cffi": "py-cffi",
    "pyyaml": "py-pyyaml", "ply": "py-ply", "python-jsonschema": "py-jsonschema",
    "python-attrs": "py-attrs", "pyrsistent": "py-pyrsistent", "pycparser": "py-pycparser",
    "xz-utils": "xz", "icu": "icu4c", "e2fsprogs": "e2fsprogs-libs",
}
# Files of the packages that a runtime tree does not need.
SKIP = re.compile(r"^/(usr/)?(share/(doc|man|info|lintian|bug|locale|doc-base|gdb|bash-completion)|etc|include)/")


def log(*a):
    print("layout:", *a, file=sys.stderr, flush=True)


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def b32hash(*parts):
    h = hashlib.sha256("\0".join(parts).encode()).digest()
    return base64.b32encode(h).decode().lower()[:32]


def owners():
    """path -> installed Debian package, from dpkg's file lists (both /lib and /usr/lib forms)."""
    own = {}
    for lst in glob.glob("/var/lib/dpkg/info/*.list"):
        pkg = os.path.basename(lst)[:-5].split(":")[0]
        with open(lst) as f:
            for line in f:
                p = line.rstrip("\n")
                own.setdefault(p, pkg)
    return own


def owner(own, path):
    for p in (path, os.path.realpath(path)):
        for q in (p, "/usr" + p, p[4:] if p.startswith("/usr/") else None):
            if q and q in own:
                return own[q]
    return None


def pkginfo(pkg):
    out = sh("dpkg-query", "-W", "-f", "${source:Package}\t${source:Version}\t${Version}\t${Depends}\t${Pre-Depends}", pkg)
    src, sver, ver, dep, predep = out.split("\t")
    return src, sver, ver, dep + "," + predep


def depends(field):
    names = []
    for alt in field.split(","):
        alt = alt.strip()
        if not alt:
            continue
        first = alt.split("|")[0].strip()
        names.append(re.split(r"[\s(:]", first)[0])
    return names


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", pkg], capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


def dest(path):
    """Debian path -> path inside a prefix, or None for files the tree leaves out."""
    if SKIP.match(path):
        return None
    p = path[5:] if path.startswith("/usr/") else path[1:]
    for a, b in ((f"lib/{MULTIARCH}/lua/", "lib/lua/"), (f"lib/{MULTIARCH}/", "lib/"),
                 ("lib/python3/dist-packages/", f"lib/{PYVER}/site-packages/"),
                 ("sbin/", "bin/"), ("lib/", "lib/"), ("bin/", "bin/"), ("share/", "share/")):
        if p.startswith(a):
            return b + p[len(a):]
    return None


def ldd(path):
    """Resolved libraries of an ELF file (transitive), or None when it is not dynamic."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    if r.returncode != 0 or "not a dynamic executable" in r.stdout + r.stderr:
        return None
    libs = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m:
            if m.group(2) == "not":
                raise SystemExit(f"layout: {path}: {m.group(1)} not found")
            libs.append(m.group(2))
        else:
            m = re.match(r"\s*(/\S+) \(", line)
            if m:
                libs.append(m.group(1))
    return libs


def is_elf(path):
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        head = f.read(18)
    return head[:4] == b"\x7fELF" and head[16] in (2, 3)


def cmd_deps(flux_version, flux_id, seeds):
    own = owners()
    # The python3-* and lua-* packages the seeds depend on, recursively (spack's py-* and lua-*
    # dependencies: luaposix needs bit32, jsonschema attrs and pyrsistent, ...).
    pkgs, todo = set(), list(seeds)
    while todo:
        p = todo.pop()
        if p in pkgs:
            continue
        if not installed(p):
            raise SystemExit(f"layout: package {p} is not installed in the build root")
        pkgs.add(p)
        if p.startswith(MODULES):
            for d in depends(pkginfo(p)[3]):
                if d.startswith(MODULES) and d != "python3-minimal" and installed(d):
                    todo.append(d)
    # The library closure: every non-glibc library an ELF file of the set loads.
    elfs_done, rpath_of = set(), {}
    while True:
        new = set()
        for p in sorted(pkgs):
            for f in sh("dpkg-query", "-L", p).splitlines():
                if f in elfs_done or dest(f) is None or not is_elf(f):
                    continue
                elfs_done.add(f)
                libs = ldd(f)
                if libs is None:
                    continue
                rpath_of[f] = libs
                for lib in libs:
                    o = owner(own, lib)
                    if o is None:
                        raise SystemExit(f"layout: {f}: no Debian package owns {lib}")
                    if o != GLIBC and o not in pkgs:
                        new.add(o)
        if not new:
            break
        log("closure adds", " ".join(sorted(new)))
        pkgs |= new
    # One prefix per source package.
    groups, info = {}, {p: pkginfo(p) for p in pkgs}
    pysrc = info["python3.11"][:2]
    for p in sorted(pkgs):
        src, sver = info[p][:2]
        # Debian splits distutils and lib2to3 out of the interpreter; spack's python has them.
        groups.setdefault(pysrc if src == "python3-stdlib-extensions" else (src, sver), []).append(p)
    prefix_of_pkg, prefixes = {}, {}
    for (src, sver), members in sorted(groups.items()):
        name = NAMES.get(src) or (("py-" + re.sub(r"^python-", "", src)) if any(m.startswith("python3-") for m in members) else src)
        upstream = re.sub(r"^\d+:", "", sver).rsplit("-", 1)[0]
        upstream = re.sub(r"([+~]|\.dfsg|\.ds|really).*$", "", upstream)
        pre = f"{ROOT}/{name}-{upstream}-{b32hash(src, sver, 'debian12', *members)}"
        prefixes[pre] = members
        for m in members:
            prefix_of_pkg[m] = pre
    # Copy the files: regular files first, then symlinks rewritten to their mapped targets.
    mapped, links = {}, []
    for pre, members in prefixes.items():
        for m in members:
            for f in sh("dpkg-query", "-L", m).splitlines():
                d = dest(f)
                if d is None or os.path.isdir(f) and not os.path.islink(f) or not os.path.lexists(f):
                    continue
                mapped[f] = f"{pre}/{d}"
                if os.path.islink(f):
                    links.append(f)
                else:
                    os.makedirs(os.path.dirname(mapped[f]), exist_ok=True)
                    shutil.copy2(f, mapped[f])
    for f in links:
        t = os.readlink(f)
        target = os.path.normpath(t if t.startswith("/") else os.path.join(os.path.dirname(f), t))
        dst = mapped[f]
        to = None
        for cand in (target, "/usr" + target, target[4:] if target.startswith("/usr/") else ""):
            if cand in mapped:
                to = mapped[cand]
                break
        if to is None:
            log(f"dropped symlink {f} -> {t} (target not in the tree)")
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(os.path.relpath(to, os.path.dirname(dst)), dst)
    # RPATHs: the lib dirs of the prefixes holding each library the file loads.
    def libdirs(libs):
        dirs = []
        for lib in libs:
            if lib.startswith("/opt/software/"):
                d = os.path.dirname(lib)
            else:
                o = owner(own, lib)
                if o == GLIBC:
                    continue
                src = next((c for c in (lib, "/usr" + lib, lib[4:]) if c in mapped), None)
                if src is None:
                    raise SystemExit(f"layout: {lib} (package {o}) is not in the tree")
                d = os.path.dirname(mapped[src])
            if d not in dirs:
                dirs.append(d)
        return dirs
    n = 0
    for f, libs in sorted(rpath_of.items()):
        if f not in mapped:
            continue
        dirs = libdirs(libs)
        if dirs:
            sh("patchelf", "--force-rpath", "--set-rpath", ":".join(dirs), mapped[f])
            n += 1
    log(f"{len(prefixes)} prefixes, {len(mapped)} files, rpath set on {n} ELF files")
    py = next(p for p in prefixes if os.path.basename(p).startswith("python-"))
    os.symlink(PYVER, f"{py}/bin/python3")
    # flux cron is a `#!/usr/bin/env lua` script; spack's lua has bin/lua, Debian's lua5.1.
    lua = next(p for p in prefixes if os.path.basename(p).startswith("lua-5."))
    os.symlink("lua5.1", f"{lua}/bin/lua")
    # Python's headers in its prefix, as spack has them (flux-core's configure asks the
    # interpreter for its include dir); Debian's pyconfig.h wrapper replaced by the real one.
    shutil.copytree(f"/usr/include/{PYVER}", f"{py}/include/{PYVER}")
    shutil.copy2(f"/usr/include/{MULTIARCH}/{PYVER}/pyconfig.h", f"{py}/include/{PYVER}/pyconfig.h")
    flux = f"{ROOT}/flux-core-{flux_version}-{b32hash('flux-core', flux_version, flux_id, *sorted(prefixes))}"
    # Fluxion and flux-pmix build against flux-core, each into its own prefix (as spack does).
    built = [flux]
    for name, var in (("flux-sched", "SCHED_VERSION"), ("flux-pmix", "PMIX_VERSION")):
        ver = os.environ[var]
        built.append(f"{ROOT}/{name}-{ver}-{b32hash(name, ver, flux_id, flux)}")
    site = [f"{p}/lib/{PYVER}/site-packages" for p in sorted(prefixes) if os.path.basename(p).startswith("py-")]
    with open(STATE, "w") as f:
        json.dump({"prefixes": sorted(prefixes), "built": built, "python": py, "libdirs": {}}, f, indent=1)
    print(f"PYTHON_PREFIX={py}\nFLUX_PREFIX={flux}\nSCHED_PREFIX={built[1]}\nPMIX_PREFIX={built[2]}\nPY_SITE_PATH={':'.join(site)}")


def elf_files(top):
    for d, _, files in os.walk(top):
        for name in files:
            p = os.path.join(d, name)
            if is_elf(p):
                yield p


def cmd_finish():
    st = json.load(open(STATE))
    own = owners()
    built = st["built"]
    # Index of the tree's libraries by soname, for the built packages' files (linked against
    # /usr/lib); Debian keeps some in a subdirectory (pmix2/lib).
    by_name = {}
    for pre in st["prefixes"]:
        for p in glob.glob(f"{pre}/lib/*.so*") + glob.glob(f"{pre}/lib/*/lib/*.so*"):
            by_name.setdefault(os.path.basename(p), os.path.dirname(p))
    n = 0
    for f in (f for pre in built for f in elf_files(pre)):
        libs = ldd(f)
        if libs is None:
            continue
        dirs = []
        for lib in libs:
            if lib.startswith("/opt/software/"):
                d = os.path.dirname(lib)
            elif owner(own, lib) == GLIBC:
                continue
            elif os.path.basename(lib) in by_name:
                d = by_name[os.path.basename(lib)]
            else:
                raise SystemExit(f"layout: {f} loads {lib}, which is not in the tree")
            if d not in dirs:
                dirs.append(d)
        if dirs:
            sh("patchelf", "--force-rpath", "--set-rpath", ":".join(dirs), f)
            n += 1
    log(f"{' '.join(os.path.basename(p) for p in built)}: rpath set on {n} ELF files")
    # Byte-compiled python, as spack installs it (Debian compiles at install time instead), with
    # hash-checked .pyc files: the images set every mtime to the epoch, which makes timestamp
    # .pyc files stale, so every flux python command and the brokers' rc1 would compile the
    # stdlib on every start in a read-only view (flux.view.mode=image): 0.35 s a command, not 0.1.
    py = st["python"]
    pydirs = [d for p in built + st["prefixes"] for d in glob.glob(f"{p}/lib/{PYVER}") + glob.glob(f"{p}/lib/flux/{PYVER}")]
    subprocess.run([f"{py}/bin/{PYVER}", "-m", "compileall", "-q", "-f", "-j", "0", "--invalidation-mode", "checked-hash",
                    "-x", "lib2to3/tests|test/", *pydirs], check=False, stdout=subprocess.DEVNULL)
    # Every ELF file under /opt/software loads only from /opt/software and glibc.
    bad = []
    for f in elf_files("/opt/software"):
        for lib in ldd(f) or []:
            if not lib.startswith("/opt/software/") and owner(own, lib) != GLIBC:
                bad.append(f"{f} -> {lib}")
    if bad:
        raise SystemExit("layout: loaded from outside /opt/software:\n  " + "\n  ".join(bad[:40]))
    # The view: one symlink per file, flux-core first (first one wins, like a spack view).
    prefixes = built + st["prefixes"]
    vhash = b32hash("view", *prefixes)
    view = f"/opt/views/._view/{vhash}"
    os.makedirs(view)
    count = 0
    for pre in prefixes:
        for d, dirs, files in os.walk(pre):
            rel = os.path.relpath(d, pre)
            if rel.split(os.sep)[0] in ("include", ".spack"):
                continue
            entries = files + [x for x in dirs if os.path.islink(os.path.join(d, x))]
            for name in entries:
                src = os.path.join(d, name)
                dst = os.path.normpath(os.path.join(view, rel, name))
                if os.path.lexists(dst):
                    continue
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.symlink(src, dst)
                count += 1
    os.symlink(f"._view/{vhash}", "/opt/views/view")
    os.symlink("views/view", "/opt/view")
    log(f"view {view}: {count} links")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "deps":
        cmd_deps(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif sys.argv[1:] == ["finish"]:
        cmd_finish()
    else:
        raise SystemExit(__doc__)
