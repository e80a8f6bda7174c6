package postrender_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/postrender"
)

// renders are the chart's own outputs the post-renderer must leave byte for byte unchanged:
// default values, every file in values/, and the options that change the broker ConfigMap.
func renders(t *testing.T) map[string]helmtest.Options {
	files, err := helmtest.ValuesFiles()
	require.NoError(t, err)
	require.NotEmpty(t, files)
	cases := map[string]helmtest.Options{
		"default":             {},
		"size=1":              {Set: []string{"size=1,maxSize=1"}},
		"size=10000":          {Set: []string{"size=10000,maxSize=10000"}},
		"namespace and name":  {ReleaseName: "hpc-run", Namespace: "science"},
		"munge and configmap": {Set: []string{"munge.enabled=true,curve.storage=ConfigMap"}},
		"existing secret":     {Set: []string{"curve.existingSecret=my-cert"}},
		"port and domain":     {Set: []string{"flux.port=9000,clusterDomain=k8s.example.org,flux.interface=net1"}},
		"custom broker.toml":  {ValuesFiles: []string{"postrender/testdata/custom-broker-config.yaml"}},
		"pod settings":        {ValuesFiles: []string{"postrender/testdata/pod-settings.yaml"}},
	}
	for _, f := range files {
		cases["values/"+filepath.Base(f)] = helmtest.Options{ValuesFiles: []string{f}}
	}
	return cases
}

// TestUnmodifiedRenderIsIdentical holds the chart and the Go code together: whatever the values,
// the chart's broker.toml, hosts and size are what the post-renderer computes.
func TestUnmodifiedRenderIsIdentical(t *testing.T) {
	for name, opts := range renders(t) {
		t.Run(name, func(t *testing.T) {
			in := chart(t, opts)
			out := run(t, in, postrender.Options{})
			assert.Equal(t, in, out, "the post-renderer changed an unmodified render")
		})
	}
}

// TestHelm4Input: Helm 4 post-renders hooks too and marks every document with an annotation
// it needs back; nothing may be dropped, and the annotation must survive an edit.
func TestHelm4Input(t *testing.T) {
	var b strings.Builder
	for i, d := range docs(chart(t, helmtest.Options{})) {
		node, err := yaml.Parse(d)
		require.NoError(t, err)
		require.NoError(t, node.PipeE(yaml.SetAnnotation(helm4Annotation, fmt.Sprintf("file-%d.yaml", i))))
		text, err := node.String()
		require.NoError(t, err)
		b.WriteString("---\n" + text)
	}
	in := b.String()
	assert.Equal(t, in, run(t, in, postrender.Options{}), "unchanged")
	brokerFile := decode(t, in, "flux-sample-broker").Config.Annotations[helm4Annotation]

	resized := edit(t, in, "Job", "flux-sample", set(t, "6", "spec", "completions"))
	resized = edit(t, resized, "Job", "flux-sample", set(t, "6", "spec", "parallelism"))
	for _, o := range []string{"", kustomization("rename")} {
		out := run(t, resized, postrender.Options{KustomizeDir: o})
		require.Equal(t, len(docs(resized)), len(docs(out)), "no document dropped")
		assert.Equal(t, strings.Count(resized, "helm.sh/hook:"), strings.Count(out, "helm.sh/hook:"), "hooks pass through")
		assert.Equal(t, len(docs(out)), strings.Count(out, helm4Annotation+":"), "every document keeps Helm 4's annotation")
		config := "flux-sample-broker"
		if o != "" {
			config = "team-flux-sample-broker"
		}
		mc := decode(t, out, config)
		assert.Equal(t, brokerFile, mc.Config.Annotations[helm4Annotation])
		assert.Equal(t, "6", mc.Config.Data["size"])
	}
}

const helm4Annotation = "postrenderer.helm.sh/postrender-filename"

// TestIdempotent: post-rendering the output again changes nothing, with or without a kustomization
// before.
func TestIdempotent(t *testing.T) {
	in := chart(t, helmtest.Options{})
	for _, o := range []string{"", kustomization("rename"), kustomization("port"), kustomization("subdomain"), kustomization("resize")} {
		t.Run("kustomization="+filepath.Base(o), func(t *testing.T) {
			once := run(t, in, postrender.Options{KustomizeDir: o})
			twice := run(t, once, postrender.Options{})
			assert.Equal(t, once, twice)
		})
	}
}

func TestEmptyInput(t *testing.T) {
	for _, in := range []string{"", "\n", "---\n", "---\n# Source: x.yaml\n---\n"} {
		_, err := postrender.Render([]byte(in), postrender.Options{})
		require.ErrorIs(t, err, postrender.ErrEmpty)
		assert.Contains(t, err.Error(), "no manifests on the input")
	}
}

func TestOtherManifestsPassThrough(t *testing.T) {
	in := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x   # odd spacing kept\ndata: {a: b}\n---\n# just a comment\n"
	assert.Equal(t, in, run(t, in, postrender.Options{}))
}

func TestTwoDocumentsWithoutSeparatorIsAnError(t *testing.T) {
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n--- !!map\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
	_, err := postrender.Render([]byte(in), postrender.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than one document")
}

// TestPostRendererInterface: the library plugs into Helm's SDK as a PostRenderer.
func TestPostRendererInterface(t *testing.T) {
	var p interface {
		Run(*bytes.Buffer) (*bytes.Buffer, error)
	} = postrender.PostRenderer{}
	in := chart(t, helmtest.Options{})
	out, err := p.Run(bytes.NewBufferString(in))
	require.NoError(t, err)
	assert.Equal(t, in, out.String())
}

// TestTwoMiniClusters: each MiniCluster of a stream is found and fixed on its own.
func TestTwoMiniClusters(t *testing.T) {
	a := chart(t, helmtest.Options{ReleaseName: "alpha", Set: []string{"curve.existingSecret=c"}})
	b := chart(t, helmtest.Options{ReleaseName: "beta", Set: []string{"curve.existingSecret=c,maxSize=8"}})
	in := a + b
	assert.Equal(t, in, run(t, in, postrender.Options{}))

	resized := edit(t, in, "Job", "beta", set(t, "7", "spec", "completions"))
	resized = edit(t, resized, "Job", "beta", set(t, "7", "spec", "parallelism"))
	out := run(t, resized, postrender.Options{})
	assert.Equal(t, "4", decode(t, out, "alpha-broker").Config.Data["size"])
	beta := decode(t, out, "beta-broker")
	assert.Equal(t, "7", beta.Config.Data["size"])
	assertFluxWorks(t, beta, 8)

	tooBig := edit(t, resized, "Job", "beta", set(t, "9", "spec", "completions"))
	_, err := postrender.Render([]byte(tooBig), postrender.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Job default/beta has completions=9 but parallelism=7")
}
