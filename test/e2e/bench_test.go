//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The timings `make bench-e2e` reports, each iteration in a new namespace, with real Flux:
//   - BenchmarkFloor: a bare indexed Job of 6 busybox pods and its headless Service
//     (publishNotReadyAddresses), from create until every pod runs and the Service's
//     EndpointSlices list every pod: what any MiniCluster sits on;
//   - BenchmarkMiniCluster (Helm 4, or the helm CLI BENCH_HELM names), at size 6:
//     ephemeral install of `flux run -N 6 hostname` to the lead pod Succeeded; interactive
//     install to Flux counting 6 brokers online (the lead's "quorum-full" line); helm upgrade
//     2 -> 4 to both new brokers online (their "rc1-success" line: they joined broker.online);
//     helm uninstall of the running instance to nothing left, next to the uninstall floor (the
//     bare Job deleted as Helm deletes one, its pods ending on SIGTERM, until they are gone).
// Each step starts once the namespace of the one before is gone, pods and volumes with it: a
// step measures the MiniCluster, not the clean-up of the step before (six views deleted at once
// slowed the next step's copy by seconds on this node's disk).
// Log times are the container runtime's timestamps, pod phases come from a watch. Each run
// prints its figures and when the lead logged each step of Flux's start (and stop). With
// BENCH_RESULTS the figures also go to the report (results_test.go).

const benchSize = 6

// resizeFlag: the benchmarks resize without Helm's client-side schema check, which changes
// nothing the API server decides (TestClientSideCheckChangesNothing; docs/operations.md#resize).
const resizeFlag = "--disable-openapi-validation"

func BenchmarkFloor(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		ns := newNamespace(b, "floor")
		start := time.Now()
		createFloor(b, ns, "floor", benchSize)
		waitFloorReady(b, ns, "floor", benchSize, 3*time.Minute)
		total += time.Since(start)
	}
	report(b, "s/floor", total)
}

// runningPods counts the pods of ns that selector selects and that run.
func runningPods(ns, selector string) (int, error) {
	pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running, nil
}

func BenchmarkMiniCluster(b *testing.B) {
	benchHelm := envOr("BENCH_HELM", helm4)
	// BENCH_SET adds chart values, e.g. flux.view.enabled=false,image=<the flux image>.
	set := func(values string) []string {
		if extra := os.Getenv("BENCH_SET"); extra != "" {
			values += "," + extra
		}
		return []string{"--set", values}
	}
	var runs []runTimes
	// Untimed: the first install pulls the images; the timings are of installs that find them.
	warmUp(b, benchHelm, append(set("size=2"), "--set-string", "command=flux run -N 2 true")...)
	for b.Loop() {
		// The floor in the same run, next to what sits on it.
		ns := newNamespace(b, "floor")
		start := time.Now()
		createFloor(b, ns, "floor", benchSize)
		waitFloorReady(b, ns, "floor", benchSize, 3*time.Minute)
		var run runTimes
		run.floor = time.Since(start)
		// The uninstall floor: the bare Job deleted as Helm deletes one, until its pods are gone.
		run.floorUninstall = deleteFloor(b, ns, "floor", 2*time.Minute)
		// Each step starts on a quiet node: what the one before left (pods, their volumes) is gone.
		deleteNamespace(b, ns)

		ns = newNamespace(b, "bench-eph")
		r := newRelease(b, ns, "flux-sample", benchHelm)
		start = time.Now()
		r.install(append(set(fmt.Sprintf("size=%d", benchSize)), "--set-string", fmt.Sprintf("command=flux run -N %d hostname", benchSize))...)
		run.helmReturned = time.Since(start)
		var lead string
		eventuallyFast(b, 3*time.Minute, "lead Succeeded", func() (bool, string) {
			pods, _, err := brokerPods(ns, r.name)
			if err != nil {
				return false, err.Error()
			}
			lead = pods[0].Name
			return pods[0].Status.Phase == corev1.PodSucceeded, "lead " + string(pods[0].Status.Phase)
		})
		run.ephemeral = time.Since(start)
		fmt.Printf("%s: ephemeral, s after helm install: %s; lead Succeeded %.2f\n", b.Name(),
			phases(ns, lead, start, "lead broker:", "rc1-success", "quorum-full", "rc2-success", "cleanup-success", "children-complete", "builtins-done"), run.ephemeral.Seconds())
		deleteNamespace(b, ns)

		ns = newNamespace(b, "bench")
		r = newRelease(b, ns, "flux-sample", benchHelm)
		start = time.Now()
		r.install(set(fmt.Sprintf("size=%d", benchSize))...)
		pods := waitFluxUp(b, ns, r.name, benchSize, 16, wiringTimeout)
		run.interactive = logTimeOf(b, ns, pods[0].Name, "quorum-full: quorum->run").Sub(start)
		fmt.Printf("%s: interactive, s after helm install: %s; last worker: %s\n", b.Name(),
			phases(ns, pods[0].Name, start, "lead broker:", "rc1-success", "quorum-full"), lastWorker(ns, pods, start))
		r.uninstall()
		waitNothingLeft(b, ns, r.name, 2*time.Minute)

		r.install(set("size=2")...)
		waitFluxUp(b, ns, r.name, 2, 16, wiringTimeout)
		start = time.Now()
		if _, err := r.upgrade(resizeFlag, "--set", "size=4"); err != nil {
			b.Fatal(err)
		}
		pods = waitFluxUp(b, ns, r.name, 4, 16, wiringTimeout)
		last := maxTime(logTimeOf(b, ns, pods[2].Name, "rc1-success: init->quorum"), logTimeOf(b, ns, pods[3].Name, "rc1-success: init->quorum"))
		run.resize = last.Sub(start)

		start = time.Now()
		r.uninstall()
		var brokersGone time.Duration
		var at2s []string
		var lingering string // what the broker pods left after 5 s were doing
		looked := false
		eventuallyFast(b, 2*time.Minute, "nothing left", func() (bool, string) {
			if _, n, err := brokerPods(ns, r.name); err == nil && n == 0 && brokersGone == 0 {
				brokersGone = time.Since(start)
			}
			if !looked && time.Since(start) > 5*time.Second {
				lingering, looked = lingeringPods(ns, r.name), true
			}
			left, err := leftovers(ns, r.name)
			if at2s == nil && time.Since(start) > 2*time.Second {
				at2s = append(left, "")
			}
			if err == nil && len(left) == 0 && brokersGone == 0 { // both went between two lists
				brokersGone = time.Since(start)
			}
			return err == nil && len(left) == 0, fmt.Sprintf("%v %v", left, err)
		})
		run.uninstall, run.brokersStopped = time.Since(start), brokersGone
		// Each run, not only the mean: an uninstall that lingers shows what was left.
		fmt.Printf("%s: uninstall: broker pods gone after %v, nothing left after %v; left after 2 s: %v\n%s",
			b.Name(), brokersGone.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), at2s, lingering)
		deleteNamespace(b, ns)
		runs = append(runs, run)
		fmt.Printf("%s: run %d: %s\n", b.Name(), len(runs), run)
	}
	var total runTimes
	for _, run := range runs {
		total = total.plus(run)
	}
	report(b, "s/floor", total.floor)
	report(b, "s/floor-uninstall", total.floorUninstall)
	report(b, "s/ephemeral-install-to-lead-succeeded", total.ephemeral)
	report(b, "s/helm-install-returned", total.helmReturned)
	report(b, "s/interactive-install-to-all-up", total.interactive)
	report(b, "s/resize-2-to-4-up", total.resize)
	report(b, "s/uninstall-running-to-brokers-gone", total.brokersStopped)
	report(b, "s/uninstall-running-to-nothing-left", total.uninstall)
}

