package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flux.view.mode=image: the supervisor follows /opt/view's links inside the mounted view image
// (one relative, one absolute to the image's root) and runs Flux from the view tree they reach.
func TestViewImage(t *testing.T) {
	t.Parallel()
	t.Run("follows the links", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{view: "image", env: map[string]string{"MINICLUSTER_COMMAND": "hostname -s"}})
		p.brokers(t, "0 30")
		status, out := p.run(t)
		assert.Equal(t, 0, status, out)
		require.Len(t, p.brokerRuns(t), 1, "flux from the view tree ran the broker:\n%s", out)
		env := p.brokerEnv(t, 1)
		assert.True(t, strings.HasPrefix(env["PATH"], p.fluxRoot+"/bin:"), env["PATH"])
		assert.Equal(t, p.fluxRoot, env["MINICLUSTER_FLUX_VIEW"])
	})
	t.Run("no view in the image", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{view: "image", env: map[string]string{"MINICLUSTER_COMMAND": "hostname -s"}})
		root := p.env["MINICLUSTER_FLUX_VIEW_ROOT"]
		require.NoError(t, os.RemoveAll(root+"/opt"))
		status, out := p.run(t)
		assert.Equal(t, 78, status, out)
		assert.Contains(t, out, "error: flux is not in the flux view at "+root+"/opt/view/bin: set flux.view.image")
	})
}

// The view's environment: PATH, PYTHONPATH and the Lua paths, as env.sh sets them.
func TestFluxEnvOfAView(t *testing.T) {
	view := t.TempDir()
	require.NoError(t, os.MkdirAll(view+"/lib/python3.12/site-packages", 0o755))
	e := NewEnviron([]string{"PATH=/usr/bin", "MINICLUSTER_FLUX_VIEW=" + view, "LUA_PATH="})
	fluxEnv(e, DefaultPaths)
	assert.Equal(t, view+"/bin:/usr/bin", e.Value("PATH"))
	assert.Equal(t, view+"/lib/python3.12/site-packages", e.Value("PYTHONPATH"))
	assert.Equal(t, view+"/share/lua/5.1/?.lua;"+view+"/share/lua/5.1/?/init.lua;;", e.Value("LUA_PATH"))
	assert.Equal(t, view+"/lib/lua/5.1/?.so;;", e.Value("LUA_CPATH"))
	assert.Equal(t, "local:///minicluster/run/flux/local", e.Value("FLUX_URI"))
}

// The broker runs the real flux, not the wrapper that comes first on PATH in an image with
// Flux, and without the container's FLUX_URI.
func TestRunsTheRealFlux(t *testing.T) {
	t.Parallel()
	for _, view := range []string{"copy", "none"} {
		t.Run(view, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, podOptions{view: view, env: map[string]string{"MINICLUSTER_COMMAND": "hostname"}})
			p.runsOnce(t)
			require.Len(t, p.brokerRuns(t), 1)
			env := p.brokerEnv(t, 1)
			assert.NotContains(t, env, "FLUX_URI")
			assert.True(t, strings.HasPrefix(env["PATH"], p.fluxRoot+"/bin:"), "the real flux's bin first on PATH: %s", env["PATH"])
			assert.NoFileExists(t, p.fake+"/wrapper", "the chart's flux wrapper ran")
		})
	}
}

func TestFailsWithoutFlux(t *testing.T) {
	t.Parallel()
	t.Run("R encode fails", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{})
		p.write(t, "/minicluster/config/hosts", "flux-sample-[0-5]\n", 0o644)
		p.write(t, "/fake/r-status", "1\n", 0o644)
		p.cannotStart(t, "minicluster[0]: error: flux R encode --hosts=flux-sample-[0-5] --local failed: Flux cannot run in this image")
	})
	t.Run("no flux in the view", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{})
		view := p.env["MINICLUSTER_FLUX_VIEW"]
		require.NoError(t, os.Remove(view+"/bin/flux"))
		status, out := p.run(t)
		assert.Equal(t, 78, status, out)
		assert.Contains(t, out, "error: flux is not in the flux view at "+view+"/bin: set flux.view.image")
	})
	t.Run("no flux in the image", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{view: "none", env: map[string]string{"MINICLUSTER_IMAGE": "example.com/no-flux:1"}})
		require.NoError(t, os.Remove(p.root+"/bin/flux"))
		status, out := p.run(t)
		assert.Equal(t, 78, status, out)
		assert.Contains(t, out, "error: flux is not on PATH in image example.com/no-flux:1: set flux.view.enabled=true")
	})
}

