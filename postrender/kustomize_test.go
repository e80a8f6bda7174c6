package postrender_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/postrender"
)

// TestKustomizations applies each kustomization under testdata/kustomizations and checks the MiniCluster
// that results, key by key, against the final Job, Service and namespace.
func TestKustomizations(t *testing.T) {
	base := chart(t, helmtest.Options{})
	baseTOML := decode(t, base, "flux-sample-broker").Config.Data["broker.toml"]
	cases := []struct {
		kustomization string
		opts          helmtest.Options
		config        string // the broker ConfigMap's final name
		check         func(t *testing.T, mc miniCluster, out string)
	}{
		{kustomization: "rename", config: "team-flux-sample-broker", check: func(t *testing.T, mc miniCluster, out string) {
			assert.Equal(t, "team-flux-sample", mc.Job.Name)
			assert.Equal(t, "team-flux-sample", mc.Service.Name)
			assert.Equal(t, "team-flux-sample", mc.Job.Spec.Template.Spec.Subdomain, "kustomize follows the Service rename in the subdomain")
			assert.Equal(t, "team-flux-sample-[0-15]", mc.Config.Data["hosts"])
			// The keygen Job fills the key object under the chart's name: the rename is undone.
			assert.Contains(t, containerArgs(t, mc, "keys"), "--curve-name=flux-sample-curve")
			assert.Contains(t, out, "\n  name: flux-sample-curve\n")
			assert.Contains(t, out, "- flux-sample-curve\n", "the keygen Role may still get it")
			assert.Contains(t, mc.Config.Annotations[postrender.ParametersAnnotation], `"job":"team-flux-sample","service":"team-flux-sample"`)
		}},
		{kustomization: "namespace", opts: helmtest.Options{Set: []string{"curve.existingSecret=my-cert"}}, config: "flux-sample-broker", check: func(t *testing.T, mc miniCluster, _ string) {
			assert.Equal(t, "hpc", mc.Job.Namespace)
			assert.Equal(t, "hpc", mc.Service.Namespace)
			assert.Equal(t, "hpc", mc.Config.Namespace)
		}},
		{kustomization: "subdomain", config: "flux-sample-broker", check: func(t *testing.T, mc miniCluster, _ string) {
			assert.Equal(t, "brokers", mc.Service.Name)
			assert.Equal(t, "flux-sample", mc.Job.Name)
			assert.Contains(t, mc.Config.Annotations[postrender.ParametersAnnotation], `"job":"flux-sample","service":"brokers"`)
		}},
		{kustomization: "port", config: "flux-sample-broker", check: func(t *testing.T, mc miniCluster, _ string) {
			bs := mc.TOML["bootstrap"].(map[string]any)
			assert.Equal(t, int64(9000), bs["default_port"])
			assert.Contains(t, mc.Config.Annotations[postrender.ParametersAnnotation], `"port":9000`)
		}},
		{kustomization: "resize", config: "flux-sample-broker", check: func(t *testing.T, mc miniCluster, _ string) {
			assert.Equal(t, "8", mc.Config.Data["size"])
			assert.Equal(t, baseTOML, mc.Config.Data["broker.toml"], "a resize within maxSize leaves broker.toml as the chart wrote it")
		}},
	}
	for _, c := range cases {
		t.Run(c.kustomization, func(t *testing.T) {
			in := base
			if c.opts.Set != nil {
				in = chart(t, c.opts)
			}
			out := run(t, in, postrender.Options{KustomizeDir: kustomization(c.kustomization)})
			mc := decode(t, out, c.config)
			assertFluxWorks(t, mc, 16)
			c.check(t, mc, out)
			assert.Equal(t, len(docs(in)), len(docs(out)), "no document dropped")
		})
	}
}

func containerArgs(t *testing.T, mc miniCluster, name string) []string {
	t.Helper()
	for _, c := range mc.Job.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c.Args
		}
	}
	t.Fatalf("Job %s has no container %s", mc.Job.Name, name)
	return nil
}

func TestKustomizationRejects(t *testing.T) {
	base := chart(t, helmtest.Options{})
	empty := t.TempDir()
	noRendered := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(noRendered, "kustomization.yaml"), []byte("resources: [other.yaml]\n"), 0o644))
	cases := []struct {
		name, dir string
		want      string
	}{
		{"not a directory", filepath.Join(empty, "missing"), "missing: no such directory; give the directory holding kustomization.yaml"},
		{"no kustomization", empty, "no kustomization.yaml in it; write one with resources: [rendered.yaml]"},
		{"rendered.yaml not listed", noRendered, "kustomization.yaml: resources does not list rendered.yaml, the manifests Helm rendered; add it: resources: [rendered.yaml]"},
		{"subdomain names no Service", kustomization("subdomain-only-job"), `Job default/flux-sample has subdomain "brokers", but there is no Service "brokers" in namespace default (Services there: flux-sample)`},
		{"ports disagree", kustomization("port-only-container"), "Service default/flux-sample port is 8050 but the brokers listen on 9000 (Job default/flux-sample container flux port broker)"},
		{"key object moved", kustomization("namespace"), `the kustomization moves Secret default/flux-sample-curve (a key object the keygen Job fills) to namespace "hpc"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := postrender.Render([]byte(base), postrender.Options{KustomizeDir: c.dir})
			require.Error(t, err)
			t.Log(err)
			assert.Nil(t, out)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
