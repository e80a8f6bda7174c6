package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Flux's environment, as files/env.sh makes it for the chart's `flux` wrapper and the
// fluxContainers (which run in images without this program, so env.sh stays): Flux on PATH
// (from the view, when there is one); the view's software is back at its build prefix
// (mounted there), so only PATH, PYTHONPATH and the Lua paths are needed, as in the Flux
// Operator; its binaries find their libraries through their compiled-in RPATHs.

// fluxEnv sets e for Flux, with the view's root and paths p (see env.sh, which does the same
// for the shells that stay).
func fluxEnv(e *Environ, p Paths) {
	// flux.view.mode=image mounts the view image at MINICLUSTER_FLUX_VIEW_ROOT: follow its
	// /opt/view links there (an absolute target is relative to the image's root).
	root, view := e.Value("MINICLUSTER_FLUX_VIEW_ROOT"), e.Value("MINICLUSTER_FLUX_VIEW")
	if root != "" && view == "" {
		v := p.OptView
		for hops := 0; hops < 16; hops++ {
			target, err := os.Readlink(root + v)
			if err != nil {
				break
			}
			if strings.HasPrefix(target, "/") {
				v = target
			} else {
				v = v[:strings.LastIndex(v, "/")] + "/" + target
			}
		}
		view = root + v
		e.Set("MINICLUSTER_FLUX_VIEW", view)
	}
	if view != "" {
		e.Set("PATH", view+"/bin:"+e.Value("PATH"))
		sites, _ := filepath.Glob(view + "/lib/python3*/site-packages")
		for _, site := range sites {
			if isDir(site) {
				if old := e.Value("PYTHONPATH"); old != "" {
					e.Set("PYTHONPATH", site+":"+old)
				} else {
					e.Set("PYTHONPATH", site)
				}
			}
		}
		e.Set("LUA_PATH", view+"/share/lua/5.1/?.lua;"+view+"/share/lua/5.1/?/init.lua;"+or(e.Value("LUA_PATH"), ";"))
		e.Set("LUA_CPATH", view+"/lib/lua/5.1/?.so;"+or(e.Value("LUA_CPATH"), ";"))
	} else {
		// Flux in the image: the wrapper may come before the image's own flux on PATH. Put the
		// image's first, so that this program, the broker and the wrapper run the real one.
		afterShim := false
		for _, dir := range strings.Split(e.Value("PATH"), ":") {
			if strings.TrimSuffix(dir, "/") == p.WrapperDir {
				afterShim = true
			} else if executable(filepath.Join(or(dir, "."), "flux")) {
				if afterShim {
					e.Set("PATH", or(dir, ".")+":"+e.Value("PATH"))
				}
				break
			}
		}
	}
	// This broker's socket (pinned with -Slocal-uri, the same path in every pod).
	if _, ok := e.Get("FLUX_URI"); !ok || e.Value("FLUX_URI") == "" {
		e.Set("FLUX_URI", p.localURI())
	}
}

// executable says whether path may be run (as test -x).
func executable(path string) bool { return unix.Access(path, unix.X_OK) == nil }

// lookPath finds name on PATH of e, as `command -v` does.
func lookPath(e *Environ, name string) string {
	for _, dir := range strings.Split(e.Value("PATH"), ":") {
		path := filepath.Join(or(dir, "."), name)
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && executable(path) {
			return path
		}
	}
	return ""
}

// realFlux is the flux PATH finds, or empty when that is the chart's wrapper or none.
func realFlux(e *Environ, p Paths) string {
	found := lookPath(e, "flux")
	if found == "" || filepath.Dir(found) == p.WrapperDir {
		return ""
	}
	return found
}

// flux returns a command that runs Flux with args in the current environment.
func (s *Supervisor) flux(args ...string) *exec.Cmd {
	cmd := exec.Command(s.fluxCmd, args...)
	cmd.Args[0] = "flux"
	cmd.Env = s.env.List()
	cmd.Stderr = s.Stderr
	return cmd
}

// builtin is `flux config builtin NAME`, empty when it fails.
func (s *Supervisor) builtin(name string) (string, bool) {
	cmd := s.flux("config", "builtin", name)
	cmd.Stderr = nil
	out, status := s.procs.Output(cmd)
	return out, status == 0
}

