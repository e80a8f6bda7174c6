// Package helmtest holds the few helpers terratest's helm module would give: render the chart
// in process with the Helm SDK (as `helm template` does), split and strictly decode the result
// into typed Kubernetes objects, and find the repository's files.
package helmtest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/getter"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/minicluster/minicluster/internal/repo"
	"github.com/minicluster/minicluster/internal/yamlstream"
)

// DefaultKubeVersion is the Kubernetes version renders assume unless told otherwise; Helm 3's
// own default (1.20) is older than the chart supports.
const DefaultKubeVersion = "v1.35.0"

// Options says what to render, like the flags of `helm template`.
type Options struct {
	ReleaseName string   // default "flux-sample"
	Namespace   string   // default "default"
	ValuesFiles []string // -f, paths relative to the repository root or absolute
	Set         []string // --set
	KubeVersion string   // --kube-version, default DefaultKubeVersion
	APIVersions []string // --api-versions: kinds the cluster serves beyond Kubernetes' own
	// SkipSchemaValidation is --skip-schema-validation: the templates' own checks then meet
	// values the schema would have refused first.
	SkipSchemaValidation bool
}

func (o Options) withDefaults() Options {
	if o.ReleaseName == "" {
		o.ReleaseName = "flux-sample"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.KubeVersion == "" {
		o.KubeVersion = DefaultKubeVersion
	}
	return o
}

// Root is the repository root (repo.Root); it panics outside the repository.
func Root() string {
	root, err := repo.Root()
	if err != nil {
		panic("helmtest: " + err.Error())
	}
	return root
}

// ChartDir is the path of charts/minicluster.
func ChartDir() string { return filepath.Join(Root(), "charts", "minicluster") }

// AppVersion is the chart's appVersion (./VERSION, which make version writes into Chart.yaml):
// the tag of the chart's own images when values give none.
func AppVersion() string {
	chrt, err := loader.Load(ChartDir())
	if err != nil {
		panic("helmtest: load chart: " + err.Error())
	}
	return chrt.Metadata.AppVersion
}

// ValuesFiles lists values/*.yaml, sorted.
func ValuesFiles() ([]string, error) {
	files, err := filepath.Glob(filepath.Join(Root(), "values", "*.yaml"))
	sort.Strings(files)
	return files, err
}

func loadChartAndValues(o Options) (*chart.Chart, map[string]any, error) {
	chrt, err := loader.Load(ChartDir())
	if err != nil {
		return nil, nil, fmt.Errorf("load chart: %w", err)
	}
	var files []string
	for _, f := range o.ValuesFiles {
		if !filepath.IsAbs(f) {
			f = filepath.Join(Root(), f)
		}
		files = append(files, f)
	}
	vals, err := (&values.Options{ValueFiles: files, Values: o.Set}).MergeValues(getter.Providers{})
	if err != nil {
		return nil, nil, fmt.Errorf("merge values: %w", err)
	}
	return chrt, vals, nil
}

// Template renders the chart as `helm template` does (kubeVersion check, schema, hooks) and
// returns its output: the manifests in install order, then the hooks.
func Template(opts Options) (string, error) {
	o := opts.withDefaults()
	chrt, vals, err := loadChartAndValues(o)
	if err != nil {
		return "", err
	}
	kv, err := chartutil.ParseKubeVersion(o.KubeVersion)
	if err != nil {
		return "", err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.ReleaseName = o.ReleaseName
	install.Namespace = o.Namespace
	install.KubeVersion = kv
	install.APIVersions = o.APIVersions
	install.SkipSchemaValidation = o.SkipSchemaValidation
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	out.WriteString(strings.TrimSpace(rel.Manifest))
	out.WriteString("\n")
	for _, h := range rel.Hooks {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", h.Path, strings.TrimSpace(h.Manifest))
	}
	return out.String(), nil
}

// TemplateWithLive renders the templates with `lookup` answered from the given live objects, as
// on a `helm upgrade` of a running release. It returns the first template error, if any.
func TemplateWithLive(opts Options, live ...runtime.Object) (map[string]string, error) {
	o := opts.withDefaults()
	chrt, vals, err := loadChartAndValues(o)
	if err != nil {
		return nil, err
	}
	kv, err := chartutil.ParseKubeVersion(o.KubeVersion)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	top, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{
		Name: o.ReleaseName, Namespace: o.Namespace, IsUpgrade: true, Revision: 2,
	}, caps)
	if err != nil {
		return nil, err
	}
	return engine.RenderWithClientProvider(chrt, top, liveObjects{objects: live})
}

// liveObjects answers the chart's `lookup` calls from a client-go fake dynamic client holding
// the given objects; render tests use it to reproduce the state a `helm upgrade` finds.
type liveObjects struct{ objects []runtime.Object }

func (l liveObjects) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	gvr := gv.WithResource(strings.ToLower(kind) + "s")
	scheme := runtime.NewScheme()
	listKinds := map[schema.GroupVersionResource]string{gvr: kind + "List"}
	var objs []runtime.Object
	for _, o := range l.objects {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, false, err
		}
		obj := &unstructured.Unstructured{Object: u}
		if obj.GetKind() == kind && obj.GetAPIVersion() == apiVersion {
			objs = append(objs, obj)
		}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, listKinds, objs...)
	return client.Resource(gvr), true, nil
}

// Documents splits rendered output into its YAML documents in order, dropping those with only
// blanks and comments.
func Documents(rendered string) []string { return yamlstream.Documents(rendered) }
