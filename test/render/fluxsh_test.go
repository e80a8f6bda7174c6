package render

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minicluster/minicluster/internal/fakeflux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/internal/tooltest"
)

// The chart's `flux` for kubectl exec (files/flux.sh), which stays shell: it runs in every
// broker pod's image, whose /bin/sh busybox stands in for, as env.sh and helpers.sh do.

// busybox runs the rendered scripts, as the images' /bin/sh would.
const busybox = "/usr/bin/busybox"

// podPaths are the absolute paths the rendered scripts use; the tests move them under a
// temporary root.
var podPaths = []string{"/minicluster/config", "/minicluster/run", "/minicluster/keys",
	"/minicluster/scripts", "/minicluster/state", "/minicluster/api", "/etc/curve", "/etc/munge", "/usr/local/sbin"}

// fakeFlux stands in for flux: every call's arguments go, one per line, to $fake/calls/N, and
// its environment to $fake/envs/N; it knows no command (exit 98).
const fakeFlux = `#!/usr/bin/busybox sh
fake=@FAKE@
n=$(($(cat "$fake/ncalls" 2>/dev/null || echo 0) + 1))
echo "$n" > "$fake/ncalls"
mkdir -p "$fake/calls" "$fake/envs"
: > "$fake/calls/$n"
for arg in "$@"; do printf '%s\n' "$arg" >> "$fake/calls/$n"; done
env > "$fake/envs/$n"
exit 98
`

// pod is one broker pod's scripts, ready to run on this machine.
type pod struct {
	root string // stands for / of the pod: podPaths live under it
	fake string // the fake flux's files
	env  []string
	// fluxRoot is the prefix of the fake flux: the view, or / of the pod.
	fluxRoot string
}

func requireBusybox(t *testing.T) {
	t.Helper()
	tooltest.File(t, busybox, "install the Debian package busybox-static (make deps)")
}

// newPod renders the chart and lays out pod index's files: the broker ConfigMap, env.sh,
// helpers.sh and flux (also at /usr/local/sbin/flux, first on PATH, as in an image) with their
// paths under a temporary root, the fake flux in the flux view's bin (or else in /bin, on PATH)
// and the Job container's environment.
func newPod(t *testing.T, opts helmtest.Options, index int) *pod {
	t.Helper()
	requireBusybox(t)
	objs := render(t, opts)
	scripts := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-entrypoint")
	config := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")

	p := &pod{root: t.TempDir()}
	p.fake = filepath.Join(p.root, "fake")
	moved := func(s string) string {
		for _, path := range append(podPaths, "/mnt/flux") {
			s = strings.ReplaceAll(s, path, p.root+path)
		}
		return s
	}
	for _, path := range append(podPaths, "/fake", "/bin") {
		require.NoError(t, os.MkdirAll(p.root+path, 0o755))
	}
	for k, v := range config.Data {
		p.write(t, "/minicluster/config/"+k, v, 0o644)
	}
	p.write(t, "/minicluster/scripts/env.sh", moved(scripts.Data["env.sh"]), 0o555)
	p.write(t, "/minicluster/scripts/helpers.sh", moved(scripts.Data["helpers.sh"]), 0o555)
	wrapper := strings.Replace(moved(scripts.Data["flux"]), "#!/bin/sh\n", "#!"+busybox+" sh\n", 1)
	require.True(t, strings.HasPrefix(wrapper, "#!"+busybox), "flux starts with #!/bin/sh")
	p.write(t, "/minicluster/scripts/flux", wrapper, 0o555)
	p.write(t, "/usr/local/sbin/flux", wrapper, 0o555)

	var flux *corev1.Container
	for i := range job.Spec.Template.Spec.Containers {
		if c := &job.Spec.Template.Spec.Containers[i]; c.Name == "flux" {
			flux = c
		}
	}
	require.NotNil(t, flux, "the Job has a flux container")
	p.env = []string{"PATH=" + p.root + "/usr/local/sbin:" + p.root + "/bin", "JOB_COMPLETION_INDEX=" + strconv.Itoa(index)}
	view := ""
	for _, e := range flux.Env {
		if strings.HasPrefix(e.Name, "MINICLUSTER_") || e.Name == "FLUX_URI" {
			require.Nilf(t, e.ValueFrom, "%s is a plain value", e.Name)
			p.env = append(p.env, e.Name+"="+moved(e.Value))
			if e.Name == "MINICLUSTER_FLUX_VIEW" && e.Value != "" {
				view = moved(e.Value)
			}
			if e.Name == "MINICLUSTER_FLUX_VIEW_ROOT" && e.Value != "" {
				view = fakeflux.LayOutViewImage(t, moved(e.Value))
			}
		}
	}
	// The helpers beside the broker (the keys step, the copy of the view) have done their part.
	fakeflux.HelpersReady(t, strings.Fields(p.envValue(t, "MINICLUSTER_HELPERS")))
	// Flux comes from the view when there is one, as in the pod; else from PATH.
	bin := p.root + "/bin"
	if view != "" {
		bin = view + "/bin"
	}
	p.fluxRoot = fakeflux.Install(t, bin, fakeFlux, p.fake)
	return p
}

// write writes a file under the pod's root and returns its path.
func (p *pod) write(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	full := p.root + path
	require.NoError(t, os.WriteFile(full, []byte(content), mode))
	require.NoError(t, os.Chmod(full, mode))
	return full
}

