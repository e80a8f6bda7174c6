// Package convert turns a Flux Operator MiniCluster (flux-framework.org/v1alpha2) into values of
// the minicluster chart that make the same MiniCluster. Every field of the operator's spec is in
// Fields: mapped to values, the same without one, or refused with what to do instead.
package convert

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/yamlstream"
)

const (
	apiVersion = "flux-framework.org/v1alpha2"
	kind       = "MiniCluster"
	// The operator's defaults, where the chart's differ.
	operatorViewImage = "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble"
	// The headless Service of earlier operators (this one names it after the MiniCluster),
	// still in their docs' names of the services pod.
	olderHeadlessName = "flux-service"
)

// Options change the images of the result.
type Options struct {
	// Images maps an image of the MiniCluster to the one the values use (--image FROM=TO).
	Images map[string]string
	// ViewImage is the Flux view image (flux.view.image) when set; else the MiniCluster's,
	// else the operator's default view.
	ViewImage string
}

// Result is one converted MiniCluster.
type Result struct {
	Name      string // metadata.name: the release name that gives the same host names
	Namespace string // metadata.namespace, if any
	Values    map[string]any
}

// ParseImageFlag reads FROM=TO.
func ParseImageFlag(s string) (from, to string, err error) {
	from, to, ok := strings.Cut(s, "=")
	if !ok || from == "" || to == "" {
		return "", "", fmt.Errorf("--image %q: want FROM=TO, e.g. --image ubuntu:noble=registry.example.com/app:1.0", s)
	}
	return from, to, nil
}

// Convert reads exactly one MiniCluster from in. It refuses another kind or apiVersion, an
// unknown field, a field the chart cannot do, and a file with several MiniClusters (each
// release gets its own values file).
func Convert(in []byte, opts Options) (Result, error) {
	var docs []string
	for _, d := range yamlstream.Documents(string(in)) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, d)
		}
	}
	switch {
	case len(docs) == 0:
		return Result{}, errors.New("no MiniCluster in the input: want one flux-framework.org/v1alpha2 MiniCluster")
	case len(docs) > 1:
		return Result{}, fmt.Errorf("the input has %d documents: convert one MiniCluster at a time (one values file per helm release); split the file at its `---` lines", len(docs))
	}
	return convertDoc([]byte(docs[0]), opts)
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func convertDoc(doc []byte, opts Options) (Result, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return Result{}, fmt.Errorf("not YAML: %w", err)
	}
	if head.Kind != kind {
		return Result{}, fmt.Errorf("kind %q: want a MiniCluster (kind: MiniCluster, apiVersion: %s)", head.Kind, apiVersion)
	}
	if head.APIVersion != apiVersion {
		return Result{}, fmt.Errorf("apiVersion %q: only %s MiniClusters are converted; update the file to v1alpha2 first (the Flux Operator's docs list the changes)", head.APIVersion, apiVersion)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(doc, &raw); err != nil {
		return Result{}, err
	}
	if refused := refusals(raw); len(refused) > 0 {
		return Result{}, fmt.Errorf("cannot convert: %d %s:\n  %s", len(refused), plural(len(refused), "field", "fields"), strings.Join(refused, "\n  "))
	}
	var mc miniCluster
	if err := yaml.UnmarshalStrict(doc, &mc); err != nil {
		return Result{}, fmt.Errorf("%w: see `minicluster convert --table` for the v1alpha2 MiniCluster's fields", err)
	}
	if mc.Metadata.Name == "" {
		return Result{}, errors.New("metadata.name is empty: the MiniCluster's name becomes the release name")
	}
	c := converter{mc: mc, opts: opts, values: map[string]any{}}
	if err := c.run(); err != nil {
		if errs := flatten(err); len(errs) > 1 {
			lines := make([]string, len(errs))
			for i, e := range errs {
				lines[i] = e.Error()
			}
			return Result{}, fmt.Errorf("cannot convert: %d problems:\n  %s", len(errs), strings.Join(lines, "\n  "))
		}
		return Result{}, err
	}
	return Result{Name: mc.Metadata.Name, Namespace: mc.Metadata.Namespace, Values: c.values}, nil
}

// flatten is the errors an errors.Join holds, at any depth; or err alone.
func flatten(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Write writes the values as YAML, with a head comment saying how to install them.
func Write(r Result) ([]byte, error) {
	body, err := yaml.Marshal(r.Values)
	if err != nil {
		return nil, err
	}
	ns := ""
	if r.Namespace != "" {
		ns = " --namespace " + r.Namespace
	}
	head := fmt.Sprintf("# Values of the minicluster chart for the Flux Operator MiniCluster %q (%s).\n"+
		"# Install it under the same name, so that the brokers get the same host names:\n"+
		"#   helm install %s charts/minicluster%s -f THIS_FILE\n", r.Name, apiVersion, r.Name, ns)
	return append([]byte(head), body...), nil
}
