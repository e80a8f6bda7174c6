// Package postrender is minicluster's Helm post-renderer: it reads the manifests Helm rendered,
// optionally applies a kustomization, and then makes every MiniCluster in them consistent
// with the objects as Kubernetes will create them: the broker ConfigMap's broker.toml, host list
// and size are recomputed from the final Job, Service and namespace, and a MiniCluster that
// cannot work (wrong Service, selector, subdomain, sizes, names, broker.toml keys) is an error.
//
// The work is a pipeline in the manner of kustomize's kio: the stream is read into documents,
// small filters (kio.Filter) check and edit them in place, and the stream is written back.
// Documents no filter changed are written byte for byte, in their input order, so an
// unmodified render passes through unchanged and running it twice changes nothing.
package postrender

import (
	"bytes"
	"errors"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/kio"
)

// Options says what to do besides the MiniCluster checks.
type Options struct {
	// KustomizeDir, when set, is a kustomization directory applied first; its kustomization
	// lists rendered.yaml among its resources, and that file is the input (supplied in memory).
	KustomizeDir string
}

// ErrEmpty is returned for an input without any manifest.
var ErrEmpty = errors.New("no manifests on the input: minicluster-postrender reads the manifests Helm renders " +
	"(helm install|upgrade|template ... --post-renderer ...) or `helm template` output on stdin")

// Render post-renders a stream of manifests.
func Render(in []byte, opts Options) ([]byte, error) {
	segs, err := splitStream(string(in))
	if err != nil {
		return nil, err
	}
	if len(nodes(segs)) == 0 {
		return nil, ErrEmpty
	}
	var filters []kio.Filter
	if opts.KustomizeDir != "" {
		keep := keepKeyNames{chart: keyObjects(objectsOf(nodes(segs)))}
		if segs, err = applyKustomization(opts.KustomizeDir, string(in)); err != nil {
			return nil, err
		}
		filters = append(filters, keep)
	}
	filters = append(filters, miniClusters{steps: miniClusterSteps}, claimedJobs{})
	if err := runFilters(segs, filters); err != nil {
		return nil, err
	}
	out, err := joinStream(segs)
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// runFilters runs the filters in order over the stream's documents. They edit documents in
// place, as kustomize's field filters do: the stream keeps its order, separators and
// comment-only pieces, and a filter must not add or drop a document.
func runFilters(segs []*segment, filters []kio.Filter) error {
	docs := nodes(segs)
	for _, f := range filters {
		out, err := f.Filter(docs)
		if err != nil {
			return err
		}
		if len(out) != len(docs) {
			return fmt.Errorf("internal error: filter %T returned %d documents for %d", f, len(out), len(docs))
		}
		docs = out
	}
	return nil
}

// PostRenderer runs Render for Helm's SDK: it implements the PostRenderer interface of
// helm.sh/helm/v3/pkg/postrender and helm.sh/helm/v4/pkg/postrenderer.
type PostRenderer struct {
	Options Options
}

// Run implements Helm's PostRenderer.
func (p PostRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	out, err := Render(rendered.Bytes(), p.Options)
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}