// calls lists the fake flux's calls in order, each as its arguments.
func (p *pod) calls(t *testing.T) [][]string { return fakeflux.Calls(t, p.fake) }

// envValue is the value of an environment variable of the pod.
func (p *pod) envValue(t *testing.T, name string) string {
	t.Helper()
	for _, e := range p.env {
		if v, ok := strings.CutPrefix(e, name+"="); ok {
			return v
		}
	}
	t.Fatalf("the pod has no %s", name)
	return ""
}

// The flux wrapper users run with kubectl exec waits for the helpers beside the broker: flux's
// python must not write byte code into a view that is still being copied. A helper that failed
// ends it with the reason.
func TestFluxWrapperWaitsForTheView(t *testing.T) {
	t.Parallel()
	wrapper := func(t *testing.T) (*pod, string) {
		p := newPod(t, helmtest.Options{}, 0)
		return p, p.root + "/minicluster/scripts/flux"
	}
	t.Run("waits for the copy", func(t *testing.T) {
		t.Parallel()
		p, path := wrapper(t)
		view := p.root + "/mnt/flux"
		require.NoError(t, os.Remove(view+"/.ready"))
		cmd := exec.Command(busybox, "sh", path, "resource", "list")
		cmd.Env = p.env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		time.Sleep(400 * time.Millisecond)
		assert.Empty(t, p.calls(t), "flux ran before the view was copied")
		require.NoError(t, os.WriteFile(view+"/.ready", nil, 0o444))
		_ = cmd.Wait() // the fake flux does not know `resource list`
		require.Len(t, p.calls(t), 1, out.String())
		assert.Equal(t, []string{"resource", "list"}, p.calls(t)[0])
	})
	t.Run("a failed copy", func(t *testing.T) {
		t.Parallel()
		p, path := wrapper(t)
		view := p.root + "/mnt/flux"
		require.NoError(t, os.Remove(view+"/.ready"))
		require.NoError(t, os.WriteFile(view+"/.failed", []byte("copying Flux out of the view image failed: disk full"), 0o444))
		cmd := exec.Command(busybox, "sh", path, "resource", "list")
		cmd.Env = p.env
		out, err := cmd.CombinedOutput()
		require.Error(t, err)
		assert.Contains(t, string(out), "minicluster: this broker cannot start: copying Flux out of the view image failed: disk full")
		assert.Empty(t, p.calls(t))
	})
}

// flux as kubectl exec runs it (ARGS as they came): PATH finds the chart's flux.sh at
// /usr/local/sbin/flux, first on PATH here as in most images.
func (p *pod) plainFlux(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, busybox, append([]string{"sh", "-c", `exec flux "$@"`, "flux"}, args...)...)
	cmd.Dir = p.root
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "flux did not finish within 30 s:\n%s", out)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run flux: %v", err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// callEnv is the environment of call n of the fake flux.
func (p *pod) callEnv(t *testing.T, n int) map[string]string {
	t.Helper()
	return fakeflux.ReadEnv(t, filepath.Join(p.fake, "envs", strconv.Itoa(n)))
}

// Plain `flux` in any broker pod (kubectl exec) runs the view's Flux or the image's, whichever
// the pod has, against that pod's broker (FLUX_URI, the same socket path in every pod); never
// the wrapper again, even where it comes first on PATH or where there is no other flux.
func TestPlainFlux(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, mode string }{
		{"view copy", "flux.view.mode=copy"},
		{"view image", "flux.view.mode=image"},
		{"flux in the image", "flux.view.enabled=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, helmtest.Options{Set: []string{tc.mode}}, 2)
			uri := "local://" + p.root + "/minicluster/run/flux/local"
			require.Equal(t, uri, p.envValue(t, "FLUX_URI"), "the container's FLUX_URI is the pinned local-uri")
			_, out := p.plainFlux(t, "proxy", uri, "flux", "getattr", "rank") // the fake flux does not know proxy
			require.Equal(t, [][]string{{"proxy", uri, "flux", "getattr", "rank"}}, p.calls(t), out)
			env := p.callEnv(t, 1)
			assert.Equal(t, uri, env["FLUX_URI"])
			assert.True(t, strings.HasPrefix(env["PATH"], p.fluxRoot+"/bin:"), "the real flux's bin first on PATH: %s", env["PATH"])
			if tc.mode != "flux.view.enabled=false" {
				assert.Contains(t, env["LUA_PATH"], p.fluxRoot+"/share/lua/5.1/?.lua", "the view's environment")
			}
		})
	}
	t.Run("no flux in the image", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"flux.view.enabled=false"}}, 0)
		require.NoError(t, os.Remove(p.root+"/bin/flux"))
		status, out := p.plainFlux(t, "resource", "list")
		assert.Equal(t, 127, status, out)
		assert.Contains(t, out, "minicluster: no flux to run: not on PATH ("+p.root+"/usr/local/sbin:"+p.root+"/bin) but for this wrapper")
	})
	t.Run("no flux in the view", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"flux.view.mode=copy"}}, 0)
		view := p.envValue(t, "MINICLUSTER_FLUX_VIEW")
		require.NoError(t, os.Remove(view+"/bin/flux"))
		status, out := p.plainFlux(t, "resource", "list")
		assert.Equal(t, 127, status, out)
		assert.Contains(t, out, "minicluster: no flux to run: not in the flux view at "+view+"/bin, not on PATH")
	})
}
