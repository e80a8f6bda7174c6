package version

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/internal/repo"
)

// TestRepositoryCarriesVERSION: every file that carries the version carries ./VERSION's.
func TestRepositoryCarriesVERSION(t *testing.T) {
	root, err := repo.Root()
	require.NoError(t, err)
	require.NoError(t, Check(root))
	v, err := FromRepo()
	require.NoError(t, err)
	chart, err := os.ReadFile(filepath.Join(root, "charts/minicluster/Chart.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(chart), "\nappVersion: \""+v+"\"\n")
}

// tree writes a small repository with version "1.0.0" everywhere and VERSION v.
func tree(t *testing.T, v string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"VERSION": v + "\n",
		"charts/minicluster/Chart.yaml": "apiVersion: v2\n# version: in a comment stays\nversion: 1.0.0\nappVersion: \"1.0.0\"\nannotations:\n" +
			"  artifacthub.io/images: |\n    - name: flux-keygen\n      image: ghcr.io/minicluster/flux-keygen:1.0.0\n    - name: tests\n      image: busybox:1.37\n",
		"postrender/plugin/plugin.yaml": "apiVersion: v1\nname: minicluster\nversion: 1.0.0\n",
		"values/mpi.yaml":               "image: ghcr.io/minicluster/mpi:1.0.0\nflux:\n  view:\n    image: \"ghcr.io/minicluster/flux-view:1.0.0\"\n",
		"values/plain.yaml":             "image: ubuntu:24.04\nkeygen:\n  image:\n    repository: ghcr.io/minicluster/flux-keygen\n",
	}
	for p, data := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(data), 0o644))
	}
	return root
}

func read(t *testing.T, root, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, p))
	require.NoError(t, err)
	return string(data)
}

func TestStampAndCheck(t *testing.T) {
	root := tree(t, "1.0.0")
	require.NoError(t, Check(root), "all agree")

	root = tree(t, "2.1.0-rc.1")
	err := Check(root)
	require.Error(t, err)
	assert.Equal(t, "VERSION says 2.1.0-rc.1, but charts/minicluster/Chart.yaml, postrender/plugin/plugin.yaml, values/mpi.yaml carry another version: run make version (go run ./ci/version), which writes VERSION into them", err.Error())

	changed, err := Stamp(root)
	require.NoError(t, err)
	assert.Len(t, changed, 3, "values/plain.yaml names no tagged image of ours: untouched")
	require.NoError(t, Check(root))
	chart := read(t, root, "charts/minicluster/Chart.yaml")
	assert.Contains(t, chart, "\nversion: 2.1.0-rc.1\nappVersion: \"2.1.0-rc.1\"\n")
	assert.Contains(t, chart, "image: ghcr.io/minicluster/flux-keygen:2.1.0-rc.1\n")
	assert.Contains(t, chart, "# version: in a comment stays\n")
	assert.Contains(t, chart, "image: busybox:1.37\n", "other images keep their tags")
	assert.Equal(t, "apiVersion: v1\nname: minicluster\nversion: 2.1.0-rc.1\n", read(t, root, "postrender/plugin/plugin.yaml"))
	assert.Equal(t, "image: ghcr.io/minicluster/mpi:2.1.0-rc.1\nflux:\n  view:\n    image: \"ghcr.io/minicluster/flux-view:2.1.0-rc.1\"\n", read(t, root, "values/mpi.yaml"))
	changed, err = Stamp(root)
	require.NoError(t, err)
	assert.Empty(t, changed, "a second stamp changes nothing")
}

func TestBadInput(t *testing.T) {
	for _, v := range []string{"1.0", "v1.0.0", "1.0.0+build.5", ""} {
		_, err := Read(tree(t, v))
		if assert.Errorf(t, err, "VERSION %q", v) {
			assert.Contains(t, err.Error(), "is not x.y.z[-prerelease]")
		}
	}
	root := tree(t, "1.0.0")
	p := filepath.Join(root, "charts/minicluster/Chart.yaml")
	require.NoError(t, os.WriteFile(p, []byte(read(t, root, "charts/minicluster/Chart.yaml")+"version: 1.0.0\n"), 0o644))
	err := Check(root)
	require.Error(t, err)
	assert.True(t, strings.HasSuffix(err.Error(), "Chart.yaml: 2 top-level version: lines, want 1"), err.Error())
}
