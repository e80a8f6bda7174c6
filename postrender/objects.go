package postrender

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// object is a Kubernetes object of the stream with the fields the post-renderer matches on.
type object struct {
	node                              *yaml.RNode
	apiVersion, kind, name, namespace string
}

// objectsOf lists the mapping documents among nodes as objects, in order.
func objectsOf(nodes []*yaml.RNode) []*object {
	var objs []*object
	for _, n := range nodes {
		if n == nil || n.YNode().Kind != yaml.MappingNode {
			continue
		}
		objs = append(objs, &object{
			node:       n,
			apiVersion: scalar(n, "apiVersion"),
			kind:       scalar(n, "kind"),
			name:       scalar(n, "metadata", "name"),
			namespace:  scalar(n, "metadata", "namespace"),
		})
	}
	return objs
}

func (o *object) is(apiVersion, kind string) bool {
	return o.apiVersion == apiVersion && o.kind == kind
}

// annotations returns the object's annotations (kyaml's getter panics on malformed metadata).
func annotations(o *object) map[string]string {
	return stringMap(o.node, "metadata", "annotations")
}

// ref names an object for messages: namespace/name, or name alone when it has no namespace.
func ref(o *object) string {
	if o.namespace == "" {
		return o.name
	}
	return o.namespace + "/" + o.name
}

func find(objs []*object, apiVersion, kind, namespace, name string) *object {
	for _, o := range objs {
		if o.is(apiVersion, kind) && o.namespace == namespace && o.name == name {
			return o
		}
	}
	return nil
}

func serviceNames(objs []*object, namespace string) string {
	var names []string
	for _, o := range objs {
		if o.is("v1", "Service") && o.namespace == namespace {
			names = append(names, o.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// configMapVolume returns the name of the Job's pod volume that mounts ConfigMap name.
func configMapVolume(job *object, name string) (string, bool) {
	for _, v := range elements(job.node, "spec", "template", "spec", "volumes") {
		if scalar(v, "configMap", "name") == name {
			return scalar(v, "name"), true
		}
	}
	return "", false
}
