//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkKwok: the control plane's side of a MiniCluster of 1,000 brokers (BENCH_KWOK_SIZES,
// comma-separated, for more sizes) on simulated nodes (`make kwok-up`), each step next to its
// floor measured in the same run: a bare indexed Job of the same size with its headless Service
// (publishNotReadyAddresses), through the same steps, done the cheapest way (the Job patched,
// deleted), in turns (the floor first in odd runs, the chart in even ones). The steps: install
// until every pod runs and the EndpointSlices list every hostname; resize to half until exactly
// that many run and are listed; back to full; uninstall until nothing is left (pods and
// EndpointSlices included). Each run prints its figures; the end a table of the means.
func BenchmarkKwok(b *testing.B) {
	for _, s := range strings.Split(envOr("BENCH_KWOK_SIZES", "1000"), ",") {
		size, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || size < 2 {
			b.Fatalf("BENCH_KWOK_SIZES=%q: give sizes >= 2, comma-separated", s)
		}
		b.Run(strconv.Itoa(size), func(b *testing.B) { benchKwok(b, size) })
	}
}

// scaleSteps are the times of one run's steps, and the pod PATCHes of its uninstall: the Job
// controller's removals of the job-tracking finalizer, at its client's 20 calls a second, and
// of those the ones that found the pod already gone (its cache behind).
type scaleSteps struct {
	install, half, full, uninstall time.Duration
	patches, patchesGone           float64
}

func (s scaleSteps) plus(o scaleSteps) scaleSteps {
	return scaleSteps{s.install + o.install, s.half + o.half, s.full + o.full, s.uninstall + o.uninstall,
		s.patches + o.patches, s.patchesGone + o.patchesGone}
}

func (s scaleSteps) list() []time.Duration {
	return []time.Duration{s.install, s.half, s.full, s.uninstall}
}

func benchKwok(b *testing.B, size int) {
	requireCapacity(b, size)
	values := kwokValues(b)
	within := time.Duration(size/5+120) * time.Second // an uninstall removes about 10 pods a second
	var floor, chart scaleSteps
	var helmReturned time.Duration
	runs := 0
	for b.Loop() {
		runs++
		// Alternating which goes first: a step's time depends on what the control plane did
		// just before it (at 1,000, one run's uninstall took 57 s after the other's, 168 s while
		// another namespace of 1,000 pods was still being deleted).
		var f, c scaleSteps
		var returned time.Duration
		if runs%2 == 1 {
			f = floorSteps(b, size, within)
			c, returned = chartSteps(b, size, within, values)
		} else {
			c, returned = chartSteps(b, size, within, values)
			f = floorSteps(b, size, within)
		}
		fmt.Printf("%s: run %d: floor %s; chart %s; helm install returned after %.2f\n", b.Name(), runs, f, c, returned.Seconds())
		floor, chart, helmReturned = floor.plus(f), chart.plus(c), helmReturned+returned
	}
	mean := func(d time.Duration) float64 { return d.Seconds() / float64(runs) }
	names := []string{"install → all Running and listed", fmt.Sprintf("resize %d → %d", size, size/2), fmt.Sprintf("resize %d → %d", size/2, size), "uninstall → nothing left"}
	fmt.Printf("%s: means of %d runs, seconds\n| step | floor | chart | chart − floor |\n|---|---|---|---|\n", b.Name(), runs)
	for i, name := range names {
		fl, ch := mean(floor.list()[i]), mean(chart.list()[i])
		fmt.Printf("| %s | %.1f | %.1f | %+.1f |\n", name, fl, ch, ch-fl)
	}
	fmt.Printf("| (of which `helm install` returns) | | %.2f | |\n", mean(helmReturned))
	fmt.Printf("| (the uninstall's pod PATCHes; of them on pods already gone) | %.0f; %.0f | %.0f; %.0f | |\n",
		floor.patches/float64(runs), floor.patchesGone/float64(runs), chart.patches/float64(runs), chart.patchesGone/float64(runs))
	units := []string{"install", "resize-half", "resize-full", "uninstall"}
	for i, u := range units {
		metric(b, mean(floor.list()[i]), "s/floor-"+u)
		metric(b, mean(chart.list()[i]), "s/chart-"+u)
	}
}

func (s scaleSteps) String() string {
	return fmt.Sprintf("install %.1f, half %.1f, full %.1f, uninstall %.1f (pod PATCHes %.0f, %.0f on pods gone)",
		s.install.Seconds(), s.half.Seconds(), s.full.Seconds(), s.uninstall.Seconds(), s.patches, s.patchesGone)
}

