package convert

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// oldField is a field of an earlier MiniCluster that v1alpha2 no longer has.
type oldField struct {
	did, now string
}

// oldFields are the fields MiniCluster files of earlier operator versions (and charts written
// for them) still carry, by path ([] a list item, {} a map value). A path under
// spec.containers[] holds for spec.services[] too.
var oldFields = map[string]oldField{
	"spec.volumes": {
		did: "volumes the operator made for the MiniCluster (storage class, capacity), mounted by name in the containers",
		now: "make the claim (or ConfigMap, Secret) yourself and mount it in each container with spec.containers[].volumes.NAME: claimName (configMapName, secretName, hostPath) and path"},
	"spec.fluxRestful": {
		did: "the Flux RESTful API server the operator started on the lead broker",
		now: "drop it and set the chart's api.enabled: true (see docs/api.md)"},
	"spec.containers[].cores": {
		did: "the cores each broker gave Flux",
		now: "spec.containers[].resources.limits.cpu: the chart gives each broker that many cores"},
	"spec.containers[].existingVolumes": {
		did: "volumes that already exist, mounted in the container",
		now: "spec.containers[].volumes.NAME with claimName, configMapName, secretName or hostPath, and path"},
	"spec.containers[].fluxOptionFlags": {
		did: "options of the flux submit that runs the command",
		now: "spec.flux.optionFlags"},
	"spec.containers[].fluxLogLevel": {
		did: "the brokers' log level",
		now: "spec.flux.logLevel"},
	"spec.containers[].preCommand": {
		did: "a script run before the broker starts",
		now: "spec.containers[].commands.pre"},
	"spec.containers[].securityContext.addCapabilities": {
		did: "Linux capabilities added to the container",
		now: "spec.containers[].securityContext.capabilities.add (Kubernetes' SecurityContext)"},
	"metadata.labels": {
		did: "labels of the MiniCluster object itself (the chart's objects carry the chart's labels)",
		now: "spec.jobLabels for labels on the Job, spec.pod.labels for the pods'; drop it"},
	"metadata.annotations": {
		did: "annotations of the MiniCluster object itself",
		now: "spec.pod.annotations for the pods'; drop it"},
}

// refusals lists every field of the document that stops its conversion, each with its whole
// path, what it did and what to use now: fields v1alpha2 does not have, fields the chart cannot
// do (Refused in Fields) set to other than the operator's default, and the MiniCluster's own
// labels and annotations.
func refusals(raw map[string]any) []string {
	var out []string
	unknownFields(raw, reflect.TypeOf(miniCluster{}), "", "", &out)
	out = append(out, refusedFields(raw)...)
	if meta, ok := raw["metadata"].(map[string]any); ok {
		for _, k := range []string{"labels", "annotations"} {
			if v, ok := meta[k]; ok && !isZero(v) {
				f := oldFields["metadata."+k]
				out = append(out, fmt.Sprintf("metadata.%s: %s; use %s", k, f.did, f.now))
			}
		}
	}
	return out
}

// unknownFields walks v along type t and adds every key that t does not have.
// shown is the path as written (spec.containers[0].cores); pattern as in oldFields.
func unknownFields(v any, t reflect.Type, shown, pattern string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()) {
		return // a value with a form of its own (a quantity): decoding checks it
	}
	join := func(path, key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(m) {
			ft, known := fields[k]
			if known {
				unknownFields(m[k], ft, join(shown, k), join(pattern, k), out)
				continue
			}
			*out = append(*out, unknownField(join(shown, k), join(pattern, k)))
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range sortedKeys(m) {
			unknownFields(m[k], t.Elem(), join(shown, k), pattern+"{}", out)
		}
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			return
		}
		for i, item := range items {
			unknownFields(item, t.Elem(), fmt.Sprintf("%s[%d]", shown, i), pattern+"[]", out)
		}
	}
}

func unknownField(shown, pattern string) string {
	pattern = strings.Replace(pattern, "spec.services[]", "spec.containers[]", 1)
	if f, ok := oldFields[pattern]; ok {
		return fmt.Sprintf("%s: a field of earlier operator versions, not of v1alpha2: %s; use %s", shown, f.did, f.now)
	}
	return fmt.Sprintf("%s: not a field of the v1alpha2 MiniCluster (a typo, or a field of another version); `minicluster convert --table` lists them all", shown)
}

// jsonFields are a struct's fields by their JSON names, with those of inlined structs.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			for k, v := range jsonFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// refusedFields are the fields of Fields the chart cannot do (Refused) that the document sets
// to other than the operator's default, in path order, each with what to do.
func refusedFields(raw map[string]any) []string {
	spec, _ := raw["spec"].(map[string]any)
	var errs []string
	var walk func(path, shown string, v any)
	walk = func(path, shown string, v any) {
		if f, ok := fieldExact(path); ok {
			if f.Status == Refused && !isZero(v) && (f.Default == "" || fmt.Sprint(v) != f.Default) {
				errs = append(errs, fmt.Sprintf("%s: %s", shown, f.Why))
			}
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if isKeyed(path) {
				for _, k := range sortedKeys(x) {
					walk(path+"{}", shown+"."+k, x[k])
				}
				return
			}
			for _, k := range sortedKeys(x) {
				walk(path+"."+k, shown+"."+k, x[k])
			}
		case []any:
			for i, item := range x {
				walk(path+"[]", fmt.Sprintf("%s[%d]", shown, i), item)
			}
		}
	}
	walk("spec", "spec", spec)
	return errs
}

func fieldExact(path string) (Field, bool) {
	for _, f := range Fields {
		if f.Path == path {
			return f, true
		}
	}
	return Field{}, false
}

// isKeyed says whether the object at path is a map with keys of the user's (volumes, secrets).
func isKeyed(path string) bool {
	for _, f := range Fields {
		if strings.HasPrefix(f.Path, path+"{}") {
			return true
		}
	}
	return false
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case float64:
		return x == 0
	case int64:
		return x == 0
	case map[string]any:
		for _, e := range x {
			if !isZero(e) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	}
	return false
}
