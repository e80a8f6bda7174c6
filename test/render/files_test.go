package render

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// chartFile is one file of the chart's files/.
func chartFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(helmtest.ChartDir(), "files", name))
	require.NoError(t, err)
	return string(b)
}

// TestScriptsAreTheChartFiles: the pods run files/ byte for byte (what shellcheck checked), and
// every file there is used.
func TestScriptsAreTheChartFiles(t *testing.T) {
	objs := render(t, helmtest.Options{})
	scripts := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-entrypoint")
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	test := get[*corev1.Pod](t, objs, "Pod", "flux-sample-test-wiring")
	rendered := map[string]string{
		"entrypoint.sh":          scripts.Data["entrypoint.sh"],
		"env.sh":                 scripts.Data["env.sh"],
		"helpers.sh":             scripts.Data["helpers.sh"],
		"flux.sh":                scripts.Data["flux"],
		"modprobe-rc1.py":        scripts.Data["modprobe-rc1.py"],
		"validate-brokers-up.py": scripts.Data["validate-brokers-up.py"],
		"validate-feasible.py":   scripts.Data["validate-feasible.py"],
		"autoscale-state.py":     scripts.Data["autoscale-state.py"],
		"rc3.sh":                 scripts.Data["rc3.sh"],
		"broker-rc3.sh":          scripts.Data["broker-rc3.sh"],
		"flux-container.sh":      scripts.Data["flux-container.sh"],
		"view-copy.sh":           container(t, job, "flux-view").Command[2],
		"test-wiring.sh":         test.Spec.Containers[0].Command[2],
	}
	assert.Len(t, scripts.Data, 11, "entrypoint.sh, env.sh, helpers.sh, flux, flux-container.sh, modprobe-rc1.py, validate-feasible.py, validate-brokers-up.py, autoscale-state.py, rc3.sh, broker-rc3.sh")
	entries, err := os.ReadDir(filepath.Join(helmtest.ChartDir(), "files"))
	require.NoError(t, err)
	for _, e := range entries {
		want := chartFile(t, e.Name())
		got, ok := rendered[e.Name()]
		if assert.Truef(t, ok, "files/%s is not rendered anywhere", e.Name()) {
			assert.Equalf(t, want, got, "files/%s as rendered", e.Name())
		}
		assert.NotContainsf(t, want, "{{", "files/%s: no templating in files/ (pass values in the environment)", e.Name())
	}
	assert.Len(t, entries, len(rendered))
}