// findFlux sets fluxCmd, and where this Flux lives (fluxRoot: the view, or the prefix of the
// image's flux command) and how to name it (fluxFrom). Fluxion and flux-pmix may sit there
// rather than in flux-core's own prefix (a spack view links every package's files into one
// tree).
func (s *Supervisor) findFlux() error {
	s.fluxCmd = realFlux(s.env, s.P)
	view := s.env.Value("MINICLUSTER_FLUX_VIEW")
	if s.fluxCmd == "" {
		if view != "" {
			return s.die("flux is not in the flux view at %s/bin: set flux.view.image to a Flux view image (e.g. ghcr.io/converged-computing/flux-view-ubuntu:tag-noble)", view)
		}
		return s.die("flux is not on PATH in image %s: set flux.view.enabled=true to copy Flux from a view image, or set image to one that has Flux installed", s.S.Image)
	}
	if view != "" {
		s.fluxRoot, s.fluxFrom = view, "the flux view of "+s.S.FluxViewImage
	} else {
		s.fluxRoot, s.fluxFrom = filepath.Dir(filepath.Dir(s.fluxCmd)), "image "+s.S.Image
	}
	return nil
}

// prependPath sets k to dir, before what k holds (colon-separated).
func prependPath(e *Environ, k, dir string) {
	if old := e.Value(k); old != "" {
		dir += ":" + old
	}
	e.Set(k, dir)
}

// useFluxion (flux.scheduler=fluxion) points Flux at Fluxion where it sits beside this Flux,
// or fails when this Flux has none.
func (s *Supervisor) useFluxion() error {
	if s.S.Scheduler != "fluxion" {
		return nil
	}
	confdir, _ := s.builtin("confdir")
	if isFile(s.fluxRoot + "/etc/flux/modprobe/modprobe.d/fluxion.toml") {
		// flux modprobe reads Fluxion's modprobe.d/fluxion.toml (its modules outrank
		// sched-simple) and rc1.d/fluxion.py; the broker loads its modules from there.
		prependPath(s.env, "FLUX_MODPROBE_PATH_APPEND", s.fluxRoot+"/etc/flux/modprobe")
		prependPath(s.env, "FLUX_MODULE_PATH_PREPEND", s.fluxRoot+"/lib/flux/modules")
		prependPath(s.env, "FLUX_EXEC_PATH_PREPEND", s.fluxRoot+"/libexec/flux/cmd")
	} else if !isFile(confdir + "/modprobe/modprobe.d/fluxion.toml") {
		return s.die("flux.scheduler=fluxion, but %s has no Fluxion (flux-sched): no etc/flux/modprobe/modprobe.d/fluxion.toml in %s or in flux-core's %s. Use a Flux with flux-sched (the Flux Operator's flux-view-* images have it), or set flux.scheduler=simple",
			s.fluxFrom, s.fluxRoot, or(confdir, "confdir"))
	}
	// Fluxion's default resource options limit what it reads of a hwloc topology
	// (load-allowlist), which R from `flux R encode` does not carry: without them it does not
	// warn "allowlist unsupported" at every start. Options of your own (env) are kept.
	if _, ok := s.env.Get("FLUXION_RESOURCE_OPTIONS"); !ok {
		s.env.Set("FLUXION_RESOURCE_OPTIONS", "")
	}
	return nil
}

// findPMIx sets pmixPlugins to where flux-pmix's shell plugin is (for OpenMPI: `flux run -o
// pmi=pmix`), empty when nowhere, and pluginPath to where the job shells look; a command that
// asks for it without it cannot run.
func (s *Supervisor) findPMIx() error {
	s.pluginPath, _ = s.builtin("shell_pluginpath")
	switch {
	case isFile(s.pluginPath + "/pmix.so"):
		s.pmixPlugins = s.pluginPath
	case isFile(s.fluxRoot + "/lib/flux/shell/plugins/pmix.so"):
		s.pmixPlugins = s.fluxRoot + "/lib/flux/shell/plugins"
	default:
		s.pmixPlugins = ""
	}
	if asksForPMIx(s.S.Command) && s.pmixPlugins == "" {
		return s.die("the command asks for -o pmi=pmix (OpenMPI's PMIx, served by flux-pmix), but %s has no flux-pmix: no lib/flux/shell/plugins/pmix.so in %s or in %s. Use a Flux with flux-pmix (the Flux Operator's flux-view-* images have it), or an MPI that Flux's own PMI serves (MPICH: no -o pmi=pmix)",
			s.fluxFrom, s.fluxRoot, or(s.pluginPath, "the shell plugin path of flux-core"))
	}
	return nil
}

// asksForPMIx: the command names pmi= and, after it, pmix (the shell's *pmi=*pmix*).
func asksForPMIx(command string) bool {
	i := strings.Index(command, "pmi=")
	return i >= 0 && strings.Contains(command[i+len("pmi="):], "pmix")
}

