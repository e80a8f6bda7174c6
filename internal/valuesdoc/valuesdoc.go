// Package valuesdoc writes the "description" of each key in a chart's values.schema.json from the
// `# --` comment above the key in values.yaml: the comment helm-docs puts in the README's values
// table (ci/valuesdoc runs both). helm-docs writes markdown only, so this part is ours.
//
// Parse refuses the comments that helm-docs would read differently from it, so that the README
// and the schema say the same: helm-docs 1.14 takes a first line with " --" in it (a CLI flag)
// for `# <key> -- <description>` and drops the description, and a description starting with
// "(...)" for a type. A key without a `# --` comment is an error too (helm-docs would list it
// with an empty description; its strict mode only knows the `# <key> --` form).
package valuesdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Value is one documented key of values.yaml: a leaf (a scalar, a list, or an empty map).
type Value struct {
	Path        []string // the key and the keys of the maps above it, outermost first
	Description string   // the `# --` comment, its lines joined by spaces
}

// Key is the dotted key, e.g. flux.view.enabled.
func (v Value) Key() string { return strings.Join(v.Path, ".") }

// Parse reads values.yaml and returns its leaves in file order, each with its description.
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
		desc, err := description(k.HeadComment)
		if err != nil {
			return fmt.Errorf("values.yaml: %s: %w", strings.Join(p, "."), err)
		}
		*out = append(*out, Value{Path: p, Description: desc})
	}
	return nil
}

// helm-docs' own patterns (pkg/helm/chart_info.go): a first line that matches keyed with a
// non-empty key is `# <key> -- <description>`; a description matching typed starts with its
// type; an annotation line (@default, @section, @notationType, @raw) is not description.
var (
	keyed      = regexp.MustCompile(`^\s*#\s*(.*)\s+--\s*(.*)$`)
	typed      = regexp.MustCompile(`^\((.*?)\)\s*(.*)$`)
	annotation = regexp.MustCompile(`^\s*#\s+@(raw|(default|section|notationType)\s+--)`)
)

// description is the last `# --` paragraph of a head comment, without the comment marks and
// the annotations.
func description(head string) (string, error) {
	lines := strings.Split(head, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# --") {
			start = i
		}
	}
	if start < 0 {
		return "", fmt.Errorf("no `# -- description` comment above it")
	}
	if m := keyed.FindStringSubmatch(lines[start]); m != nil && m[1] != "" {
		return "", fmt.Errorf("helm-docs takes %q for `# <key> -- <description>` because of the \" --\" in it: move that part to the next line", lines[start])
	}
	var words []string
	for i, l := range lines[start:] {
		if annotation.MatchString(l) {
			continue
		}
		l = strings.TrimPrefix(strings.TrimSpace(l), "#")
		if i == 0 {
			l = strings.TrimPrefix(strings.TrimSpace(l), "--")
			if typed.MatchString(strings.TrimSpace(l)) {
				return "", fmt.Errorf("helm-docs takes the (...) that starts %q for the value's type: reword the start", lines[start])
			}
		}
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " "), nil
}

// Generate returns the values.schema.json of the chart in dir with the descriptions of
// values.yaml written in.
func Generate(dir string) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	values, err := Parse(src)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "values.schema.json")
	old, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	gen, err := Schema(old, values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gen, nil
}