// TestViewCopy runs the flux-view container's script with busybox sh on a view image's layout
// under a temporary root: /opt/view links to the view tree, which links into the software.
func TestViewCopy(t *testing.T) {
	requireBusybox(t)
	for _, tc := range []struct {
		name, set string
		software  bool // the software tree is copied
		ended     bool // the broker's container ends with .ended (else: it lets go of .alive)
	}{
		{"software", "", true, false},
		{"no software", "flux.view.softwarePath=", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := helmtest.Options{Set: []string{"flux.view.image=example.org/view:1"}}
			if tc.set != "" {
				opts.Set = append(opts.Set, tc.set)
			}
			view := container(t, get[*batchv1.Job](t, render(t, opts), "Job", "flux-sample"), "flux-view")
			root := t.TempDir()
			for _, dir := range []string{"/opt/software/flux/bin", "/opt/views/v1/bin", "/mnt/flux", "/minicluster/keys"} {
				require.NoError(t, os.MkdirAll(root+dir, 0o755))
			}
			require.NoError(t, os.WriteFile(root+"/opt/software/flux/bin/flux", []byte("#!/bin/sh\n"), 0o755))
			require.NoError(t, os.Symlink(root+"/opt/software/flux/bin/flux", root+"/opt/views/v1/bin/flux"))
			require.NoError(t, os.Symlink(root+"/opt/views/v1", root+"/opt/view"))
			script := view.Command[2]
			for _, path := range []string{"/opt/view", "/minicluster/keys"} {
				script = strings.ReplaceAll(script, path, root+path)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, busybox, "sh", "-c", script)
			cmd.Env = []string{"PATH=/nonexistent"}
			for _, e := range view.Env {
				value := e.Value
				if strings.HasPrefix(value, "/") {
					value = root + value
				}
				cmd.Env = append(cmd.Env, e.Name+"="+value)
			}
			// A file, not a pipe: Wait must not wait for the cat still reading .alive (its stderr).
			out := outputFile(t)
			cmd.Stdout, cmd.Stderr = out.f, out.f
			// busybox runs its own applets (mkfifo, cp, readlink) whatever PATH says.
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			m := root + "/mnt/flux"
			for {
				if _, err := os.Stat(m + "/.ready"); err == nil {
					break
				}
				b, err := os.ReadFile(m + "/.failed")
				require.Errorf(t, err, "the copy failed: %s", b)
				select {
				case err := <-done:
					t.Fatalf("the script ended before .ready: %v\n%s", err, out.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			fi, err := os.Stat(m + "/.alive")
			require.NoError(t, err)
			require.Equal(t, os.ModeNamedPipe, fi.Mode().Type(), ".alive is the FIFO the entrypoint holds")
			alive, err := os.OpenFile(m+"/.alive", os.O_RDWR, 0) // as the entrypoint holds it
			require.NoError(t, err)
			defer alive.Close()
			target, err := os.Readlink(m + "/view/bin/flux")
			require.NoError(t, err, "the view tree is copied with its links")
			assert.Equal(t, root+"/opt/software/flux/bin/flux", target)
			_, err = os.Stat(m + "/software/flux/bin/flux")
			assert.Equal(t, tc.software, err == nil, "software copied: %v", err)

			// It stays until the broker's container ends: the entrypoint's .ended, or EOF on .alive.
			select {
			case err := <-done:
				t.Fatalf("the script ended while the broker runs: %v\n%s", err, out.String())
			case <-time.After(300 * time.Millisecond):
			}
			if tc.ended {
				require.NoError(t, os.WriteFile(root+"/minicluster/keys/.ended", nil, 0o644))
				select {
				case err := <-done:
					require.NoError(t, err, out.String())
				case <-ctx.Done():
					t.Fatalf("the script did not end after .ended\n%s", out.String())
				}
				return // the deferred Close lets go of the cat still reading .alive
			}
			require.NoError(t, alive.Close())
			select {
			case err := <-done:
				require.NoError(t, err, out.String())
			case <-ctx.Done():
				t.Fatalf("the script did not end after .ended\n%s", out.String())
			}
		})
	}
}

type output struct{ f *os.File }

func outputFile(t *testing.T) output {
	f, err := os.Create(filepath.Join(t.TempDir(), "output"))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return output{f}
}

func (o output) String() string {
	b, _ := os.ReadFile(o.f.Name())
	return string(b)
}

// TestViewCopyFails: a copy that fails says so in .failed, naming the view image.
func TestViewCopyFails(t *testing.T) {
	requireBusybox(t)
	view := container(t, get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"flux.view.image=example.org/view:1"}}), "Job", "flux-sample"), "flux-view")
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(root+"/mnt/flux", 0o755))
	require.NoError(t, os.MkdirAll(root+"/minicluster/keys", 0o755))
	require.NoError(t, os.WriteFile(root+"/minicluster/keys/.ended", nil, 0o644))
	// No /opt/view at all.
	script := strings.ReplaceAll(strings.ReplaceAll(view.Command[2], "/opt/view", root+"/opt/view"), "/minicluster/keys", root+"/minicluster/keys")
	cmd := exec.Command(busybox, "sh", "-c", script)
	cmd.Env = []string{"PATH=/nonexistent", "MINICLUSTER_FLUX_VIEW_MOUNT=" + root + "/mnt/flux",
		"MINICLUSTER_FLUX_VIEW_IMAGE=" + env(view)["MINICLUSTER_FLUX_VIEW_IMAGE"], "MINICLUSTER_FLUX_VIEW_SOFTWARE="}
	out := outputFile(t)
	cmd.Stdout, cmd.Stderr = out.f, out.f
	require.NoError(t, cmd.Run(), out.String())
	// Let go of the cat that waits for a writer on .alive.
	if alive, err := os.OpenFile(root+"/mnt/flux/.alive", os.O_RDWR, 0); err == nil {
		alive.Close()
	}
	failed, err := os.ReadFile(root + "/mnt/flux/.failed")
	require.NoError(t, err)
	assert.Contains(t, string(failed), "copying Flux out of the view image example.org/view:1 failed: ")
	assert.NoFileExists(t, root+"/mnt/flux/.ready")
}
