//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BenchmarkKueue: the hand-over of a Kueue queue with room for one MiniCluster of 6 (8 pods)
// from one to the next, installed at once: from the first one's Job completing (seen by a 20 ms
// poll) to the second one's lead running its command (its "quorum-full: quorum->run" log line:
// the instance starts its initial program), with when Kueue admitted the second (its Job
// resumed) between. Next to the floor, measured the same way in the same run: two bare
// indexed Jobs of 6 pods that exit at once, under the same queue: from the first Job
// completing to the second's pod 0 logging. Needs Kueue (make kueue-up). BENCH_SET adds chart
// values, e.g. flux.view.mode=image (no view copy: on a busy disk the six copies of the
// second MiniCluster took most of its start).
func BenchmarkKueue(b *testing.B) {
	dyn := requireKueue(b)
	var floor, floorAdmit, mc, mcAdmit time.Duration
	warmUp(b, helm4, "--set", "size=2", "--set-string", "command=flux run -N 2 true")
	for b.Loop() {
		ns := newNamespace(b, "bench-kueue-floor")
		kueueQueue(b, dyn, ns, 8)
		for _, name := range []string{"floor-a", "floor-b"} {
			job := indexedJob(name, benchSize, corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To(int64(1)),
				Containers: []corev1.Container{{Name: "floor", Image: testsImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"/bin/sh", "-c", "echo started"}}},
			})
			job.Labels = map[string]string{queueLabel: localQueue}
			if _, err := kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		done, admitted := handOver(b, ns, "floor-a", "floor-b")
		var started time.Time
		eventuallyFast(b, 3*time.Minute, "floor-b pod 0 logged", func() (bool, string) {
			pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=floor-b," + indexLabel + "=0"})
			if err != nil || len(pods.Items) == 0 {
				return false, fmt.Sprintf("no pod 0 yet (%v)", err)
			}
			lines, err := timedLogs(ns, pods.Items[0].Name, "floor")
			if err != nil || len(lines) == 0 {
				return false, fmt.Sprintf("no log yet (%v)", err)
			}
			started = lines[0].At
			return true, ""
		})
		floor += started.Sub(done)
		floorAdmit += admitted.Sub(done)
		fmt.Printf("%s: floor: Job b admitted %.2f s, its pod 0 started %.2f s after Job a completed\n", b.Name(), admitted.Sub(done).Seconds(), started.Sub(done).Seconds())
		deleteNamespace(b, ns)

		ns = newNamespace(b, "bench-kueue")
		kueueQueue(b, dyn, ns, 8)
		var rs []*release
		for _, name := range []string{"mc-a", "mc-b"} {
			r := newRelease(b, ns, name, helm4)
			values := fmt.Sprintf("size=%d,queue.name=%s", benchSize, localQueue)
			if extra := os.Getenv("BENCH_SET"); extra != "" {
				values += "," + extra
			}
			r.install("--set", values, "--set-string", fmt.Sprintf("command=flux run -N %d hostname", benchSize))
			rs = append(rs, r)
		}
		done, admitted = handOver(b, ns, rs[0].name, rs[1].name)
		var lead string
		eventuallyFast(b, 3*time.Minute, "mc-b's lead ran its command", func() (bool, string) {
			pods, _, err := brokerPods(ns, rs[1].name)
			if err != nil {
				return false, err.Error()
			}
			lead = pods[0].Name
			at, err := markTimes(ns, lead, "quorum-full")
			if err != nil || at[0].IsZero() {
				return false, fmt.Sprintf("no quorum-full yet (%v)", err)
			}
			return true, ""
		})
		run := logTimeOf(b, ns, lead, "quorum-full")
		mc += run.Sub(done)
		mcAdmit += admitted.Sub(done)
		fmt.Printf("%s: MiniCluster: mc-b admitted %.2f s, after mc-a completed: %s\n", b.Name(), admitted.Sub(done).Seconds(),
			phases(ns, lead, done, "lead broker:", "rc1-success", "quorum-full"))
		waitJobComplete(b, rs[1], 3*time.Minute)
		deleteNamespace(b, ns)
	}
	report(b, "s/floor-admit", floorAdmit)
	report(b, "s/floor-next-started", floor)
	report(b, "s/minicluster-admit", mcAdmit)
	report(b, "s/minicluster-next-running", mc)
}

// handOver waits (polling every 20 ms) until Job first has completed while Job second waits,
// then until second is resumed; it returns both times. Second must not start before first ends.
func handOver(b *testing.B, ns, first, second string) (done, admitted time.Time) {
	ctx := context.Background()
	eventuallyFast(b, 5*time.Minute, first+" complete", func() (bool, string) {
		job, err := kube.BatchV1().Jobs(ns).Get(ctx, first, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if c, ok := jobFinished(job); ok {
			done = time.Now()
			return true, string(c.Type)
		}
		if s, _ := jobSuspended(b, ns, second); !s {
			b.Fatalf("%s was admitted while %s runs: the queue has room for one", second, first)
		}
		return false, "conditions " + jobConditions(job.Status.Conditions)
	})
	eventuallyFast(b, 2*time.Minute, second+" admitted", func() (bool, string) {
		s, _ := jobSuspended(b, ns, second)
		admitted = time.Now()
		return !s, "suspended"
	})
	return done, admitted
}
