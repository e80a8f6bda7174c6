//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkAutoscale: a job needing 4 brokers submitted to an autoscaled MiniCluster of 1, from
// its submit until it runs (Flux's own t_submit and t_run), next to the manual route in the same
// run (helm upgrade --set size=4, flux-keygen kube wait, then the submit: from the upgrade until
// the job runs) and to the floor (a bare indexed Job of pods that only wait, grown from 1 to 4
// pods, until the 4 run and the Service lists them). Then how long past autoscale.idleSeconds
// after the job ended the MiniCluster is back at 1 broker; and the lead's CPU for one scrape of
// the metrics (the autoscaler and its Flux helper, less what they use unscraped in as long).
func BenchmarkAutoscale(b *testing.B) {
	const idle = 10
	ns := newNamespace(b, "bench-autoscale")
	auto := newRelease(b, ns, "auto", helm4)
	auto.install(append(append([]string{}, autoscaled...), "--set", "maxSize=4", "--set", fmt.Sprintf("autoscale.idleSeconds=%d", idle))...)
	manual := newRelease(b, ns, "manual", helm4)
	manual.install("--set", "size=1", "--set", "maxSize=4", "--set", "flux.queuePolicy=easy")
	autoLead := waitFluxUp(b, ns, auto.name, 1, 4, wiringTimeout)[0].Name
	manualLead := waitFluxUp(b, ns, manual.name, 1, 4, wiringTimeout)[0].Name
	var floor, scaled, byHand, shrink time.Duration
	for i := 0; b.Loop(); i++ {
		// The floor: the same growth of a Job, with nothing in its pods.
		name := fmt.Sprintf("floor-%d", i)
		createFloor(b, ns, name, 1)
		waitFloorReady(b, ns, name, 1, 3*time.Minute)
		start := time.Now()
		resize(b, ns, name, 4)
		waitFloorReady(b, ns, name, 4, 3*time.Minute)
		floor += time.Since(start)
		deleteJobAndService(b, ns, name)

		// Autoscaled: submit, and Flux says when the job started.
		id := submitIn(b, ns, autoLead, "-N4", "hostname")
		submitted, ran := jobTimes(b, ns, autoLead, id)
		scaled += ran.Sub(submitted)
		ended := waitJobEnded(b, ns, autoLead, id)
		waitJobSize(b, ns, auto.name, 1, time.Duration(idle)*time.Second+3*time.Minute)
		shrink += time.Since(ended) - time.Duration(idle)*time.Second
		waitFluxUp(b, ns, auto.name, 1, 4, 3*time.Minute)

		// By hand, as a person at a terminal does it.
		start = time.Now()
		if _, err := manual.upgrade("--set", "size=4"); err != nil {
			b.Fatal(err)
		}
		wait := exec.Command(bin("flux-keygen"), "kube", "wait", "--namespace", ns, "--release", manual.name, "--timeout", "5m")
		wait.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		if out, err := wait.CombinedOutput(); err != nil {
			b.Fatalf("flux-keygen kube wait: %v\n%s", err, out)
		}
		id = submitIn(b, ns, manualLead, "-N4", "hostname")
		_, ran = jobTimes(b, ns, manualLead, id)
		byHand += ran.Sub(start)
		waitJobEnded(b, ns, manualLead, id)
		if _, err := manual.upgrade("--set", "size=1"); err != nil {
			b.Fatal(err)
		}
		waitFluxUp(b, ns, manual.name, 1, 4, 3*time.Minute)
	}
	report(b, "s/floor-grow", floor)
	report(b, "s/autoscaled-start", scaled)
	report(b, "s/manual-start", byHand)
	report(b, "s/shrink-past-idle", shrink)

	b.Logf("floor %.2f s, autoscaled %.2f s, by hand %.2f s, shrink %.2f s past idle",
		floor.Seconds()/float64(b.N), scaled.Seconds()/float64(b.N), byHand.Seconds()/float64(b.N), shrink.Seconds()/float64(b.N))
}