// runTimes is one run of BenchmarkMiniCluster.
type runTimes struct {
	floor, floorUninstall, helmReturned, ephemeral, interactive, resize, brokersStopped, uninstall time.Duration
}

func (r runTimes) plus(o runTimes) runTimes {
	return runTimes{r.floor + o.floor, r.floorUninstall + o.floorUninstall, r.helmReturned + o.helmReturned,
		r.ephemeral + o.ephemeral, r.interactive + o.interactive, r.resize + o.resize,
		r.brokersStopped + o.brokersStopped, r.uninstall + o.uninstall}
}

func (r runTimes) String() string {
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	return fmt.Sprintf("floor %s, ephemeral %s (+%s), interactive %s (+%s), resize %s, uninstall %s (floor %s)",
		s(r.floor), s(r.ephemeral), s(r.ephemeral-r.floor), s(r.interactive), s(r.interactive-r.floor),
		s(r.resize), s(r.uninstall), s(r.floorUninstall))
}

// eventuallyFast polls every 20 ms: for timings.
func eventuallyFast(b testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	b.Helper()
	poll(b, within, 20*time.Millisecond, what, cond)
}

// logTimeOf is the runtime's timestamp of the first line of the flux container's log that has s.
func logTimeOf(b testing.TB, ns, pod, s string) time.Time {
	b.Helper()
	at, err := markTimes(ns, pod, s)
	if err != nil || at[0].IsZero() {
		log, _ := podLogs(ns, pod, "flux", 0)
		b.Fatalf("pod %s logged no line with %q:\n%s", pod, s, log)
	}
	return at[0]
}