// The scheduler: Fluxion's modprobe files and modules from the prefix of the Flux the pod runs
// (the view here), or a message naming what is missing; sched-simple needs nothing.
func TestScheduler(t *testing.T) {
	t.Parallel()
	hostname := map[string]string{"MINICLUSTER_COMMAND": "hostname"}
	t.Run("fluxion from the view", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{env: hostname})
		p.runsOnce(t)
		env := p.brokerEnv(t, 1)
		assert.Equal(t, p.fluxRoot+"/etc/flux/modprobe:"+p.root+"/minicluster/modprobe", env["FLUX_MODPROBE_PATH_APPEND"])
		assert.Equal(t, p.fluxRoot+"/lib/flux/modules", env["FLUX_MODULE_PATH_PREPEND"])
		assert.Equal(t, p.fluxRoot+"/libexec/flux/cmd", env["FLUX_EXEC_PATH_PREPEND"])
		v, set := env["FLUXION_RESOURCE_OPTIONS"]
		assert.True(t, set && v == "", "Fluxion's resource options emptied (no load-allowlist for R): %q %v", v, set)
	})
	t.Run("fluxion missing", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_FLUX_VIEW_IMAGE": "example.com/view:1"}})
		require.NoError(t, os.RemoveAll(p.fluxRoot+"/etc/flux/modprobe"))
		p.cannotStart(t, "error: flux.scheduler=fluxion, but the flux view of example.com/view:1 has no Fluxion (flux-sched)", "or set flux.scheduler=simple")
	})
	t.Run("fluxion in flux-core's prefix", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{view: "none", env: hostname})
		require.NoError(t, os.RemoveAll(p.fluxRoot+"/etc/flux/modprobe"))
		p.write(t, "/fake/core/etc/flux/modprobe/modprobe.d/fluxion.toml", "", 0o644)
		p.runsOnce(t)
		assert.Equal(t, p.root+"/minicluster/modprobe", p.brokerEnv(t, 1)["FLUX_MODPROBE_PATH_APPEND"])
	})
	t.Run("simple needs no Fluxion", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_SCHEDULER": "simple"}})
		require.NoError(t, os.RemoveAll(p.fluxRoot+"/etc/flux/modprobe"))
		p.runsOnce(t)
		assert.NotContains(t, p.brokerEnv(t, 1), "FLUX_MODULE_PATH_PREPEND")
	})
}

// flux-pmix: a command that asks for -o pmi=pmix needs its shell plugin; one in the view (not
// in flux-core's plugin path) is loaded by the job shells' initrc for those jobs alone, or
// becomes their plugin path where flux-core does not say where its initrc is.
func TestPMIx(t *testing.T) {
	t.Parallel()
	command := map[string]string{"MINICLUSTER_COMMAND": "flux run -N 2 -o pmi=pmix ./ring"}
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_FLUX_VIEW_IMAGE": "example.com/view:1", "MINICLUSTER_COMMAND": command["MINICLUSTER_COMMAND"]}})
		p.cannotStart(t, "error: the command asks for -o pmi=pmix (OpenMPI's PMIx, served by flux-pmix), but the flux view of example.com/view:1 has no flux-pmix: no lib/flux/shell/plugins/pmix.so")
	})
	t.Run("in the view, no initrc", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{env: command})
		plugins := p.fluxRoot + "/lib/flux/shell/plugins"
		p.write(t, strings.TrimPrefix(plugins, p.root)+"/pmix.so", "", 0o644)
		p.runsOnce(t)
		assert.Contains(t, p.brokerRuns(t)[0], "-Sconf.shell_pluginpath="+plugins)
	})
	t.Run("in the view, with flux-core's initrc", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{env: command})
		plugins := p.fluxRoot + "/lib/flux/shell/plugins"
		p.write(t, strings.TrimPrefix(plugins, p.root)+"/pmix.so", "", 0o644)
		p.write(t, "/fake/core/etc/flux/shell/initrc.lua", "-- flux-core's\n", 0o644)
		p.runsOnce(t)
		initrc := p.root + "/minicluster/run/shell/initrc.lua"
		assert.Contains(t, p.brokerRuns(t)[0], "-Sconf.shell_initrc="+initrc)
		b, err := os.ReadFile(initrc)
		require.NoError(t, err)
		assert.Contains(t, string(b), "plugin.load { file = [==["+plugins+"/pmix.so]==], conf = {} }")
		assert.Contains(t, string(b), "source [=="+"["+p.fake+"/core/etc/flux/shell/initrc.lua]==]")
		link, err := os.Readlink(filepath.Join(p.root, "minicluster/run/shell/lua.d"))
		require.NoError(t, err)
		assert.Equal(t, p.fake+"/core/etc/flux/shell/lua.d", link)
	})
	t.Run("not asked for, not there", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname"}})
		p.runsOnce(t)
		for _, arg := range p.brokerRuns(t)[0] {
			assert.NotContains(t, arg, "shell_pluginpath")
		}
	})
}

// flux.wrap: the broker runs as flux start --wrap runs it: the words, then flux-broker from
// FLUX_EXEC_PATH in Flux's environment.
func TestWrap(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_WRAP": "/usr/bin/env,WRAPPED=yes"}})
	broker := p.write(t, "/fake/exec/flux-broker", "#!/bin/sh\nexec flux broker \"$@\"\n", 0o755)
	p.brokers(t, "0")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
	runs := p.brokerRuns(t)
	require.Len(t, runs, 1)
	assert.Equal(t, "yes", p.brokerEnv(t, 1)["WRAPPED"], "the wrapper ran the broker")
	assert.Contains(t, runs[0], "-Sbroker.quorum=4", "with the broker's own arguments")
	assert.Contains(t, out, "flux.wrap: the brokers run as: /usr/bin/env WRAPPED=yes "+broker)

	none := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_WRAP": "strace"}})
	none.cannotStart(t, "flux.wrap: no flux-broker on the FLUX_EXEC_PATH", `set flux.wrap=""`)
	assert.Equal(t, []string{"strace"}, wrapWords("strace,"))
}
