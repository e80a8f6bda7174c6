package helmtest

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Object is a decoded manifest with the kind and name that identify it.
type Object struct {
	Kind, Name string
	Object     runtime.Object
	Meta       metav1.Object
	Source     string // the YAML document
}

// newTyped maps the kinds the chart renders to their Go types.
func newTyped(apiVersion, kind string) (runtime.Object, error) {
	switch apiVersion + "/" + kind {
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Secret":
		return &corev1.Secret{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1/PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}, nil
	case "v1/Pod":
		return &corev1.Pod{}, nil
	case "batch/v1/Job":
		return &batchv1.Job{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}, nil
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}, nil
	}
	return nil, fmt.Errorf("unexpected kind %s %s", apiVersion, kind)
}

// DecodeStrict decodes one document into its k8s.io/api type; unknown fields are errors.
func DecodeStrict(doc string) (Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		return Object{}, fmt.Errorf("read kind: %w", err)
	}
	obj, err := newTyped(tm.APIVersion, tm.Kind)
	if err != nil {
		return Object{}, err
	}
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		return Object{}, fmt.Errorf("decode %s strictly: %w", tm.Kind, err)
	}
	meta := obj.(metav1.Object)
	return Object{Kind: tm.Kind, Name: meta.GetName(), Object: obj, Meta: meta, Source: doc}, nil
}

// DecodeAll strictly decodes every document of a render.
func DecodeAll(rendered string) ([]Object, error) {
	var objs []Object
	for i, doc := range Documents(rendered) {
		o, err := DecodeStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// Find returns the object of the given kind and name.
func Find(objs []Object, kind, name string) (Object, bool) {
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			return o, true
		}
	}
	return Object{}, false
}
