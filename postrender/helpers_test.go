package postrender_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/internal/yamlstream"
	"github.com/minicluster/minicluster/postrender"
)

// chart renders the chart as `helm template` does (manifests, then hooks), failing the test on
// error.
func chart(t testing.TB, opts helmtest.Options) string {
	t.Helper()
	out, err := helmtest.Template(opts)
	require.NoError(t, err)
	return out
}

// docs splits a stream at its separator lines, keeping each non-blank document's text (comment-
// only ones too, so that a count of them notices one dropped).
func docs(stream string) []string {
	var out []string
	for _, s := range yamlstream.Split(stream) {
		if strings.TrimSpace(s.Text) != "" {
			out = append(out, strings.TrimSuffix(s.Text, "\n"))
		}
	}
	return out
}

// edit applies fn to the document of the given kind and name and returns the new stream.
func edit(t testing.TB, stream, kind, name string, fn func(*yaml.RNode)) string {
	t.Helper()
	var b strings.Builder
	found := false
	for _, d := range docs(stream) {
		node, err := yaml.Parse(d)
		require.NoError(t, err)
		if node.GetKind() == kind && node.GetName() == name {
			found = true
			fn(node)
			d, err = node.String()
			require.NoError(t, err)
		}
		b.WriteString("---\n" + strings.TrimPrefix(d, "\n") + "\n")
	}
	require.Truef(t, found, "no %s %s in the stream", kind, name)
	return b.String()
}

// drop removes the document of the given kind and name.
func drop(t testing.TB, stream, kind, name string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range docs(stream) {
		node, err := yaml.Parse(d)
		require.NoError(t, err)
		if node.GetKind() == kind && node.GetName() == name {
			continue
		}
		b.WriteString("---\n" + strings.TrimPrefix(d, "\n") + "\n")
	}
	return b.String()
}

// set sets the field at path (creating it) to a YAML value.
func set(t testing.TB, value string, path ...string) func(*yaml.RNode) {
	return func(n *yaml.RNode) {
		t.Helper()
		v, err := yaml.Parse(value)
		require.NoError(t, err)
		parent, err := n.Pipe(yaml.LookupCreate(yaml.MappingNode, path[:len(path)-1]...))
		require.NoError(t, err)
		require.NoError(t, parent.PipeE(yaml.SetField(path[len(path)-1], v)))
	}
}

// clear removes the field at path.
func clear(t testing.TB, path ...string) func(*yaml.RNode) {
	return func(n *yaml.RNode) {
		t.Helper()
		parent, err := n.Pipe(yaml.Lookup(path[:len(path)-1]...))
		require.NoError(t, err)
		require.NotNil(t, parent, "no %v", path)
		_, err = parent.Pipe(yaml.Clear(path[len(path)-1]))
		require.NoError(t, err)
	}
}

// replace replaces old with new in the stream; old must occur.
func replace(t testing.TB, stream, old, new string) string {
	t.Helper()
	require.Contains(t, stream, old)
	return strings.ReplaceAll(stream, old, new)
}

// miniCluster is what a post-rendered MiniCluster looks like to Kubernetes and flux-core.
type miniCluster struct {
	Job     *batchv1.Job
	Service *corev1.Service
	Config  *corev1.ConfigMap
	TOML    map[string]any
}

// decode strictly decodes the post-renderer's output and returns the MiniCluster whose broker
// ConfigMap is named config.
func decode(t testing.TB, out, config string) miniCluster {
	t.Helper()
	objs, err := helmtest.DecodeAll(out)
	require.NoError(t, err)
	var mc miniCluster
	for _, o := range objs {
		if cm, ok := o.Object.(*corev1.ConfigMap); ok && o.Name == config {
			mc.Config = cm
		}
	}
	require.NotNil(t, mc.Config, "no ConfigMap %s", config)
	for _, o := range objs {
		if job, ok := o.Object.(*batchv1.Job); ok && job.Namespace == mc.Config.Namespace {
			for _, v := range job.Spec.Template.Spec.Volumes {
				if v.ConfigMap != nil && v.ConfigMap.Name == config {
					mc.Job = job
				}
			}
		}
	}
	require.NotNil(t, mc.Job, "no Job mounts ConfigMap %s", config)
	for _, o := range objs {
		if svc, ok := o.Object.(*corev1.Service); ok && svc.Namespace == mc.Job.Namespace && svc.Name == mc.Job.Spec.Template.Spec.Subdomain {
			mc.Service = svc
		}
	}
	require.NotNil(t, mc.Service, "no Service named by the Job's subdomain")
	_, err = toml.Decode(mc.Config.Data["broker.toml"], &mc.TOML)
	require.NoError(t, err)
	return mc
}

// assertFluxWorks checks, key by key and from the typed objects alone, that flux-core brokers
// in these pods would find each other: what broker.toml must say given the Job, Service and
// namespace Kubernetes will create.
func assertFluxWorks(t testing.TB, mc miniCluster, maxSize int) {
	t.Helper()
	job, svc := mc.Job, mc.Service
	require.NotNil(t, job.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode)
	assert.Equal(t, *job.Spec.Completions, *job.Spec.Parallelism)
	assert.Equal(t, "None", svc.Spec.ClusterIP)
	for k, v := range svc.Spec.Selector {
		assert.Equalf(t, v, job.Spec.Template.Labels[k], "Service selector %s", k)
	}
	var port int32
	for _, c := range job.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "broker" {
				port = p.ContainerPort
			}
		}
	}
	require.NotZero(t, port)
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, port, svc.Spec.Ports[0].Port)

	bs, ok := mc.TOML["bootstrap"].(map[string]any)
	require.True(t, ok, "broker.toml has no [bootstrap]")
	for key := range bs {
		assert.Contains(t, postrender.BootstrapKeys(), key, "flux-core rejects unknown [bootstrap] keys")
	}
	assert.Equal(t, "/etc/curve/curve.cert", bs["curve_cert"])
	assert.Equal(t, int64(port), bs["default_port"])
	assert.Equal(t, "tcp://eth0:%p", bs["default_bind"])
	assert.Equal(t, fmt.Sprintf("tcp://%%h.%s.%s.svc.cluster.local:%%p", svc.Name, job.Namespace), bs["default_connect"])
	var hosts []string
	switch h := bs["hosts"].(type) {
	case []map[string]any:
		for _, e := range h {
			hosts = append(hosts, e["host"].(string))
		}
	case []any:
		for _, e := range h {
			hosts = append(hosts, e.(map[string]any)["host"].(string))
		}
	}
	want := fmt.Sprintf("%s-[0-%d]", job.Name, maxSize-1)
	assert.Equal(t, []string{want}, hosts, "one RFC 29 hostlist of the pods' hostnames <job>-<index>")
	assert.Equal(t, want, mc.Config.Data["hosts"])
	assert.Equal(t, strconv.Itoa(int(*job.Spec.Completions)), mc.Config.Data["size"])
	res, _ := mc.TOML["resource"].(map[string]any)
	assert.Equal(t, "/minicluster/run/R", res["path"])
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			assert.NotEqual(t, "", v.ConfigMap.Name)
		}
	}
}

// run post-renders, failing the test on error.
func run(t testing.TB, in string, opts postrender.Options) string {
	t.Helper()
	out, err := postrender.Render([]byte(in), opts)
	require.NoError(t, err)
	return string(out)
}

// kustomization is the path of a kustomization under testdata/kustomizations.
func kustomization(name string) string { return filepath.Join("testdata", "kustomizations", name) }
