package postrender

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	// RenderedFile is the resource name under which the overlay sees Helm's manifests.
	RenderedFile = "rendered.yaml"
	// subdomainConfigFile teaches kustomize that a Job's pod subdomain names a Service, so that
	// namePrefix, nameSuffix and renames keep the Job pointing at its headless Service.
	subdomainConfigFile = ".minicluster-postrender-namereference.yaml"
	subdomainConfig     = `nameReference:
- kind: Service
  version: v1
  fieldSpecs:
  - path: spec/template/spec/subdomain
    kind: Job
    group: batch
`
)

// applyOverlay runs the kustomization in dir over the manifests in, supplied as rendered.yaml
// on an in-memory layer over dir, and returns the result as segments.
func applyOverlay(dir, in string) ([]*segment, error) {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("--kustomize %s: no such directory; give the directory holding kustomization.yaml", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("--kustomize %s: %w", dir, err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--kustomize %s is not a directory; give the directory holding kustomization.yaml", dir)
	}
	kustFile, kust, err := readKustomization(root)
	if err != nil {
		return nil, fmt.Errorf("--kustomize %s: %w", dir, err)
	}
	kustText, reorder, err := prepareKustomization(kust)
	if err != nil {
		return nil, fmt.Errorf("--kustomize %s: %s: %w", dir, filepath.Base(kustFile), err)
	}
	original, err := splitStream(in)
	if err != nil {
		return nil, err
	}
	fs := layeredFS{FileSystem: filesys.MakeFsOnDisk(), files: map[string][]byte{
		filepath.Join(root, RenderedFile):        []byte(in),
		kustFile:                                 []byte(kustText),
		filepath.Join(root, subdomainConfigFile): []byte(subdomainConfig),
	}}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = reorder
	resources, err := krusty.MakeKustomizer(opts).Run(fs, root)
	if err != nil {
		return nil, fmt.Errorf("--kustomize %s: kustomize: %w", dir, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("--kustomize %s: kustomize output: %w", dir, err)
	}
	segs, err := splitStream(string(out))
	if err != nil {
		return nil, fmt.Errorf("--kustomize %s: kustomize output: %w", dir, err)
	}
	if err := keepKeyObjects(objectsOf(original), objectsOf(segs)); err != nil {
		return nil, err
	}
	return segs, nil
}

// readKustomization reads the kustomization file of root (any name kustomize accepts).
func readKustomization(root string) (string, *yaml.RNode, error) {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		path := filepath.Join(root, name)
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		node, err := yaml.Parse(string(b))
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", name, err)
		}
		return path, node, nil
	}
	return "", nil, fmt.Errorf("no kustomization.yaml in it; write one with resources: [%s]", RenderedFile)
}

// prepareKustomization checks that the kustomization lists rendered.yaml, adds the subdomain
// name reference to its configurations, and picks the resource order: Helm's input order,
// unless the kustomization sets sortOptions.
func prepareKustomization(kust *yaml.RNode) (string, krusty.ReorderOption, error) {
	listed := false
	for _, r := range elements(kust, "resources") {
		if filepath.Clean(r.YNode().Value) == RenderedFile {
			listed = true
		}
	}
	if !listed {
		return "", "", fmt.Errorf("resources does not list %s, the manifests Helm rendered; add it: resources: [%s]", RenderedFile, RenderedFile)
	}
	configs, err := kust.Pipe(yaml.LookupCreate(yaml.SequenceNode, "configurations"))
	if err != nil {
		return "", "", fmt.Errorf("configurations: %w", err)
	}
	if err := configs.PipeE(yaml.Append(yaml.NewStringRNode(subdomainConfigFile).YNode())); err != nil {
		return "", "", fmt.Errorf("configurations: %w", err)
	}
	text, err := kust.String()
	if err != nil {
		return "", "", err
	}
	reorder := krusty.ReorderOptionNone
	if lookup(kust, "sortOptions") != nil {
		reorder = krusty.ReorderOptionUnspecified
	}
	return text, reorder, nil
}

