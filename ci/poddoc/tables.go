package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

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
	for _, a := range commandLine(c) {
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
		for _, c := range allContainers(r.pod) {
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
		for _, c := range allContainers(r.pod) {
			for _, a := range commandLine(c) {
				if name := fileOf(a, files); name != "" {
					add(name, where{"inline in the command of the broker pod's container `" + c.Name + "`", ""})
				}
			}
		}
		if r.test != nil {
			for _, c := range r.test.Containers {
				for _, a := range commandLine(c) {
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
	for _, c := range allContainers(pod) {
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

// allContainers is a pod's init containers, then its containers.
func allContainers(pod corev1.PodSpec) []corev1.Container {
	return append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...)
}

// commandLine is what a container runs: its command, then its arguments.
func commandLine(c corev1.Container) []string {
	return append(append([]string{}, c.Command...), c.Args...)
}
