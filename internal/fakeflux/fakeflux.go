// Package fakeflux lays out what the tests of the broker's supervisor and of the chart's shell
// scripts give a pod in place of real Flux, and reads what their stand-in flux recorded: the
// flux-view layout of an image volume, Fluxion's modprobe file beside flux-core, each call of
// the stand-in (one file a call, one argument a line) and the environments it wrote.
package fakeflux

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// LayOutViewImage lays out the real flux-view layout under an image volume's root and returns
// its view tree: /opt/view -> views/view (relative) -> /opt/views/._view/HASH (absolute, so
// relative to the image's root, not the pod's).
func LayOutViewImage(t testing.TB, root string) string {
	t.Helper()
	tree := root + "/opt/views/._view/we5objnsiatpq6byzpmusld4dbiclpmt"
	require.NoError(t, os.MkdirAll(tree, 0o755))
	require.NoError(t, os.Symlink("views/view", root+"/opt/view"))
	require.NoError(t, os.Symlink("/opt/views/._view/we5objnsiatpq6byzpmusld4dbiclpmt", root+"/opt/views/view"))
	return tree
}

// HelpersReady makes each helper directory look as the helpers beside the broker leave it once
// they have done their part: the FIFO .alive the broker's side holds open, and .ready.
func HelpersReady(t testing.TB, dirs []string) {
	t.Helper()
	for _, dir := range dirs {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, ".alive"), 0o666))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".ready"), nil, 0o444))
	}
}

// Install writes the stand-in flux (script, its record directory in place of @FAKE@) into
// bin, and Fluxion's modprobe file into the Flux prefix above bin; it returns that prefix.
func Install(t testing.TB, bin, script, fake string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "flux"), []byte(strings.ReplaceAll(script, "@FAKE@", fake)), 0o755))
	prefix := filepath.Dir(bin)
	addFluxion(t, prefix)
	return prefix
}

// addFluxion puts Fluxion's modprobe file under a Flux prefix, as a spack view (or an image's
// Flux prefix) has it beside flux-core.
func addFluxion(t testing.TB, prefix string) {
	t.Helper()
	modprobe := filepath.Join(prefix, "etc/flux/modprobe/modprobe.d")
	require.NoError(t, os.MkdirAll(modprobe, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(modprobe, "fluxion.toml"), []byte("[[modules]]\n"), 0o644))
}

// Calls lists the stand-in's calls recorded under dir/calls in order, each as its arguments.
func Calls(t testing.TB, dir string) [][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "calls", "*"))
	require.NoError(t, err)
	sort.Slice(files, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(files[i]))
		b, _ := strconv.Atoi(filepath.Base(files[j]))
		return a < b
	})
	var calls [][]string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		calls = append(calls, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	}
	return calls
}

// ReadEnv reads an environment the stand-in wrote with env(1): one NAME=value a line.
func ReadEnv(t testing.TB, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	return env
}
