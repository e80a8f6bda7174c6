package postrender

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// segment is one piece of a YAML stream: the separator line that opens it ("---\n"; empty for
// the text before the first separator) and the raw text up to the next separator. Untouched
// segments are written back byte for byte, so that an unmodified render leaves the post-renderer
// unchanged; only documents the post-renderer edits are serialized again.
type segment struct {
	sep     string
	raw     string
	node    *yaml.RNode // nil when the text holds no YAML document (only comments or blanks)
	changed bool        // node was edited: write node, not raw
}

// isSeparator reports whether line (with its newline) is a document separator: "---" alone or
// followed by blanks or a comment.
func isSeparator(line string) bool {
	if !strings.HasPrefix(line, "---") {
		return false
	}
	rest := strings.TrimRight(line[3:], "\r\n")
	if rest == "" {
		return true
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return false
	}
	rest = strings.TrimSpace(rest)
	return rest == "" || strings.HasPrefix(rest, "#")
}

// splitStream cuts a YAML stream into segments and parses each document. A segment holding more
// than one document (a separator this function does not recognise) is an error rather than a
// silently dropped document.
func splitStream(in string) ([]*segment, error) {
	var segs []*segment
	cur := &segment{}
	var raw strings.Builder
	flush := func() {
		cur.raw = raw.String()
		raw.Reset()
		segs = append(segs, cur)
	}
	for rest := in; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		if isSeparator(line) {
			flush()
			cur = &segment{sep: line}
			continue
		}
		raw.WriteString(line)
	}
	flush()
	for i, s := range segs {
		node, err := parseDocument(s.raw)
		if err != nil {
			return nil, fmt.Errorf("manifest %d is not valid YAML: %w", i, err)
		}
		s.node = node
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

// joinStream writes the segments back: raw text for untouched ones, the edited node otherwise.
func joinStream(segs []*segment) (string, error) {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.sep)
		if !s.changed {
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

// documents counts the segments that hold a YAML document.
func documents(segs []*segment) int {
	n := 0
	for _, s := range segs {
		if s.node != nil {
			n++
		}
	}
	return n
}