// writeShellInitrc writes the job shells' initrc: flux-pmix's plugin for the jobs that ask
// for PMIx (-o pmi=pmix) alone, then flux-core's own initrc. Loading the plugin costs a job
// shell about 2 ms of CPU, a tenth of what a small job costs its broker, so the others go
// without. The shell looks for lua.d beside its initrc: there it is flux-core's. False where
// flux-core does not say where its initrc is.
func (s *Supervisor) writeShellInitrc() (string, bool) {
	builtin, ok := s.builtin("shell_initrc")
	if !ok || !isFile(builtin) {
		return "", false
	}
	dir := filepath.Join(s.P.Run, "shell")
	if err := os.Mkdir(dir, 0o755); err != nil && !isDir(dir) {
		return "", false
	}
	lua := filepath.Join(dir, "lua.d")
	_ = os.Remove(lua)
	if err := os.Symlink(filepath.Join(filepath.Dir(builtin), "lua.d"), lua); err != nil {
		return "", false
	}
	initrc := filepath.Join(dir, "initrc.lua")
	text := "-- Written by the MiniCluster's supervisor.\n" +
		"local pmi = shell.options.pmi\n" +
		"if type (pmi) == \"string\" and (\",\" .. pmi .. \",\"):find (\",pmix,\", 1, true) then\n" +
		"    plugin.load { file = [==[" + s.pmixPlugins + "/pmix.so]==], conf = {} }\n" +
		"end\n" +
		"source [==[" + builtin + "]==]\n"
	if err := os.WriteFile(initrc, []byte(text), 0o644); err != nil {
		return "", false
	}
	if err := os.Chmod(initrc, 0o644); err != nil {
		return "", false
	}
	return initrc, true
}

// findWrappedBroker (flux.wrap, flux start's --wrap): the comma-separated words run the
// broker's program, flux-broker, found as flux start finds it: on FLUX_EXEC_PATH in Flux's
// environment. Sets brokerPath, empty without flux.wrap.
func (s *Supervisor) findWrappedBroker() error {
	s.brokerPath = ""
	if s.S.Wrap == "" {
		return nil
	}
	const find = `IFS=:; for dir in $FLUX_EXEC_PATH; do if [ -x "$dir/flux-broker" ]; then echo "$dir/flux-broker"; exit 0; fi; done; exit 1`
	out, status := s.procs.Output(s.flux("env", "/bin/sh", "-c", find))
	if status != 0 {
		return s.die("flux.wrap: no flux-broker on the FLUX_EXEC_PATH of %s, so the broker cannot be wrapped as flux start --wrap does; set flux.wrap=\"\"", s.fluxFrom)
	}
	s.brokerPath = out
	s.log("flux.wrap: the brokers run as: %s %s", strings.ReplaceAll(s.S.Wrap, ",", " "), s.brokerPath)
	return nil
}

// wrapWords are flux.wrap's words (split at commas, as flux start splits --wrap).
func wrapWords(wrap string) []string {
	words := strings.Split(wrap, ",")
	if len(words) > 0 && words[len(words)-1] == "" {
		words = words[:len(words)-1]
	}
	return words
}

// useModprobeRc1 puts modprobe-rc1.py where Flux's modprobe rc1 finds it, and sets
// rc1Modprobe (Flux's modprobe rc1 runs, so modprobe-rc1.py leaves its marks) and
// killUnjoined. A worker's broker that has not joined its parent holds nothing yet: SIGTERM
// would only make it run rc3, which fails without a parent, or be ignored while it loads its
// built-in modules (Flux ignores signals then), leaving it waiting for a parent that is gone
// until the kubelet kills it. Such a broker is killed at once. Only where "joined" will come:
// Flux's modprobe rc1, which loads modprobe-rc1.py.
func (s *Supervisor) useModprobeRc1() {
	if old := s.env.Value("FLUX_MODPROBE_PATH_APPEND"); old != "" {
		s.env.Set("FLUX_MODPROBE_PATH_APPEND", old+":"+s.P.Modprobe)
	} else {
		s.env.Set("FLUX_MODPROBE_PATH_APPEND", s.P.Modprobe)
	}
	rc1, _ := s.builtin("rc1_path")
	s.rc1Modprobe = rc1 == "flux modprobe rc1" && !strings.Contains(s.S.BrokerOptions, "rc1_path")
	s.killUnjoined = s.S.Index != 0 && s.rc1Modprobe
}
