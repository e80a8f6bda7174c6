package sidecar

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NamespaceDeleted reports whether namespace is being deleted. A broker pod asks at its end:
// the namespace controller deletes the pods of a namespace first and waits until they are gone,
// but the Job controller keeps a failed pod of an index (and its finalizer) until the index's
// replacement exists, which a namespace being deleted never allows. A pod that knows can fail
// its Job (the chart's podFailurePolicy), and a failed Job lets go of all its pods.
func NamespaceDeleted(ctx context.Context, client kubernetes.Interface, namespace string) (bool, error) {
	ns, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading the namespace %s: %w", namespace, err)
	}
	return ns.DeletionTimestamp != nil, nil
}
