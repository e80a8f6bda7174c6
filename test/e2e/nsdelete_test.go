//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

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
		running, err := runningPods(ns, "job-name=floor")
		if err != nil {
			return false, err.Error()
		}
		return running == size, fmt.Sprintf("%d running", running)
	})
	return ns
}

// floorMargin is how much longer than the floor's a MiniCluster's namespace may take to go
// where the floor itself takes longer than the target.
const floorMargin = 30 * time.Second

// checkNamespaceDeleted deletes the namespace of the running MiniCluster r and the floor's
// namespace at the same moment, and checks that r's is gone within the time given or, where
// the floor itself takes longer than that, within floorMargin of the floor's; and that the keys
// container of every broker pod running then ended with exit 79 (having asked whether its
// namespace is being deleted, and deleted the Job): that is what lets the Job controller
// release the pods it would keep for replacements that a namespace being deleted never allows.
func checkNamespaceDeleted(t *testing.T, r *release, floorNS string, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	brokers, err := kube.CoreV1().Pods(r.ns).List(ctx, brokerSelector(r.name))
	if err != nil {
		t.Fatal(err)
	}
	// A watch from that list sees every pod's last status, written by its kubelet before the pod
	// goes, which a poll could miss.
	exits := watchKeysExits(t, r.ns, r.name, brokers.ResourceVersion)
	start := time.Now()
	for _, ns := range []string{r.ns, floorNS} {
		if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone := map[string]time.Duration{}
	poll(t, within+2*time.Minute, 250*time.Millisecond, "both namespaces gone", func() (bool, string) {
		for _, ns := range []string{r.ns, floorNS} {
			if _, ok := gone[ns]; ok {
				continue
			}
			if _, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				gone[ns] = time.Since(start)
			}
		}
		keysExits, _ := exits()
		return len(gone) == 2, fmt.Sprintf("gone after: %v; keys containers' exits: %v", gone, keysExits)
	})
	keysExits, watchErr := exits()
	if watchErr != nil {
		t.Fatal(watchErr)
	}
	t.Logf("namespace deleted: the MiniCluster's in %.1f s, the floor's (a plain Job of pods that end at once) in %.1f s; keys containers' exits: %v",
		gone[r.ns].Seconds(), gone[floorNS].Seconds(), keysExits)
	// A target below what Kubernetes itself needs here (the floor, deleted at the same moment)
	// is held against the floor instead: at most floorMargin more.
	if gone[r.ns] > within && gone[r.ns] > gone[floorNS]+floorMargin {
		t.Errorf("the MiniCluster's namespace took %.1f s to go, want at most %v or the floor's %.1f s + %v",
			gone[r.ns].Seconds(), within, gone[floorNS].Seconds(), floorMargin)
	}
	for _, p := range brokers.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue // ending already, before the namespace was
		}
		if code, ok := keysExits[p.Name]; !ok || code != 79 {
			t.Errorf("broker pod %s: its keys container's exit %d (seen: %v), want 79 (the namespace is being deleted); all: %v", p.Name, code, ok, keysExits)
		}
	}
}

// watchKeysExits watches the release's broker pods from resourceVersion on until the test ends,
// and returns a function that gives each pod's keys container's exit code once it ended, or
// why the watch broke.
func watchKeysExits(t *testing.T, ns, release, resourceVersion string) func() (map[string]int32, error) {
	t.Helper()
	opts := brokerSelector(release)
	opts.ResourceVersion = resourceVersion
	w, err := kube.CoreV1().Pods(ns).Watch(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	exits := map[string]int32{}
	var broke error
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				mu.Lock()
				broke = fmt.Errorf("the watch of the broker pods in %s broke: %v", ns, apierrors.FromObject(ev.Object))
				mu.Unlock()
				return
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "keys" && cs.State.Terminated != nil {
					mu.Lock()
					exits[p.Name] = cs.State.Terminated.ExitCode
					mu.Unlock()
				}
			}
		}
	}()
	return func() (map[string]int32, error) {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(exits), broke
	}
}
