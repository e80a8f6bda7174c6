package postrender

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The helpers below read and set fields of a YAML node by path; objects, the stream and every
// check and edit use them.

// lookup returns the node at path, or nil when it is missing or the path crosses a non-mapping.
func lookup(rn *yaml.RNode, path ...string) *yaml.RNode {
	if rn == nil {
		return nil
	}
	n := rn.YNode()
	for _, field := range path {
		n = mapValue(n, field)
		if n == nil {
			return nil
		}
	}
	return yaml.NewRNode(n)
}

// mapValue returns the value of key in mapping n (following aliases), or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}

// scalar returns the scalar value at path, or "" when there is none.
func scalar(rn *yaml.RNode, path ...string) string {
	n := lookup(rn, path...)
	if n == nil || n.YNode().Kind != yaml.ScalarNode {
		return ""
	}
	return n.YNode().Value
}

// stringMap returns the mapping at path as a Go map of its scalar entries.
func stringMap(rn *yaml.RNode, path ...string) map[string]string {
	n := lookup(rn, path...)
	if n == nil || n.YNode().Kind != yaml.MappingNode {
		return nil
	}
	m := map[string]string{}
	c := n.YNode().Content
	for i := 0; i+1 < len(c); i += 2 {
		if c[i+1].Kind == yaml.ScalarNode {
			m[c[i].Value] = c[i+1].Value
		}
	}
	return m
}

// elements returns the items of the sequence at path (nil when there is none).
func elements(rn *yaml.RNode, path ...string) []*yaml.RNode {
	n := lookup(rn, path...)
	if n == nil || n.YNode().Kind != yaml.SequenceNode {
		return nil
	}
	items := make([]*yaml.RNode, 0, len(n.YNode().Content))
	for _, c := range n.YNode().Content {
		items = append(items, yaml.NewRNode(c))
	}
	return items
}

// setScalar sets the existing scalar at path to value, keeping its style, or creates it with
// the given style. It reports whether anything changed.
func setScalar(rn *yaml.RNode, value string, style yaml.Style, path ...string) (bool, error) {
	n := lookup(rn, path...)
	if n != nil && n.YNode().Kind == yaml.ScalarNode {
		if n.YNode().Value == value {
			return false, nil
		}
		n.YNode().Value = value
		n.YNode().Tag = yaml.NodeTagString
		if n.YNode().Style == 0 {
			n.YNode().Style = style
		}
		return true, nil
	}
	parent, err := rn.Pipe(yaml.LookupCreate(yaml.MappingNode, path[:len(path)-1]...))
	if err != nil {
		return false, err
	}
	field := yaml.NewScalarRNode(value)
	field.YNode().Tag = yaml.NodeTagString
	field.YNode().Style = style
	return true, parent.PipeE(yaml.SetField(path[len(path)-1], field))
}
