package main

import (
	"fmt"
	"os"
	"path/filepath"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// release is the name the chart is rendered under; the tables write it as R, as the docs do.
const release = "flux-sample"

// A variant is values that add to the broker pod, rendered beside the defaults so that the tables
// can say which part comes with which value.
type variant struct {
	label string   // how the tables name it
	set   []string // --set
}

// variants are the values that add a container, a volume, a port, a probe or a script (a
// fluxContainers entry named mine).
var variants = []variant{
	{"`flux.view.mode=copy`", []string{"flux.view.mode=copy"}},
	{"`munge.enabled`", []string{"munge.enabled=true"}},
	{"`api.enabled`", []string{"api.enabled=true"}},
	{"`autoscale.enabled`", []string{"autoscale.enabled=true", "flux.queuePolicy=easy"}},
	{"`metrics.enabled`", []string{"metrics.enabled=true"}},
	{"`flux.state.enabled`", []string{"flux.state.enabled=true", "flux.state.storageClassName=standard"}},
	{"`fluxContainers`", []string{"fluxContainers[0].name=mine", "fluxContainers[0].image=mine:1", "fluxContainers[0].command=hostname"}},
}

// render is one render of the chart: the broker pod, the scripts ConfigMap and the helm test pod.
type render struct {
	label   string // "" for the default values
	pod     corev1.PodSpec
	scripts map[string]string // the scripts ConfigMap's data
	test    *corev1.PodSpec
}

// renderAll renders the default values, then each variant.
func renderAll() ([]render, error) {
	var out []render
	for _, v := range append([]variant{{}}, variants...) {
		r, err := renderOne(v)
		if err != nil {
			return nil, fmt.Errorf("values %v: %w", v.set, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func renderOne(v variant) (render, error) {
	stream, err := helmtest.Template(helmtest.Options{ReleaseName: release, Set: v.set})
	if err != nil {
		return render{}, err
	}
	objs, err := helmtest.DecodeAll(stream)
	if err != nil {
		return render{}, err
	}
	r := render{label: v.label}
	job, ok := helmtest.Find(objs, "Job", release)
	if !ok {
		return r, fmt.Errorf("no Job %s in the render", release)
	}
	r.pod = job.Object.(*batchv1.Job).Spec.Template.Spec
	cm, ok := helmtest.Find(objs, "ConfigMap", release+"-entrypoint")
	if !ok {
		return r, fmt.Errorf("no ConfigMap %s-entrypoint in the render", release)
	}
	r.scripts = cm.Object.(*corev1.ConfigMap).Data
	if test, ok := helmtest.Find(objs, "Pod", release+"-test-wiring"); ok {
		r.test = &test.Object.(*corev1.Pod).Spec
	}
	return r, nil
}

// chartFiles is the chart's files/ by name.
func chartFiles() (map[string]string, error) {
	dir := filepath.Join(helmtest.ChartDir(), "files")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = string(b)
	}
	return files, nil
}

// imageKeys maps the default images to the values that set them, so that the table names the
// value rather than a tag that changes with every version.
func imageKeys() (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(helmtest.ChartDir(), "values.yaml"))
	if err != nil {
		return nil, err
	}
	var v struct {
		Image  string `json:"image"`
		Keygen struct {
			Image struct{ Repository, Tag string } `json:"image"`
		} `json:"keygen"`
		Flux struct {
			View struct{ Image string } `json:"view"`
		} `json:"flux"`
	}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	tag := v.Keygen.Image.Tag
	if tag == "" {
		tag = helmtest.AppVersion()
	}
	return map[string]string{
		v.Image:                               "`image`",
		v.Keygen.Image.Repository + ":" + tag: "`keygen.image`",
		v.Flux.View.Image:                     "`flux.view.image`",
	}, nil
}
