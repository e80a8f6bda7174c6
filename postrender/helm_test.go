package postrender_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmpostrender "helm.sh/helm/v3/pkg/postrender"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/postrender"
)

// sdkInstall renders the chart as a client-only `helm install --dry-run` with the Helm SDK and
// the given post-renderer (nil for none), returning the release manifest.
func sdkInstall(t *testing.T, pr helmpostrender.PostRenderer) (string, error) {
	t.Helper()
	chrt, err := loader.Load(helmtest.ChartDir())
	require.NoError(t, err)
	kv, err := chartutil.ParseKubeVersion(helmtest.DefaultKubeVersion)
	require.NoError(t, err)
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace, install.KubeVersion = "flux-sample", "default", kv
	install.PostRenderer = pr
	rel, err := install.Run(chrt, map[string]any{"size": 6})
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// TestHelmSDK runs the post-renderer in process through Helm 3's PostRenderer interface.
func TestHelmSDK(t *testing.T) {
	plain, err := sdkInstall(t, nil)
	require.NoError(t, err)
	same, err := sdkInstall(t, postrender.PostRenderer{})
	require.NoError(t, err)
	assert.Equal(t, plain, same, "an unmodified render passes through")

	renamed, err := sdkInstall(t, postrender.PostRenderer{Options: postrender.Options{KustomizeDir: kustomization("rename")}})
	require.NoError(t, err)
	mc := decode(t, renamed, "team-flux-sample-broker")
	assertFluxWorks(t, mc, 16)
	assert.Equal(t, "6", mc.Config.Data["size"])

	_, err = sdkInstall(t, postrender.PostRenderer{Options: postrender.Options{KustomizeDir: kustomization("subdomain-only-job")}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Job default/flux-sample has subdomain "brokers", but there is no Service "brokers"`)
}

// buildPostRenderer builds the CLI into a temporary directory.
func buildPostRenderer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "minicluster-postrender")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/minicluster/minicluster/postrender/cmd/minicluster-postrender")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// helmRun runs a helm CLI with isolated plugin, config and cache directories.
func helmRun(t *testing.T, helm, home string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(helm, args...)
	cmd.Dir = helmtest.Root()
	cmd.Env = append(os.Environ(),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
	)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

var templateArgs = []string{"template", "flux-sample", "charts/minicluster", "--kube-version", "1.35.0", "--set", "size=6"}

func TestHelm3CLI(t *testing.T) {
	helm := helmtest.HelmCLI(t, 3)
	bin := buildPostRenderer(t)
	home := t.TempDir()
	plain, stderr, err := helmRun(t, helm, home, templateArgs...)
	require.NoError(t, err, stderr)

	out, stderr, err := helmRun(t, helm, home, append(templateArgs, "--post-renderer", bin)...)
	require.NoError(t, err, stderr)
	assert.Equal(t, plain, out)

	abs, err := filepath.Abs(kustomization("rename"))
	require.NoError(t, err)
	out, stderr, err = helmRun(t, helm, home, append(templateArgs, "--post-renderer", bin, "--post-renderer-args=--kustomize="+abs)...)
	require.NoError(t, err, stderr)
	assertFluxWorks(t, decode(t, out, "team-flux-sample-broker"), 16)

	broken, err := filepath.Abs(kustomization("port-only-container"))
	require.NoError(t, err)
	out, stderr, err = helmRun(t, helm, home, append(templateArgs, "--post-renderer", bin, "--post-renderer-args", "--kustomize", "--post-renderer-args", broken)...)
	require.Error(t, err)
	assert.Empty(t, out)
	assert.Contains(t, stderr, "Service default/flux-sample port is 8050 but the brokers listen on 9000", "Helm 3 shows the post-renderer's message")
}

func TestHelm4Plugin(t *testing.T) {
	helm := helmtest.HelmCLI(t, 4)
	bin := buildPostRenderer(t)
	home := t.TempDir()
	// The plugin directory as `make build` lays it out in bin/helm-plugin/minicluster.
	pluginDir := filepath.Join(t.TempDir(), "minicluster")
	require.NoError(t, os.MkdirAll(pluginDir, 0o755))
	manifest, err := os.ReadFile(filepath.Join("plugin", "plugin.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(pluginDir, "plugin.yaml"), manifest, 0o644))
	exe, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(pluginDir, "minicluster-postrender"), exe, 0o755))

	_, stderr, err := helmRun(t, helm, home, "plugin", "install", pluginDir)
	require.NoError(t, err, stderr)
	list, stderr, err := helmRun(t, helm, home, "plugin", "list")
	require.NoError(t, err, stderr)
	assert.Regexp(t, `minicluster\s+0\.1\.0\s+postrenderer/v1`, list)

	// Helm 4 writes post-rendered documents in its own format: compare with a plugin that
	// passes the manifests through unchanged (cat).
	catDir := filepath.Join(t.TempDir(), "passthrough")
	require.NoError(t, os.MkdirAll(catDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(catDir, "plugin.yaml"), []byte(
		"apiVersion: v1\ntype: postrenderer/v1\nname: passthrough\nversion: 1.2.3\nruntime: subprocess\nruntimeConfig:\n  platformCommand:\n    - command: cat\n"), 0o644))
	_, stderr, err = helmRun(t, helm, home, "plugin", "install", catDir)
	require.NoError(t, err, stderr)
	plain, stderr, err := helmRun(t, helm, home, append(templateArgs, "--post-renderer", "passthrough")...)
	require.NoError(t, err, stderr)
	out, stderr, err := helmRun(t, helm, home, append(templateArgs, "--post-renderer", "minicluster")...)
	require.NoError(t, err, stderr)
	assert.Equal(t, plain, out, "Helm 4 post-renders hooks too; an unmodified render passes through")
	assert.Contains(t, out, "kind: Pod", "the helm test hook went through")

	abs, err := filepath.Abs(kustomization("rename"))
	require.NoError(t, err)
	out, stderr, err = helmRun(t, helm, home, append(templateArgs, "--post-renderer", "minicluster", "--post-renderer-args=--kustomize="+abs)...)
	require.NoError(t, err, stderr)
	assertFluxWorks(t, decode(t, out, "team-flux-sample-broker"), 16)
	assert.Contains(t, out, "name: team-flux-sample-keygen", "Helm 4 post-renders the keygen hook")
	assert.NotContains(t, out, "postrenderer.helm.sh/postrender-filename", "Helm 4 found its annotation on every document and removed it")

	broken, err := filepath.Abs(kustomization("port-only-container"))
	require.NoError(t, err)
	out, stderr, err = helmRun(t, helm, home, append(templateArgs, "--post-renderer", "minicluster", "--post-renderer-args=--kustomize="+broken)...)
	require.Error(t, err)
	assert.Empty(t, strings.TrimSpace(out))
	// Helm 4.3.1 drops a post-renderer plugin's stderr and shows only this.
	assert.Contains(t, stderr, `plugin "minicluster" exited with error`)
}
