package postrender

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const (
	// RenderedFile is the resource name under which the kustomization sees Helm's manifests.
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

// applyKustomization runs the kustomization in dir over the manifests in, supplied as rendered.yaml
// on an in-memory layer over dir, and returns the result as segments.
func applyKustomization(dir, in string) ([]*segment, error) {
	root, err := kustomizationRoot(dir)
	if err != nil {
		return nil, err
	}
	kustFile, kust, err := readKustomization(root)
	if err != nil {
		return nil, fmt.Errorf("--kustomize %s: %w", dir, err)
	}
	kustText, reorder, err := prepareKustomization(kust)
	if err != nil {
		return nil, fmt.Errorf("--kustomize %s: %s: %w", dir, filepath.Base(kustFile), err)
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
	return segs, nil
}

// kustomizationRoot resolves the --kustomize directory to an absolute path without symlinks.
func kustomizationRoot(dir string) (string, error) {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if os.IsNotExist(err) {
		return "", fmt.Errorf("--kustomize %s: no such directory; give the directory holding kustomization.yaml", dir)
	}
	if err != nil {
		return "", fmt.Errorf("--kustomize %s: %w", dir, err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return "", fmt.Errorf("--kustomize %s is not a directory; give the directory holding kustomization.yaml", dir)
	}
	return root, nil
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

// keyObjects indexes the chart's key objects by keyObject.
func keyObjects(objs []*object) map[string]*object {
	keys := map[string]*object{}
	for _, o := range objs {
		if id, ok := keyObject(o); ok {
			keys[id] = o
		}
	}
	return keys
}

// keepKeyNames is the kio.Filter that undoes a kustomization's renaming of the chart's key objects
// (and of the references to them in Jobs and Roles): the keygen Job and the brokers' init
// step name them in their arguments, which kustomize does not rewrite. Moving them to another
// namespace than the release's is refused: an error.
type keepKeyNames struct {
	chart map[string]*object // the key objects as Helm rendered them, by keyObject
}

var _ kio.Filter = keepKeyNames{}

func (f keepKeyNames) Filter(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
	objs := objectsOf(nodes)
	renamed, err := f.restoreNames(objs)
	if err != nil {
		return nil, err
	}
	if len(renamed) == 0 {
		return nodes, nil
	}
	for _, o := range objs {
		switch {
		case o.is("batch/v1", "Job"):
			restoreVolumes(o, renamed)
		case o.is("rbac.authorization.k8s.io/v1", "Role"):
			restoreResourceNames(o, renamed)
		}
	}
	return nodes, nil
}

// restoreNames gives the key objects back the chart's names and returns the renames undone,
// as "<kind>/<namespace>/<kustomization's name>" -> chart's name.
func (f keepKeyNames) restoreNames(objs []*object) (map[string]string, error) {
	renamed := map[string]string{}
	for _, o := range objs {
		id, ok := keyObject(o)
		was := f.chart[id]
		if !ok || was == nil {
			continue
		}
		if o.namespace != was.namespace {
			return nil, fmt.Errorf("the kustomization moves %s %s (a key object the keygen Job fills) to namespace %q; the key objects stay in the release's namespace: install into that namespace with helm --namespace %s instead of moving it, or use curve.existingSecret", o.kind, ref(was), o.namespace, o.namespace)
		}
		if o.name == was.name {
			continue
		}
		renamed[o.kind+"/"+o.namespace+"/"+o.name] = was.name
		if _, err := setScalar(o.node, was.name, 0, "metadata", "name"); err != nil {
			return nil, fmt.Errorf("%s %s: restore the chart's name %s: %w", o.kind, ref(o), was.name, err)
		}
	}
	return renamed, nil
}

// restoreVolumes points the Job's Secret and ConfigMap volumes back at the renamed key objects.
func restoreVolumes(job *object, renamed map[string]string) {
	for _, v := range elements(job.node, "spec", "template", "spec", "volumes") {
		for _, f := range [][]string{{"Secret", "secret", "secretName"}, {"ConfigMap", "configMap", "name"}} {
			if was, ok := renamed[f[0]+"/"+job.namespace+"/"+scalar(v, f[1], f[2])]; ok {
				n := lookup(v, f[1], f[2]).YNode()
				n.Value, n.Tag = was, yaml.NodeTagString
			}
		}
	}
}

// restoreResourceNames points the Role's rules back at the renamed key objects.
func restoreResourceNames(role *object, renamed map[string]string) {
	for _, rule := range elements(role.node, "rules") {
		for _, name := range elements(rule, "resourceNames") {
			for _, kind := range []string{"Secret", "ConfigMap"} {
				if was, ok := renamed[kind+"/"+role.namespace+"/"+name.YNode().Value]; ok {
					name.YNode().Value = was
				}
			}
		}
	}
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
