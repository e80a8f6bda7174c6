package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// volumes are a container's volumes as the operator makes them: volumes by name (once per pod)
// and the container's mounts.
func (c *converter) volumes(at string, ct miniClusterContainer, seen map[string]bool) (mounts, vols []any, err error) {
	for _, name := range sortedKeys(ct.Volumes) {
		v := ct.Volumes[name]
		where := at + ".volumes." + name
		src := corev1.VolumeSource{}
		switch {
		case v.CSIDriver != "":
			src.CSI = &corev1.CSIVolumeSource{Driver: v.CSIDriver, VolumeAttributes: v.CSIDriverAttributes}
		case v.SecretName != "":
			src.Secret = &corev1.SecretVolumeSource{SecretName: v.SecretName}
		case v.EmptyDir:
			ed := &corev1.EmptyDirVolumeSource{}
			switch v.EmptyDirMedium {
			case "":
			case "memory":
				ed.Medium = corev1.StorageMediumMemory
			default:
				return nil, nil, fmt.Errorf("%s.emptyDirMedium %q: the operator knows only \"memory\"", where, v.EmptyDirMedium)
			}
			if v.EmptyDirSizeLimit != "" {
				q, err := resource.ParseQuantity(v.EmptyDirSizeLimit)
				if err != nil {
					return nil, nil, fmt.Errorf("%s.emptyDirSizeLimit %q: %w", where, v.EmptyDirSizeLimit, err)
				}
				ed.SizeLimit = &q
			}
			src.EmptyDir = ed
		case v.HostPath != "":
			dir := corev1.HostPathDirectory
			src.HostPath = &corev1.HostPathVolumeSource{Path: v.HostPath, Type: &dir}
		case v.ConfigMapName != "":
			cm := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: v.ConfigMapName}}
			for _, k := range sortedKeys(v.Items) {
				cm.Items = append(cm.Items, corev1.KeyToPath{Key: k, Path: v.Items[k]})
			}
			src.ConfigMap = cm
		case v.ClaimName != "":
			src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.ClaimName}
		default:
			// The operator would reference a claim named "": an emptyDir holds the path instead.
			src.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
		mountPath := v.Path
		if v.EmptyDir {
			mountPath = "/dev/shm" // where the operator mounts every emptyDir volume
		}
		if mountPath == "" {
			if v.SecretName == "" && v.ConfigMapName == "" {
				return nil, nil, fmt.Errorf("%s.path is empty: say where to mount the volume", where)
			}
			return nil, nil, fmt.Errorf("%s.path is empty: the operator mounts a secret or configMap volume at its path; give one", where)
		}
		m := map[string]any{"name": name, "mountPath": mountPath}
		if v.ReadOnly {
			m["readOnly"] = true
		}
		mounts = append(mounts, m)
		if seen[name] {
			continue
		}
		seen[name] = true
		vols = append(vols, toAny(corev1.Volume{Name: name, VolumeSource: src}))
	}
	return mounts, vols, nil
}

// toAny turns a value into its JSON shape (maps, lists, scalars). It keeps every value the
// user wrote, false, 0 and "" too: the types' omitempty leaves out only what was not written.
func toAny(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return integers(out)
}

// toMap is toAny of a struct: its fields that were written, by their JSON names.
func toMap(v any) map[string]any {
	m, _ := toAny(v).(map[string]any)
	return m
}

// integers turns the decoder's numbers into int64 (or float64 where they are not whole).
func integers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = integers(e)
		}
	case []any:
		for i := range x {
			x[i] = integers(x[i])
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
