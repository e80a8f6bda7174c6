//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkScale: real Flux at sizes 6, 16, 32 and 64 (BENCH_SIZES), the view image mounted
// (nothing copied per pod), each next to its floor in the same run:
//   - up: helm install -> Flux counts every broker up; floor: a bare indexed Job of the same
//     size and its headless Service -> every pod Running and listed by the Service; Flux's own
//     bootstrap: `flux start --test-size=size` in one pod (flat, Fluxion) -> its initial
//     program runs, which it does once every broker is online;
//   - launch: `flux run -N size hostname` in the lead (no floor: nothing like it without Flux);
//   - resize: helm upgrade to half the size and back -> Flux counts size up; floor: the bare
//     Job's parallelism and completions patched to half and back -> size Running and listed;
//   - down: helm uninstall -> nothing left; floor: the bare Job deleted -> no pod left.
//
// Sizes run from small to large; every step starts in a new namespace once the one before is
// gone. `make bench-e2e` runs it once (BENCH_SCALE_TIME).
func BenchmarkScale(b *testing.B) {
	sizes := benchSizes(b, "BENCH_SIZES", "6,16,32,64")
	for _, size := range sizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			var floor, chart, alone scaleTimes
			for b.Loop() {
				floor = floor.plus(scaleFloor(b, size))
				alone = alone.plus(fluxBootstrap(b, size))
				chart = chart.plus(scaleChart(b, size, "", 0))
			}
			reportScale(b, size, floor, chart, alone)
		})
	}
}

// BenchmarkTopology: the same steps at size 64 (BENCH_TOPOLOGY_SIZE) with each overlay shape
// (BENCH_TOPOLOGIES): flat (every worker a child of the lead, Flux's default for broker.toml
// boot), k-ary trees and binomial; and, before the resize, throughputScript's many small jobs
// (BENCH_THROUGHPUT_JOBS each way).
func BenchmarkTopology(b *testing.B) {
	size := benchSizes(b, "BENCH_TOPOLOGY_SIZE", "64")[0]
	topologies := strings.Split(envOr("BENCH_TOPOLOGIES", "flat,kary:2,kary:8,binomial"), ",")
	jobs := throughputJobs(b)
	for _, topo := range topologies {
		b.Run("topology="+topo, func(b *testing.B) {
			var chart scaleTimes
			for b.Loop() {
				chart = chart.plus(scaleChart(b, size, topo, jobs))
			}
			n := float64(b.N)
			metric(b, chart.up.Seconds()/n, "s/up")
			metric(b, chart.launch.Seconds()/n, "s/launch")
			metric(b, chart.resize.Seconds()/n, "s/resize")
			for _, way := range throughputWays {
				metric(b, chart.rates[way]/n, "jobs/s-"+way)
			}
			fmt.Printf("topology %s at %d: up %.2f s, flux run -N %d %.2f s, %d jobs: --cc %.1f, bulksubmit %.1f, flux run %.1f jobs/s, resize %d->%d->%d %.2f s, uninstall %.2f s (mean of %d)\n",
				topo, size, chart.up.Seconds()/n, size, chart.launch.Seconds()/n, jobs, chart.rates["cc"]/n, chart.rates["bulksubmit"]/n, chart.rates["run"]/n,
				size, size/2, size, chart.resize.Seconds()/n, chart.down.Seconds()/n, b.N)
		})
	}
}