// countPodPatches starts counting pod PATCHes (not of their status); the function it returns
// gives those since: the ones that found the pod, and the ones that found it gone (404).
func countPodPatches(b *testing.B) func() (found, gone float64) {
	found0, gone0 := podPatches(b)
	return func() (found, gone float64) {
		found, gone = podPatches(b)
		return found - found0, gone - gone0
	}
}

// podPatches reads the API server's counts of pod PATCHes (not of their status) so far.
func podPatches(b *testing.B) (found, gone float64) {
	counts := apiRequests(b)
	return counts["PATCH pods 200"], counts["PATCH pods 404"]
}

// apiRequests reads the API server's counts of requests so far, by "VERB resource[/subresource]
// code" (apiserver_request_total summed over its other labels).
func apiRequests(b *testing.B) map[string]float64 {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("the API server's metrics: %v", err)
	}
	counts := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			b.Fatalf("the API server's metrics: %q: %v", line, err)
		}
		resource := promLabel(labels, "resource")
		if sub := promLabel(labels, "subresource"); sub != "" {
			resource += "/" + sub
		}
		counts[promLabel(labels, "verb")+" "+resource+" "+promLabel(labels, "code")] += n
	}
	return counts
}

// promLabel is one label's value in a metric's label list (values hold no quotes here).
func promLabel(labels, name string) string {
	_, rest, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	value, _, _ := strings.Cut(rest, `"`)
	return value
}

// floorSteps takes a bare indexed Job and its headless Service through the steps.
func floorSteps(b *testing.B, size int, within time.Duration) scaleSteps {
	ctx := context.Background()
	ns := newNamespace(b, "kwok-floor")
	v := watchNamespace(b, ns)
	const name = "floor"
	var s scaleSteps
	start := time.Now()
	createFloorService(b, ns, name)
	job := indexedJob(name, size, corev1.PodSpec{
		Subdomain:    name,
		NodeSelector: map[string]string{kwokLabel: "true"},
		Tolerations:  []corev1.Toleration{kwokToleration},
		Containers:   []corev1.Container{{Name: "floor", Image: testsImage}},
	})
	if _, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	eventuallyFast(b, within, "floor: all running and listed", func() (bool, string) { return v.ready(name, name, size) })
	s.install = time.Since(start)
	for i, n := range []int{size / 2, size} {
		start = time.Now()
		patch := fmt.Sprintf(`{"spec":{"completions":%d,"parallelism":%d}}`, n, n)
		if _, err := kube.BatchV1().Jobs(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		eventuallyFast(b, within, fmt.Sprintf("floor: exactly %d running and listed", n), func() (bool, string) { return v.ready(name, name, n) })
		if i == 0 {
			s.half = time.Since(start)
		} else {
			s.full = time.Since(start)
		}
	}
	patchesSince := countPodPatches(b)
	start = time.Now()
	deleteJobAndService(b, ns, name)
	eventuallyFast(b, within, "floor: nothing left", func() (bool, string) { return v.gone(name, name) })
	s.uninstall = time.Since(start)
	s.patches, s.patchesGone = patchesSince()
	deleteNamespace(b, ns)
	return s
}

// chartSteps takes a MiniCluster through the steps with helm.
func chartSteps(b *testing.B, size int, within time.Duration, values string) (scaleSteps, time.Duration) {
	ns := newNamespace(b, "kwok-chart")
	v := watchNamespace(b, ns)
	r := newRelease(b, ns, "flux-sample", helm4)
	var s scaleSteps
	start := time.Now()
	r.install("-f", values, "--set", fmt.Sprintf("size=%d", size))
	returned := time.Since(start)
	eventuallyFast(b, within, "chart: all running and listed", func() (bool, string) { return v.ready(r.name, r.name, size) })
	s.install = time.Since(start)
	for i, n := range []int{size / 2, size} {
		start = time.Now()
		if _, err := r.upgrade("--set", fmt.Sprintf("size=%d", n)); err != nil {
			b.Fatal(err)
		}
		eventuallyFast(b, within, fmt.Sprintf("chart: exactly %d running and listed", n), func() (bool, string) { return v.ready(r.name, r.name, n) })
		if i == 0 {
			s.half = time.Since(start)
		} else {
			s.full = time.Since(start)
		}
	}
	patchesSince := countPodPatches(b)
	start = time.Now()
	r.uninstall()
	eventuallyFast(b, within, "chart: nothing left", func() (bool, string) {
		if ok, why := v.gone(r.name, r.name); !ok {
			return false, why
		}
		left, err := leftovers(ns, r.name)
		return err == nil && len(left) == 0, fmt.Sprintf("left: %v %v", left, err)
	})
	s.uninstall = time.Since(start)
	s.patches, s.patchesGone = patchesSince()
	deleteNamespace(b, ns)
	return s, returned
}