// keyObject identifies the chart's CURVE and munge key objects across renames.
func keyObject(o *object) (string, bool) {
	if !o.is("v1", "Secret") && !o.is("v1", "ConfigMap") {
		return "", false
	}
	labels := stringMap(o.node, "metadata", "labels")
	component := labels["app.kubernetes.io/component"]
	if labels["app.kubernetes.io/name"] != "minicluster" || (component != "curve" && component != "munge") {
		return "", false
	}
	return o.kind + "/" + labels["app.kubernetes.io/instance"] + "/" + component, true
}

// keepKeyObjects undoes an overlay's renaming of the chart's key objects (and of the references
// to them in Jobs and Roles): the keygen hook creates them under the chart's names, and Helm 3
// does not post-render hooks. Moving them to another namespace cannot be undone: an error.
func keepKeyObjects(before, after []*object) error {
	orig := map[string]*object{}
	for _, o := range before {
		if id, ok := keyObject(o); ok {
			orig[id] = o
		}
	}
	renamed := map[string]string{} // "<kind>/<namespace>/<new name>" -> chart's name
	for _, o := range after {
		id, ok := keyObject(o)
		if !ok || orig[id] == nil {
			continue
		}
		was := orig[id]
		if o.namespace != was.namespace {
			return fmt.Errorf("the overlay moves %s %s (the key the keygen hook makes) to namespace %q, where the hook, which Helm 3 does not post-render, cannot put it; install into that namespace with helm --namespace %s instead of moving it, or use curve.existingSecret", o.kind, ref(was), o.namespace, o.namespace)
		}
		if o.name == was.name {
			continue
		}
		renamed[o.kind+"/"+o.namespace+"/"+o.name] = was.name
		if _, err := setScalar(o.node, was.name, 0, "metadata", "name"); err != nil {
			return err
		}
		o.seg.changed = true
	}
	if len(renamed) == 0 {
		return nil
	}
	for _, o := range after {
		switch {
		case o.is("batch/v1", "Job"):
			for _, v := range elements(o.node, "spec", "template", "spec", "volumes") {
				for _, f := range [][]string{{"Secret", "secret", "secretName"}, {"ConfigMap", "configMap", "name"}} {
					if was, ok := renamed[f[0]+"/"+o.namespace+"/"+scalar(v, f[1], f[2])]; ok {
						if _, err := setScalar(v, was, 0, f[1], f[2]); err != nil {
							return err
						}
						o.seg.changed = true
					}
				}
			}
		case o.is("rbac.authorization.k8s.io/v1", "Role"):
			for _, rule := range elements(o.node, "rules") {
				for _, name := range elements(rule, "resourceNames") {
					for _, kind := range []string{"Secret", "ConfigMap"} {
						if was, ok := renamed[kind+"/"+o.namespace+"/"+name.YNode().Value]; ok {
							name.YNode().Value = was
							o.seg.changed = true
						}
					}
				}
			}
		}
	}
	return nil
}

// layeredFS is the disk with a few files replaced or added in memory.
type layeredFS struct {
	filesys.FileSystem
	files map[string][]byte // by absolute, cleaned path
}

func (l layeredFS) mem(path string) ([]byte, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, false
	}
	b, ok := l.files[abs]
	return b, ok
}

func (l layeredFS) ReadFile(path string) ([]byte, error) {
	if b, ok := l.mem(path); ok {
		return b, nil
	}
	return l.FileSystem.ReadFile(path)
}

func (l layeredFS) Exists(path string) bool {
	if _, ok := l.mem(path); ok {
		return true
	}
	return l.FileSystem.Exists(path)
}

func (l layeredFS) IsDir(path string) bool {
	if _, ok := l.mem(path); ok {
		return false
	}
	return l.FileSystem.IsDir(path)
}

func (l layeredFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	if _, ok := l.mem(path); ok {
		abs, _ := filepath.Abs(path)
		return filesys.ConfirmedDir(filepath.Dir(abs)), filepath.Base(abs), nil
	}
	return l.FileSystem.CleanedAbs(path)
}
