// Package valuesdoc writes a chart's values documentation once: the `# -- description` comment
// above each key of values.yaml (helm-docs style) becomes the row of the values table in the
// chart's README.md (between <!-- values:begin --> and <!-- values:end -->) and the
// "description" of the key in values.schema.json.
package valuesdoc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The markers around the generated table in README.md.
const (
	BeginMarker = "<!-- values:begin -->"
	EndMarker   = "<!-- values:end -->"
)

// Value is one documented key of values.yaml: a leaf (a scalar, a list, or an empty map).
type Value struct {
	Path        []string // the key and the keys of the maps above it, outermost first
	Default     string   // the default as YAML flow, e.g. 8050, "", [], {a: b}
	Description string   // the `# --` comment, its lines joined by spaces
}

// Key is the dotted key, e.g. flux.view.enabled.
func (v Value) Key() string { return strings.Join(v.Path, ".") }

// Parse reads values.yaml and returns its leaves in file order. A leaf without a `# --` comment
// is an error naming the key: every value is documented.
func Parse(src []byte) ([]Value, error) {
	doc, err := yaml.Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	root := doc.YNode()
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml: the top level is not a map")
	}
	var out []Value
	if err := walk(root, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func walk(m *yaml.Node, path []string, out *[]Value) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		p := append(append([]string(nil), path...), k.Value)
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
			if err := walk(v, p, out); err != nil {
				return err
			}
			continue
		}
		desc := description(k.HeadComment)
		if desc == "" {
			return fmt.Errorf("values.yaml: %s has no `# -- description` comment above it", strings.Join(p, "."))
		}
		*out = append(*out, Value{Path: p, Default: flow(v), Description: desc})
	}
	return nil
}

// description is the last `# --` paragraph of a head comment, without the comment marks.
func description(head string) string {
	lines := strings.Split(head, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# --") {
			start = i
		}
	}
	if start < 0 {
		return ""
	}
	var words []string
	for i, l := range lines[start:] {
		l = strings.TrimPrefix(strings.TrimSpace(l), "#")
		if i == 0 {
			l = strings.TrimPrefix(strings.TrimSpace(l), "--")
		}
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " ")
}

// flow writes a node as one line of YAML flow style.
func flow(n *yaml.Node) string {
	switch n.Kind {
	case yaml.AliasNode:
		return flow(n.Alias)
	case yaml.SequenceNode:
		items := make([]string, len(n.Content))
		for i, c := range n.Content {
			items[i] = flow(c)
		}
		return "[" + strings.Join(items, ", ") + "]"
	case yaml.MappingNode:
		var items []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			items = append(items, flow(n.Content[i])+": "+flow(n.Content[i+1]))
		}
		return "{" + strings.Join(items, ", ") + "}"
	}
	switch {
	case n.Tag == "!!null" && n.Value == "":
		return "null"
	case n.Value == "" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// Table is the markdown values table: key | default | description, one row per value.
func Table(values []Value) string {
	var b strings.Builder
	b.WriteString("| key | default | description |\n|---|---|---|\n")
	for _, v := range values {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", cell(v.Key()), cell(v.Default), cell(v.Description))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Readme replaces what lies between the markers of readme with the table of values.
func Readme(readme []byte, values []Value) ([]byte, error) {
	begin := bytes.Index(readme, []byte(BeginMarker))
	end := bytes.Index(readme, []byte(EndMarker))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("no %s ... %s lines around the values table", BeginMarker, EndMarker)
	}
	var b bytes.Buffer
	b.Write(readme[:begin+len(BeginMarker)])
	b.WriteString("\n" + Table(values))
	b.Write(readme[end:])
	return b.Bytes(), nil
}

// Files are the generated files of a chart directory: README.md and values.schema.json.
var Files = []string{"README.md", "values.schema.json"}

// Generate returns the generated content of Files for the chart in dir, by file name.
func Generate(dir string) (map[string][]byte, error) {
	src, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	values, err := Parse(src)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, name := range Files {
		path := filepath.Join(dir, name)
		old, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var gen []byte
		if name == "README.md" {
			gen, err = Readme(old, values)
		} else {
			gen, err = Schema(old, values)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[name] = gen
	}
	return out, nil
}

// Write regenerates Files in the chart directory dir.
func Write(dir string) error {
	gen, err := Generate(dir)
	if err != nil {
		return err
	}
	for _, name := range Files {
		if err := os.WriteFile(filepath.Join(dir, name), gen[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Check returns an error naming the files in dir that differ from what Write would write.
func Check(dir string) error {
	gen, err := Generate(dir)
	if err != nil {
		return err
	}
	var stale []string
	for _, name := range Files {
		path := filepath.Join(dir, name)
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, gen[name]) {
			stale = append(stale, path)
		}
	}
	switch len(stale) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s is stale: run make docs", stale[0])
	}
	return fmt.Errorf("%s are stale: run make docs", strings.Join(stale, " and "))
}