func benchSizes(b *testing.B, env, def string) []int {
	var sizes []int
	for _, f := range strings.Split(envOr(env, def), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			b.Fatalf("%s=%q: want sizes of 2 or more, separated by commas", env, os.Getenv(env))
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// scaleTimes: each step's time, and the CPU seconds of each part of the machine during the
// first (cpuMeter; none where the cluster's processes are not this machine's).
type scaleTimes struct {
	up, launch, resize, down time.Duration
	upCPU                    map[string]float64
	rates                    map[string]float64 // jobs/s by way (throughputScript), summed over runs
}

func (s scaleTimes) plus(o scaleTimes) scaleTimes {
	return scaleTimes{s.up + o.up, s.launch + o.launch, s.resize + o.resize, s.down + o.down,
		addSums(addSums(nil, s.upCPU), o.upCPU), addSums(addSums(nil, s.rates), o.rates)}
}

func reportScale(b *testing.B, size int, floor, chart, alone scaleTimes) {
	n := float64(b.N)
	row := func(what string, c, f time.Duration) string {
		if f == 0 {
			return fmt.Sprintf("%s %.2f s", what, c.Seconds()/n)
		}
		return fmt.Sprintf("%s %.2f s (floor %.2f, +%.2f)", what, c.Seconds()/n, f.Seconds()/n, (c-f).Seconds()/n)
	}
	metric(b, chart.up.Seconds()/n, "s/up")
	metric(b, floor.up.Seconds()/n, "s/up-floor")
	metric(b, alone.up.Seconds()/n, "s/up-flux-alone")
	metric(b, (chart.up-floor.up-alone.up).Seconds()/n, "s/up-rest")
	metric(b, chart.launch.Seconds()/n, "s/launch")
	metric(b, chart.resize.Seconds()/n, "s/resize")
	metric(b, floor.resize.Seconds()/n, "s/resize-floor")
	metric(b, chart.down.Seconds()/n, "s/down")
	metric(b, floor.down.Seconds()/n, "s/down-floor")
	fmt.Printf("size %d: %s, Flux's own bootstrap %.2f s, the rest %.2f s; %s; %s; %s (mean of %d)\n", size,
		row("install -> all up", chart.up, floor.up), alone.up.Seconds()/n, (chart.up-floor.up-alone.up).Seconds()/n, row(fmt.Sprintf("flux run -N %d", size), chart.launch, 0),
		row(fmt.Sprintf("resize %d -> %d -> %d", size, size/2, size), chart.resize, floor.resize),
		row("uninstall -> nothing left", chart.down, floor.down), b.N)
	if chart.upCPU == nil || floor.upCPU == nil {
		return
	}
	total := func(cpu map[string]float64) (sum float64) {
		for _, v := range cpu {
			sum += v
		}
		return sum / n
	}
	var parts []string
	for _, p := range cpuParts {
		metric(b, chart.upCPU[p]/n, "cpu-s/up-"+p)
		parts = append(parts, fmt.Sprintf("%s %.1f", p, chart.upCPU[p]/n))
	}
	metric(b, total(chart.upCPU), "cpu-s/up")
	metric(b, total(floor.upCPU), "cpu-s/up-floor")
	metric(b, alone.upCPU[cpuFlux]/n, "cpu-s/up-flux-alone")
	fmt.Printf("size %d: CPU seconds of install -> all up %.1f (%s), of the floor %.1f, of Flux's own bootstrap %.1f; %d cores here\n",
		size, total(chart.upCPU), strings.Join(parts, ", "), total(floor.upCPU), alone.upCPU[cpuFlux]/n, runtime.NumCPU())
}

// scaleFloor times the floor's three steps.
func scaleFloor(b *testing.B, size int) scaleTimes {
	var t scaleTimes
	ns := newNamespace(b, "scale-floor")
	ready := func(n int) {
		waitFloorReady(b, ns, "floor", n, 5*time.Minute)
	}
	cpu := startCPU(b)
	start := time.Now()
	createFloor(b, ns, "floor", size)
	ready(size)
	t.up = time.Since(start)
	t.upCPU = cpu.stop(b)

	start = time.Now()
	for _, n := range []int{size / 2, size} {
		patch := fmt.Sprintf(`{"spec":{"parallelism":%d,"completions":%d}}`, n, n)
		if _, err := kube.BatchV1().Jobs(ns).Patch(context.Background(), "floor", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		ready(n)
	}
	t.resize = time.Since(start)

	t.down = deleteFloor(b, ns, "floor", 5*time.Minute)
	deleteNamespace(b, ns)
	return t
}

// fluxBootstrap is how long flux start --test-size=size takes in one pod until its initial
// program runs (every broker online, Fluxion loaded), timed inside the pod, and the CPU time
// its processes have used by then (Flux's part).
func fluxBootstrap(b *testing.B, size int) scaleTimes {
	ns := newNamespace(b, "scale-alone")
	nodes := schedulableNodes(b)
	if len(nodes) == 0 {
		b.Fatal("no schedulable node for flux start")
	}
	// Every process of the pod so far, with the children each has reaped (fields 14-17 of
	// /proc/PID/stat), in clock ticks.
	out, err := runPodToEnd(b, ns, alonePod(b, nodes[0], size, `echo "up $(($(date +%s%N) - START))"; `+
		`echo "ticks $(cat /proc/[0-9]*/stat 2>/dev/null | awk '{ s += $14 + $15 + $16 + $17 } END { print s }')"`))
	if err != nil {
		b.Fatalf("flux start --test-size=%d: %v\n%s", size, err, out)
	}
	deleteNamespace(b, ns)
	var nanos, ticks int64
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "up "); ok {
			nanos, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		if v, ok := strings.CutPrefix(l, "ticks "); ok && err == nil {
			ticks, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if nanos <= 0 || ticks <= 0 || err != nil {
		b.Fatalf("flux start --test-size=%d printed no time to all up or CPU time: %v\n%s", size, err, out)
	}
	return scaleTimes{up: time.Duration(nanos), upCPU: map[string]float64{cpuFlux: float64(ticks) / clockTicks}}
}

// scaleChart times the chart's four steps, with a topology ("": the chart's default), and with
// jobs > 0 the jobs/s of throughputScript after the launch.
func scaleChart(b *testing.B, size int, topology string, jobs int) scaleTimes {
	var t scaleTimes
	ns := newNamespace(b, "scale")
	r := newRelease(b, ns, "flux-sample", helm4)
	maxSize := max(size, 16)
	args := []string{"--set", fmt.Sprintf("size=%d,maxSize=%d,flux.view.mode=image", size, maxSize)}
	switch topology {
	case "": // the chart's default
	case "flat":
		args = append(args, "--set", "flux.topology=")
	default:
		args = append(args, "--set", "flux.topology="+topology)
	}
	// Ready pods first, by the API: looking at Flux every 100 ms is a kubectl exec each time,
	// whose cost to the kubelets and containerd would be counted as the chart's.
	up := func(n int) map[int]corev1.Pod {
		return waitReadyThenFluxUp(b, ns, r.name, n, maxSize, 10*time.Minute)
	}
	cpu := startCPU(b)
	start := time.Now()
	r.install(args...)
	pods := up(size)
	t.up = time.Since(start)
	t.upCPU = cpu.stop(b)

	start = time.Now()
	out, stderr, err := fluxIn(ns, pods[0].Name, "run", "-N", strconv.Itoa(size), "hostname")
	t.launch = time.Since(start)
	if err != nil || len(strings.Fields(out)) != size {
		b.Fatalf("flux run -N %d hostname: %v, %d lines\n%s", size, err, len(strings.Fields(out)), stderr)
	}
	if jobs > 0 {
		out, stderr, err := chartThroughput(ns, pods[0].Name, jobs)
		if err != nil {
			b.Fatalf("%d jobs in the lead: %v\n%s%s", jobs, err, out, stderr)
		}
		b.Logf("size %d, topology %q, in the lead:\n%s", size, topology, out)
		t.rates = parseRates(b, out, jobs, throughputWays...)
	}

	start = time.Now()
	for _, n := range []int{size / 2, size} {
		if _, err := r.upgrade("--reuse-values", "--set", fmt.Sprintf("size=%d", n)); err != nil {
			b.Fatal(err)
		}
		up(n)
	}
	t.resize = time.Since(start)

	start = time.Now()
	r.uninstall()
	eventuallyFast(b, 5*time.Minute, "nothing left of "+r.name, func() (bool, string) {
		left, err := leftovers(ns, r.name)
		return err == nil && len(left) == 0, fmt.Sprintf("still there: %v %v", left, err)
	})
	t.down = time.Since(start)
	deleteNamespace(b, ns)
	return t
}