func report(b *testing.B, unit string, total time.Duration) {
	avg := total.Seconds() / float64(b.N)
	metric(b, avg, unit)
	fmt.Printf("%s: %s %.2f (mean of %d)\n", b.Name(), unit, avg, b.N)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// phases gives when the first line of the pod's broker log with each mark was written, in
// seconds after start: where the time of a step went.
func phases(ns, pod string, start time.Time, marks ...string) string {
	at, err := markTimes(ns, pod, marks...)
	if err != nil {
		return err.Error()
	}
	var out []string
	for k, m := range marks {
		if !at[k].IsZero() {
			out = append(out, fmt.Sprintf("%s %.2f", strings.TrimSuffix(m, ":"), at[k].Sub(start).Seconds()))
		}
	}
	return strings.Join(out, ", ")
}

// lastWorker gives when the last of the workers' brokers started, joined its parent and ended
// its rc1, in seconds after start.
func lastWorker(ns string, pods map[int]corev1.Pod, start time.Time) string {
	marks := []string{"builtins-success", "parent-ready", "rc1-success"}
	last := make([]time.Time, len(marks))
	for i := 1; i < len(pods); i++ {
		at, err := markTimes(ns, pods[i].Name, marks...)
		if err != nil {
			continue // a log that cannot be read leaves its marks out
		}
		for k := range marks {
			if at[k].After(last[k]) {
				last[k] = at[k]
			}
		}
	}
	var out []string
	for k, m := range marks {
		out = append(out, fmt.Sprintf("%s %.2f", m, last[k].Sub(start).Seconds()))
	}
	return strings.Join(out, ", ")
}

// markTimes reads the pod's broker log once and gives, for each mark, the runtime's timestamp of
// the first line containing it (zero where none does).
func markTimes(ns, pod string, marks ...string) ([]time.Time, error) {
	lines, err := timedLogs(ns, pod, "flux")
	if err != nil {
		return nil, err
	}
	at := make([]time.Time, len(marks))
	for k, m := range marks {
		for _, l := range lines {
			if strings.Contains(l.Text, m) {
				at[k] = l.At
				break
			}
		}
	}
	return at, nil
}

// createFloorService creates the floor's headless Service, as the chart's: it publishes every
// pod of the Job name, ready or not.
func createFloorService(b *testing.B, ns, name string) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Selector: map[string]string{"job-name": name}},
	}
	if _, err := kube.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// createFloor creates a headless Service and an indexed Job of pods that only wait.
func createFloor(b *testing.B, ns, name string, size int) {
	ctx := context.Background()
	createFloorService(b, ns, name)
	job := indexedJob(name, size, corev1.PodSpec{
		Subdomain:                     name,
		TerminationGracePeriodSeconds: ptr.To(int64(1)),
		Containers: []corev1.Container{{
			Name: "floor", Image: testsImage, ImagePullPolicy: corev1.PullIfNotPresent,
			// Ends on SIGTERM, as a broker does: the uninstall floor.
			Command: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
		}},
	})
	if _, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// deleteFloor deletes the floor's Job as Helm deletes one (background propagation) and returns
// how long until no pod is left in ns.
func deleteFloor(b *testing.B, ns, name string, within time.Duration) time.Duration {
	start := time.Now()
	if err := kube.BatchV1().Jobs(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		b.Fatal(err)
	}
	eventuallyFast(b, within, "no floor pod left", func() (bool, string) {
		pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, fmt.Sprintf("%d pods left (%v)", len(pods.Items), err)
	})
	return time.Since(start)
}

// deleteJobAndService deletes a floor's Job and its Service as helm uninstall deletes a
// release's (background propagation).
func deleteJobAndService(b *testing.B, ns, name string) {
	ctx := context.Background()
	if err := kube.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		b.Fatal(err)
	}
	if err := kube.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
}

// warmUp runs one ephemeral MiniCluster to its end, untimed, so that the timed runs find the
// images pulled.
func warmUp(b *testing.B, helm string, args ...string) {
	warm := newRelease(b, newNamespace(b, "bench-warm"), "flux-sample", helm)
	warm.install(args...)
	waitJobComplete(b, warm, 5*time.Minute)
	warm.uninstall()
	deleteNamespace(b, warm.ns)
}

// indexedJob is an indexed Job of size pods like spec, which never restart.
func indexedJob(name string, size int, spec corev1.PodSpec) *batchv1.Job {
	spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To(int32(size)),
			Parallelism:    ptr.To(int32(size)),
			Template:       corev1.PodTemplateSpec{Spec: spec},
		},
	}
}

// deleteNamespace deletes ns and waits until it is gone, with everything in it.
func deleteNamespace(b testing.TB, ns string) {
	b.Helper()
	if err := kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
	eventually(b, 3*time.Minute, "namespace "+ns+" gone", func() (bool, string) {
		_, err := kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("%v", err)
	})
}

// lingeringPods describes the broker pods still there: their containers' states and the end of
// each container's log.
func lingeringPods(ns, release string) string {
	pods, err := kube.CoreV1().Pods(ns).List(context.Background(), brokerSelector(release))
	if err != nil {
		return err.Error() + "\n"
	}
	var out strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&out, "  lingering %s: %s\n", p.Name, containerStates(p))
		for _, c := range p.Spec.Containers {
			log, err := podLogs(ns, p.Name, c.Name, 15)
			fmt.Fprintf(&out, "  --- %s %v\n%s", c.Name, err, log)
		}
	}
	return out.String()
}
