package sidecar

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// NamespaceDeleted reports whether namespace is being deleted. A broker pod asks at its end:
// the namespace controller deletes the pods of a namespace first and waits until they are gone,
// but the Job controller keeps a failed pod of an index (and its finalizer) until the index's
// replacement exists, which a namespace being deleted never allows. A pod that knows can fail
// its Job (the chart's podFailurePolicy), and a failed Job lets go of all its pods; or delete
// it (DeleteJob).
func NamespaceDeleted(ctx context.Context, client kubernetes.Interface, namespace string) (bool, error) {
	ns, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading the namespace %s: %w", namespace, err)
	}
	return ns.DeletionTimestamp != nil, nil
}

// DeleteJob deletes the Job name as Helm does (its pods go by garbage collection); one that is
// gone already is no error. A pod deleted with its namespace does it: the Job controller lets go
// of the pods of a deleted Job at once, where a failure condition can wait: after a replacement
// pod that the terminating namespace refused, the controller holds back the Job's end until it
// stops expecting that pod (5 minutes).
func DeleteJob(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	err := client.BatchV1().Jobs(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the Job %s/%s: %w", namespace, name, err)
	}
	return nil
}
