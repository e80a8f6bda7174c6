//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// namespaceDeletedWithin is how long deleting the namespace of a running MiniCluster of 6 may
// take.
const namespaceDeletedWithin = time.Minute

// newFloorNamespace makes a namespace with a plain Job (one failure count for the whole Job) of
// size pods that end at once on SIGTERM, and waits until they run: what Kubernetes alone needs
// to delete a namespace of running Job pods, measured beside a MiniCluster's.
func newFloorNamespace(t *testing.T, size int) string {
	t.Helper()
	ns := newNamespace(t, "ns-floor")
	job := indexedJob("floor", size, corev1.PodSpec{Containers: []corev1.Container{{
		Name: "floor", Image: testsImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
	}}})
	if _, err := kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, fmt.Sprintf("%d floor pods running", size), func() (bool, string) {
		pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=floor"})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == size, fmt.Sprintf("%d running", running)
	})
	return ns
}

// checkNamespaceDeleted deletes the namespace of the running MiniCluster r and the floor's
// namespace at the same moment, and checks that r's is gone within namespaceDeletedWithin and
// that its Job failed on the keys container's exit 79 (which lets the Job controller release
// the pods it would keep for replacements that a namespace being deleted never allows).
func checkNamespaceDeleted(t *testing.T, r *release, floorNS string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	for _, ns := range []string{r.ns, floorNS} {
		if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone := map[string]time.Duration{}
	var failure string // the Job's failure, seen before it went
	poll(t, 3*time.Minute, 250*time.Millisecond, "both namespaces gone", func() (bool, string) {
		if failure == "" {
			if job, err := kube.BatchV1().Jobs(r.ns).Get(ctx, r.name, metav1.GetOptions{}); err == nil {
				for _, c := range job.Status.Conditions {
					if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobFailureTarget || c.Type == batchv1.JobFailed) {
						failure = c.Reason + ": " + c.Message
					}
				}
			}
		}
		for _, ns := range []string{r.ns, floorNS} {
			if _, ok := gone[ns]; ok {
				continue
			}
			if _, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				gone[ns] = time.Since(start)
			}
		}
		return len(gone) == 2, fmt.Sprintf("gone after: %v; the MiniCluster's Job: %q", gone, failure)
	})
	t.Logf("namespace deleted: the MiniCluster's in %.1f s, the floor's (a plain Job of pods that end at once) in %.1f s",
		gone[r.ns].Seconds(), gone[floorNS].Seconds())
	if gone[r.ns] > namespaceDeletedWithin {
		t.Errorf("the MiniCluster's namespace took %.1f s to go, want at most %v (the floor took %.1f s)",
			gone[r.ns].Seconds(), namespaceDeletedWithin, gone[floorNS].Seconds())
	}
	if !strings.Contains(failure, batchv1.JobReasonPodFailurePolicy) || !strings.Contains(failure, "keys") || !strings.Contains(failure, "exit code 79") {
		t.Errorf("the MiniCluster's Job failed with %q, want its pod failure policy on the keys container's exit code 79", failure)
	}
}
