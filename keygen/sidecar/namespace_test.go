package sidecar

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNamespaceDeleted(t *testing.T) {
	now := metav1.NewTime(time.Now())
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}},
	)
	for ns, want := range map[string]bool{"live": false, "going": true} {
		got, err := NamespaceDeleted(context.Background(), client, ns)
		if err != nil || got != want {
			t.Errorf("NamespaceDeleted(%s) = %v, %v; want %v, nil", ns, got, err, want)
		}
	}
	if got, err := NamespaceDeleted(context.Background(), client, "none"); err == nil || got {
		t.Errorf("NamespaceDeleted(none) = %v, %v; want false and an error", got, err)
	}
}
