package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

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

// variants are the values that add a container, a volume, a port, a probe or a script.
var variants = []variant{
	{"`flux.view.mode=copy`", []string{"flux.view.mode=copy"}},
	{"`munge.enabled`", []string{"munge.enabled=true"}},
	{"`api.enabled`", []string{"api.enabled=true"}},
	{"`autoscale.enabled`", []string{"autoscale.enabled=true", "flux.queuePolicy=easy"}},
	{"`metrics.enabled`", []string{"metrics.enabled=true"}},
	{"`flux.state.enabled`", []string{"flux.state.enabled=true", "flux.state.storageClassName=standard"}},
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

// rows collects table rows by key in first-seen order, each with the variants it appears in.
type rows struct {
	keys  []string
	cells map[string][]string
	with  map[string][]string // labels of the renders that have it ("" = the defaults)
}

func newRows() *rows { return &rows{cells: map[string][]string{}, with: map[string][]string{}} }

func (r *rows) add(key, label string, cells ...string) {
	if _, ok := r.cells[key]; !ok {
		r.keys = append(r.keys, key)
		r.cells[key] = cells
	}
	if !slices.Contains(r.with[key], label) {
		r.with[key] = append(r.with[key], label)
	}
}

// when says which values a part comes with: nothing for the defaults' parts.
func (r *rows) when(key string) string {
	if slices.Contains(r.with[key], "") {
		return ""
	}
	return strings.Join(r.with[key], ", ")
}

// Write writes the tables of what a broker pod holds.
func Write(w io.Writer) error {
	renders, err := renderAll()
	if err != nil {
		return err
	}
	files, err := chartFiles()
	if err != nil {
		return err
	}
	images, err := imageKeys()
	if err != nil {
		return err
	}
	p := &printer{w: w}
	p.line("What a broker pod holds, from the chart rendered with its default values (the column *with*")
	p.line("names the value that adds a part; a release `R`, Kubernetes %s).", strings.TrimPrefix(helmtest.DefaultKubeVersion, "v"))
	p.line("")
	containerTable(p, renders, files, images)
	p.line("")
	volumeTable(p, renders)
	p.line("")
	scriptTable(p, renders, files)
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *printer) row(cells ...string) { p.line("| %s |", strings.Join(cells, " | ")) }

// containerKind says how the pod runs a container.
func containerKind(init bool, c corev1.Container) string {
	switch {
	case !init:
		return "container"
	case c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways:
		return "sidecar (init, restartPolicy Always)"
	}
	return "init container"
}

func containerTable(p *printer, renders []render, files, images map[string]string) {
	t := newRows()
	ports, probes := newRows(), newRows()
	for _, r := range renders {
		for _, group := range []struct {
			init bool
			list []corev1.Container
		}{{true, r.pod.InitContainers}, {false, r.pod.Containers}} {
			for _, c := range group.list {
				image := images[c.Image]
				if image == "" {
					image = "`" + c.Image + "`"
				}
				t.add(c.Name, r.label, containerKind(group.init, c), image, runs(c, files))
				for _, port := range c.Ports {
					ports.add(c.Name+"/"+port.Name, r.label, c.Name, fmt.Sprintf("%d/%s (%s)", port.ContainerPort, port.Protocol, port.Name))
				}
				for _, pr := range []struct {
					kind  string
					probe *corev1.Probe
				}{{"startup", c.StartupProbe}, {"readiness", c.ReadinessProbe}, {"liveness", c.LivenessProbe}} {
					if pr.probe != nil {
						probes.add(c.Name+"/"+pr.kind, r.label, c.Name, pr.kind+": "+probe(pr.probe))
					}
				}
			}
		}
	}
	p.row("container", "runs as", "image", "runs", "ports", "probes", "with")
	p.row("---", "---", "---", "---", "---", "---", "---")
	for _, name := range t.keys {
		cells := t.cells[name]
		when := t.when(name)
		p.row("`"+name+"`", cells[0], cells[1], cells[2], joinFor(ports, name, when), joinFor(probes, name, when), when)
	}
}

// joinFor lists the parts of name (a container, a volume), each with the values it comes with
// where they are not those of name itself (rowWhen).
func joinFor(r *rows, name, rowWhen string) string {
	var out []string
	for _, k := range r.keys {
		if r.cells[k][0] != name {
			continue
		}
		s := r.cells[k][1]
		if w := r.when(k); w != rowWhen {
			s += " (with " + w + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// runs is a container's command and arguments up to the first flag, a script of files/ passed
// inline named by its file.
func runs(c corev1.Container, files map[string]string) string {
	var words []string
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		if name := fileOf(a, files); name != "" {
			words = append(words, "files/"+name+" (inline)")
			continue
		}
		if strings.HasPrefix(a, "-") && a != "-c" || len(a) > 60 {
			words = append(words, "…")
			break
		}
		words = append(words, a)
	}
	s := strings.Join(words, " ")
	if len(c.Command) == 0 {
		s = "(the image's entrypoint) " + s
	}
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

func fileOf(text string, files map[string]string) string {
	for name, body := range files {
		if strings.TrimSuffix(body, "\n") == strings.TrimSuffix(text, "\n") {
			return name
		}
	}
	return ""
}

func probe(p *corev1.Probe) string {
	var what string
	switch {
	case p.HTTPGet != nil:
		what = fmt.Sprintf("GET :%s%s", p.HTTPGet.Port.String(), p.HTTPGet.Path)
	case p.TCPSocket != nil:
		what = "TCP :" + p.TCPSocket.Port.String()
	case p.Exec != nil:
		what = "exec " + strings.Join(p.Exec.Command, " ")
	case p.GRPC != nil:
		what = fmt.Sprintf("gRPC :%d", p.GRPC.Port)
	}
	return fmt.Sprintf("%s every %d s", what, p.PeriodSeconds)
}

// rel writes an object of the release as the docs do: R-entrypoint.
func rel(name string) string {
	if rest, ok := strings.CutPrefix(name, release); ok {
		return "`R" + rest + "`"
	}
	return "`" + name + "`"
}

func volumeSource(v corev1.Volume) string {
	switch s := v.VolumeSource; {
	case s.ConfigMap != nil:
		return "ConfigMap " + rel(s.ConfigMap.Name)
	case s.Secret != nil:
		return "Secret " + rel(s.Secret.SecretName)
	case s.EmptyDir != nil && s.EmptyDir.Medium == corev1.StorageMediumMemory:
		return "emptyDir in memory"
	case s.EmptyDir != nil:
		return "emptyDir"
	case s.Image != nil:
		return "image volume"
	case s.PersistentVolumeClaim != nil:
		return "PersistentVolumeClaim " + rel(s.PersistentVolumeClaim.ClaimName)
	case s.Projected != nil:
		var parts []string
		for _, p := range s.Projected.Sources {
			switch {
			case p.ServiceAccountToken != nil:
				parts = append(parts, "service account token")
			case p.ConfigMap != nil:
				parts = append(parts, "ConfigMap "+rel(p.ConfigMap.Name))
			case p.Secret != nil:
				parts = append(parts, "Secret "+rel(p.Secret.Name))
			case p.DownwardAPI != nil:
				parts = append(parts, "downward API")
			}
		}
		return "projected: " + strings.Join(parts, ", ")
	}
	return "other"
}

func volumeTable(p *printer, renders []render) {
	t, mounts := newRows(), newRows()
	for _, r := range renders {
		// A volume is its name and its source: a value may give the same name another source
		// (flux.view.mode=copy: an emptyDir where the image was).
		id := map[string]string{}
		for _, v := range r.pod.Volumes {
			id[v.Name] = v.Name + "\x00" + volumeSource(v)
			t.add(id[v.Name], r.label, v.Name, volumeSource(v))
		}
		for _, c := range append(append([]corev1.Container{}, r.pod.InitContainers...), r.pod.Containers...) {
			for _, m := range c.VolumeMounts {
				at := m.MountPath
				if m.SubPath != "" {
					at += " (" + m.SubPath + ")"
				}
				if m.ReadOnly {
					at += ", read-only"
				}
				mounts.add(c.Name+"\x00"+id[m.Name]+"\x00"+m.MountPath, r.label, id[m.Name], "`"+c.Name+"`: "+at)
			}
		}
	}
	p.row("volume", "from", "mounted in", "with")
	p.row("---", "---", "---", "---")
	for _, key := range t.keys {
		when := t.when(key)
		p.row("`"+t.cells[key][0]+"`", t.cells[key][1], joinFor(mounts, key, when), when)
	}
}

// where is how a script reaches the pods, and at which path ("" for a script passed inline).
type where struct{ how, path string }

func scriptTable(p *printer, renders []render, files map[string]string) {
	found := map[string][]where{}
	add := func(file string, w where) {
		if !slices.Contains(found[file], w) {
			found[file] = append(found[file], w)
		}
	}
	for _, r := range renders {
		paths := scriptPaths(r.pod, r.scripts)
		for key, body := range r.scripts {
			if name := fileOf(body, files); name != "" {
				for _, at := range paths[key] {
					add(name, where{"ConfigMap " + rel(release+"-entrypoint") + ", key `" + key + "`", at})
				}
			}
		}
		for _, c := range append(append([]corev1.Container{}, r.pod.InitContainers...), r.pod.Containers...) {
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				if name := fileOf(a, files); name != "" {
					add(name, where{"inline in the command of the broker pod's container `" + c.Name + "`", ""})
				}
			}
		}
		if r.test != nil {
			for _, c := range r.test.Containers {
				for _, a := range append(append([]string{}, c.Command...), c.Args...) {
					if name := fileOf(a, files); name != "" {
						add(name, where{"inline in the command of the `helm test` Pod " + rel(release+"-test-wiring"), ""})
					}
				}
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	p.row("script (charts/minicluster/files/)", "reaches the pods", "at")
	p.row("---", "---", "---")
	for _, name := range names {
		ws := found[name]
		if len(ws) == 0 {
			p.row("`"+name+"`", "not rendered", "")
			continue
		}
		var paths []string
		for _, w := range ws {
			if w.path != "" {
				paths = append(paths, "`"+w.path+"`")
			}
		}
		p.row("`"+name+"`", ws[0].how, strings.Join(paths, ", "))
	}
}

// scriptPaths is where each key of the scripts ConfigMap is in the broker pod's containers.
func scriptPaths(pod corev1.PodSpec, scripts map[string]string) map[string][]string {
	var volume string
	var items map[string]string
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == release+"-entrypoint" {
			volume = v.Name
			if len(v.ConfigMap.Items) > 0 {
				items = map[string]string{}
				for _, it := range v.ConfigMap.Items {
					items[it.Key] = it.Path
				}
			}
		}
	}
	out := map[string][]string{}
	seen := map[string]bool{}
	for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
		for _, m := range c.VolumeMounts {
			if m.Name != volume {
				continue
			}
			for key, path := range keysAt(items, scripts, m) {
				if !seen[key+path] {
					seen[key+path] = true
					out[key] = append(out[key], path)
				}
			}
		}
	}
	return out
}

// keysAt is where a mount of the scripts volume puts each key it shows: without items every
// key under its own name, with items under its path; a subPath mounts one file.
func keysAt(items, scripts map[string]string, m corev1.VolumeMount) map[string]string {
	if items == nil {
		items = map[string]string{}
		for key := range scripts {
			items[key] = key
		}
	}
	out := map[string]string{}
	for key, path := range items {
		switch {
		case m.SubPath == "":
			out[key] = m.MountPath + "/" + path
		case m.SubPath == path:
			out[key] = m.MountPath
		}
	}
	return out
}
