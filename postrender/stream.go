package postrender

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/minicluster/minicluster/internal/yamlstream"
)

// segment is one piece of a YAML stream: the separator line that opens it ("---\n"; empty for
// the text before the first separator) and the raw text up to the next separator. A segment
// whose document the filters left as parsed is written back byte for byte, so that an
// unmodified render leaves the post-renderer unchanged; only edited documents are serialized.
type segment struct {
	sep  string
	raw  string
	node *yaml.RNode // nil when the text holds no YAML document (only comments or blanks)
	orig *yaml.Node  // a copy of node as parsed, to tell whether a filter edited it
}

// edited reports whether the filters changed the segment's document.
func (s *segment) edited() bool {
	return s.node != nil && !sameNode(s.orig, s.node.YNode())
}

// sameNode compares two YAML trees by what serializing them writes. Aliases compare by name
// (an alias may point at its own ancestor).
func sameNode(a, b *yaml.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || a.Style != b.Style || a.Tag != b.Tag || a.Value != b.Value ||
		a.Anchor != b.Anchor || a.HeadComment != b.HeadComment || a.LineComment != b.LineComment ||
		a.FootComment != b.FootComment || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// splitStream cuts a YAML stream into segments and parses each document. A segment holding more
// than one document (a separator yamlstream does not recognise) is an error rather than a
// silently dropped document.
func splitStream(in string) ([]*segment, error) {
	var segs []*segment
	for _, s := range yamlstream.Split(in) {
		segs = append(segs, &segment{sep: s.Sep, raw: s.Text})
	}
	for i, s := range segs {
		node, err := parseDocument(s.raw)
		if err != nil {
			return nil, fmt.Errorf("manifest %d is not valid YAML: %w", i, err)
		}
		s.node = node
		if node != nil {
			s.orig = yaml.CopyYNode(node.YNode())
		}
	}
	return segs, nil
}

// parseDocument parses the single YAML document in text, or returns nil when there is none.
func parseDocument(text string) (*yaml.RNode, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	dec := yaml.NewDecoder(strings.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, errors.New("it holds more than one document; separate documents with a line of just ---")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return yaml.NewRNode(&doc), nil
}

// nodes lists the documents of the stream, in order: what the filters work on.
func nodes(segs []*segment) []*yaml.RNode {
	var out []*yaml.RNode
	for _, s := range segs {
		if s.node != nil {
			out = append(out, s.node)
		}
	}
	return out
}

// joinStream writes the segments back: raw text for untouched ones, the edited node otherwise.
func joinStream(segs []*segment) (string, error) {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.sep)
		if !s.edited() {
			b.WriteString(s.raw)
			continue
		}
		text, err := s.node.String()
		if err != nil {
			return "", fmt.Errorf("write %s %s: %w", scalar(s.node, "kind"), scalar(s.node, "metadata", "name"), err)
		}
		b.WriteString(text)
	}
	return b.String(), nil
}
