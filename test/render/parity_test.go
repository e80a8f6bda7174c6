package render

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/postrender"
)

// patch is an edit of rendered manifests: each old string must occur and is replaced by new.
type patch [][2]string

func (p patch) apply(t *testing.T, stream string) string {
	t.Helper()
	for _, r := range p {
		require.Containsf(t, stream, r[0], "the render has no %q to patch", r[0])
		stream = strings.ReplaceAll(stream, r[0], r[1])
	}
	return stream
}

// maxSizeTo, sizeTo, portTo and clusterDomainTo say in the rendered manifests of the default
// values what the chart would render for another value.
func maxSizeTo(n int) patch {
	v := strconv.Itoa(n)
	return patch{{`"maxSize":16,`, `"maxSize":` + v + `,`}, {`minicluster.dev/max-size: "16"`, `minicluster.dev/max-size: "` + v + `"`}}
}

func sizeTo(n int) patch {
	v := strconv.Itoa(n)
	return patch{{"\n  completions: 4\n", "\n  completions: " + v + "\n"}, {"\n  parallelism: 4\n", "\n  parallelism: " + v + "\n"}}
}

func portTo(n int) patch {
	v := strconv.Itoa(n)
	return patch{{`"port":8050,`, `"port":` + v + `,`}, {"containerPort: 8050\n", "containerPort: " + v + "\n"},
		{"      port: 8050\n", "      port: " + v + "\n"}}
}

func clusterDomainTo(d string) patch {
	return patch{{`"clusterDomain":"cluster.local"`, `"clusterDomain":"` + d + `"`}}
}

// TestChartAndPostRendererRefuseTheSameValues: a value the post-renderer refuses in rendered
// manifests (as a kustomization could make them) is one the chart refuses too, and both messages
// name it. Each row gives the values for the chart and the same change made to the manifests
// the chart renders for its default values.
func TestChartAndPostRendererRefuseTheSameValues(t *testing.T) {
	long := strings.Repeat("a", 61)
	for _, tc := range []struct {
		name      string
		chart     helmtest.Options
		manifests patch
		wantChart []string
		wantPost  []string
	}{
		{"size 0", helmtest.Options{Set: []string{"size=0"}}, sizeTo(0),
			[]string{"/size", "got 0"}, []string{"completions=0"}},
		{"size above maxSize", helmtest.Options{Set: []string{"size=17", "maxSize=16"}}, sizeTo(17),
			[]string{"size=17 is larger than maxSize=16"}, []string{"has size 17", "maxSize is 16"}},
		{"size above an indexed Job's completions", helmtest.Options{Set: []string{"size=100001"}},
			append(sizeTo(100001), maxSizeTo(100001)...),
			[]string{"/size", "want 100,000"}, []string{"maxSize=100001", "1-100000"}},
		{"size above the largest maxSize", helmtest.Options{Set: []string{"size=100001", "maxSize=100000"}},
			append(sizeTo(100001), maxSizeTo(100000)...),
			[]string{"/size", "want 100,000"}, []string{"has size 100001", "maxSize is 100000"}},
		{"maxSize above an indexed Job's completions", helmtest.Options{Set: []string{"maxSize=100001"}}, maxSizeTo(100001),
			[]string{"/maxSize", "want 100,000"}, []string{"maxSize=100001", "1-100000"}},
		{"port 0", helmtest.Options{Set: []string{"flux.port=0"}}, portTo(0),
			[]string{"/flux/port", "got 0"}, []string{"port 0", "not a TCP port"}},
		{"port above 65535", helmtest.Options{Set: []string{"flux.port=70000"}}, portTo(70000),
			[]string{"/flux/port", "70,000"}, []string{"port 70000", "not a TCP port"}},
		{"name with a dot", helmtest.Options{ReleaseName: "flux.sample"}, patch{{"flux-sample", "flux.sample"}},
			[]string{`"flux.sample"`}, []string{`"flux.sample"`}},
		{"name with upper case", helmtest.Options{ReleaseName: "Flux-sample"}, patch{{"flux-sample", "Flux-sample"}},
			[]string{`"Flux-sample"`}, []string{`"Flux-sample"`}},
		{"name starting with a digit", helmtest.Options{ReleaseName: "1flux"}, patch{{"flux-sample", "1flux"}},
			[]string{`"1flux"`}, []string{`"1flux"`}},
		{"name too long for the hostnames", helmtest.Options{ReleaseName: long}, patch{{"flux-sample", long}},
			[]string{long}, []string{long}},
		{"cluster domain with an empty label", helmtest.Options{Set: []string{"clusterDomain=cluster..local"}}, clusterDomainTo("cluster..local"),
			[]string{"/clusterDomain", "cluster..local"}, []string{`clusterDomain="cluster..local"`}},
		{"cluster domain label ending in -", helmtest.Options{Set: []string{"clusterDomain=cluster-.local"}}, clusterDomainTo("cluster-.local"),
			[]string{"/clusterDomain", "cluster-.local"}, []string{`clusterDomain="cluster-.local"`}},
		{"cluster domain label starting with -", helmtest.Options{Set: []string{"clusterDomain=cluster.-local"}}, clusterDomainTo("cluster.-local"),
			[]string{"/clusterDomain", "cluster.-local"}, []string{`clusterDomain="cluster.-local"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good, err := helmtest.Template(helmtest.Options{})
			require.NoError(t, err)
			_, err = postrender.Render([]byte(good), postrender.Options{})
			require.NoError(t, err, "the post-renderer refuses the default render")

			_, err = helmtest.Template(tc.chart)
			if assert.Error(t, err, "the chart renders what the post-renderer refuses") {
				for _, want := range tc.wantChart {
					assert.Contains(t, err.Error(), want, "chart")
				}
			}
			_, err = postrender.Render([]byte(tc.manifests.apply(t, good)), postrender.Options{})
			if assert.Error(t, err, "the post-renderer accepts what the chart refuses") {
				for _, want := range tc.wantPost {
					assert.Contains(t, err.Error(), want, "post-renderer")
				}
			}
		})
	}
}
