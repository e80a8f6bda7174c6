//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/kubectl/pkg/util/podutils"
)

// The waits below follow objects with one list and then a watch, where a poll lists every
// object each time: at 64 pods, lists every 100 ms cost the API server more CPU than the
// pods' own status updates, and the benchmarks count the API server's CPU as the pods'.

// watchUntil waits until cond holds of the objects lw lists (a T each), checking it at the list
// and at every change after it (obj names the type); it fails t with cond's last word after within.
func watchUntil[T runtime.Object](t testing.TB, within time.Duration, what string, lw cache.ListerWatcher, obj T, cond func([]T) (bool, string)) []T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var store cache.Store
	var got []T
	why := "nothing listed yet"
	check := func() (bool, error) {
		got = got[:0]
		for _, o := range store.List() {
			got = append(got, o.(T))
		}
		var ok bool
		ok, why = cond(got)
		return ok, nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, obj,
		func(s cache.Store) (bool, error) { store = s; return check() },
		func(watch.Event) (bool, error) { return check() })
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) {
		t.Fatalf("%s: not within %v: %s", what, within, why)
	}
	if err != nil {
		t.Fatalf("%s: %v (%s)", what, err, why)
	}
	return got
}

// selected lists and watches with a client's List and Watch what selector selects.
func selected[L runtime.Object](selector string, list func(context.Context, metav1.ListOptions) (L, error), watchWith func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return watchWith(ctx, o)
		},
	}
}

// watchPods waits until cond holds of the pods of ns that selector selects.
func watchPods(t testing.TB, ns, selector string, within time.Duration, what string, cond func([]*corev1.Pod) (bool, string)) []*corev1.Pod {
	t.Helper()
	pods := kube.CoreV1().Pods(ns)
	return watchUntil(t, within, what, selected(selector, pods.List, pods.Watch), &corev1.Pod{}, cond)
}

// waitPodsReady waits until n pods of ns that selector selects run and are Ready.
func waitPodsReady(t testing.TB, ns, selector string, n int, within time.Duration) {
	t.Helper()
	watchPods(t, ns, selector, within, fmt.Sprintf("%d pods %s Ready", n, selector), func(pods []*corev1.Pod) (bool, string) {
		ready := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && podutils.IsPodReady(p) {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%d of %d pods Ready", ready, len(pods))
	})
}

// waitListed waits until the EndpointSlices of the Service name list n addresses.
func waitListed(t testing.TB, ns, name string, n int, within time.Duration) {
	t.Helper()
	slices := kube.DiscoveryV1().EndpointSlices(ns)
	selector := "kubernetes.io/service-name=" + name
	watchUntil(t, within, fmt.Sprintf("the Service %s listing %d addresses", name, n), selected(selector, slices.List, slices.Watch), &discoveryv1.EndpointSlice{}, func(all []*discoveryv1.EndpointSlice) (bool, string) {
		listed := 0
		for _, s := range all {
			for _, e := range s.Endpoints {
				if len(e.Addresses) > 0 {
					listed++
				}
			}
		}
		return listed == n, fmt.Sprintf("%d listed", listed)
	})
}

// waitFloorReady waits until the floor Job name's n pods run and its Service lists them.
func waitFloorReady(t testing.TB, ns, name string, n int, within time.Duration) {
	t.Helper()
	watchPods(t, ns, "job-name="+name, within, fmt.Sprintf("%d pods of %s running", n, name), func(pods []*corev1.Pod) (bool, string) {
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n, fmt.Sprintf("%d of %d running", running, len(pods))
	})
	waitListed(t, ns, name, n, within)
}