// BenchmarkMetrics: the lead's CPU for one scrape of the metrics of a MiniCluster of
// BENCH_METRICS_SIZE brokers (64), over 200 scrapes, less what the autoscaler and its Flux helper
// use unscraped in as long (that figure too, per second).
func BenchmarkMetrics(b *testing.B) {
	size, err := strconv.Atoi(envOr("BENCH_METRICS_SIZE", "64"))
	if err != nil || size < 1 {
		b.Fatalf("BENCH_METRICS_SIZE=%q: give a number of brokers", os.Getenv("BENCH_METRICS_SIZE"))
	}
	ns := newNamespace(b, "bench-metrics")
	r := newRelease(b, ns, "flux-sample", helm4)
	r.install("--set", fmt.Sprintf("size=%d", size), "--set", fmt.Sprintf("maxSize=%d", size), "--set", "metrics.enabled=true")
	lead := waitFluxUp(b, ns, r.name, size, size, sizedWait(size))[0].Name
	base := forwardService(b, ns, r.name+"-metrics", 8052)
	const scrapes = 200
	var used, unscraped float64
	for b.Loop() {
		quiet := leadAutoscaleCPU(b, ns, lead)
		start := time.Now()
		time.Sleep(10 * time.Second)
		idle := (leadAutoscaleCPU(b, ns, lead) - quiet) / time.Since(start).Seconds()
		before := leadAutoscaleCPU(b, ns, lead)
		start = time.Now()
		for range scrapes {
			resp, err := http.Get(base + "/metrics")
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("scraping the metrics: %v", err)
			}
			resp.Body.Close()
		}
		used += (leadAutoscaleCPU(b, ns, lead) - before - idle*time.Since(start).Seconds()) / scrapes
		unscraped += idle
	}
	metric(b, used/float64(b.N)*1000, "ms-cpu/scrape")
	metric(b, unscraped/float64(b.N)*1000, "ms-cpu/s-unscraped")
	b.Logf("%d brokers: %.3f ms of the lead's CPU a scrape, %.1f ms a second unscraped", size, used/float64(b.N)*1000, unscraped/float64(b.N)*1000)
}

// resize sets a Job's parallelism and completions.
func resize(b *testing.B, ns, name string, size int) {
	patch := fmt.Sprintf(`{"spec":{"parallelism":%d,"completions":%d}}`, size, size)
	if _, err := kube.BatchV1().Jobs(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
}

// submitIn submits a job with flux submit in pod and returns its id.
func submitIn(b *testing.B, ns, pod string, args ...string) string {
	out, stderr, err := fluxIn(ns, pod, append([]string{"submit"}, args...)...)
	if err != nil {
		b.Fatalf("flux submit %v: %v %s", args, err, stderr)
	}
	return strings.TrimSpace(out)
}

// jobTimes waits until the job has started and returns Flux's t_submit and t_run.
func jobTimes(b *testing.B, ns, pod, id string) (submitted, ran time.Time) {
	if _, stderr, err := execInWithin(5*time.Minute, ns, pod, "flux", "flux", "job", "wait-event", "-t", "300", id, "start"); err != nil {
		b.Fatalf("job %s did not start: %v %s", id, err, stderr)
	}
	out, stderr, err := fluxIn(ns, pod, "jobs", "-n", "-o", "{t_submit} {t_run}", id)
	f := strings.Fields(out)
	if err != nil || len(f) != 2 {
		b.Fatalf("flux jobs %s: %q %v %s", id, out, err, stderr)
	}
	return unixTime(b, f[0]), unixTime(b, f[1])
}

// waitJobEnded waits until the job is inactive and returns when it ended (Flux's t_inactive).
func waitJobEnded(b *testing.B, ns, pod, id string) time.Time {
	if _, stderr, err := execInWithin(5*time.Minute, ns, pod, "flux", "flux", "job", "wait-event", "-t", "300", id, "clean"); err != nil {
		b.Fatalf("job %s did not end: %v %s", id, err, stderr)
	}
	out, _, err := fluxIn(ns, pod, "jobs", "-n", "-o", "{t_inactive}", id)
	if err != nil {
		b.Fatal(err)
	}
	return unixTime(b, strings.TrimSpace(out))
}

func unixTime(b *testing.B, s string) time.Time {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		b.Fatalf("%q is not a time of Flux", s)
	}
	return time.Unix(0, int64(f*1e9))
}

// leadAutoscaleCPU is the CPU seconds used so far by the lead's minicluster-autoscale and its
// Flux helper (autoscale-state.py).
func leadAutoscaleCPU(b *testing.B, ns, pod string) float64 {
	script := `t=0; for p in /proc/[0-9]*; do c=$(tr '\0' ' ' < $p/cmdline 2>/dev/null) || continue
case $c in *minicluster-autoscale*|*autoscale-state.py*) set -- $(cut -d' ' -f14,15 $p/stat); t=$((t + $1 + $2));; esac; done; echo $t $(getconf CLK_TCK)`
	out, stderr, err := execIn(ns, pod, "flux", "sh", "-c", script)
	f := strings.Fields(out)
	if err != nil || len(f) != 2 {
		b.Fatalf("the autoscaler's CPU in %s: %q %v %s", pod, out, err, stderr)
	}
	ticks, err1 := strconv.ParseFloat(f[0], 64)
	hz, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || ticks <= 0 || hz <= 0 {
		b.Fatalf("the autoscaler's CPU in %s: %q", pod, out)
	}
	return ticks / hz
}
