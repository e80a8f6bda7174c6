package sidecar

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

func TestDeleteJob(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "ns1"}})
	if err := DeleteJob(ctx, client, "ns1", "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.BatchV1().Jobs("ns1").Get(ctx, "r1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Job is still there: %v", err)
	}
	if err := DeleteJob(ctx, client, "ns1", "r1"); err != nil {
		t.Errorf("a Job gone already: %v, want no error", err)
	}
}
