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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The timings of issue 6, run by `make bench-e2e` (each iteration in a new namespace):
//   - BenchmarkFloor: a bare indexed Job of 6 busybox pods and a headless Service, from create
//     to every pod resolving every pod's FQDN (the floor any MiniCluster sits on);
//   - BenchmarkMiniCluster: helm install of 6 brokers (keygen hook included) to rank 0 counting
//     all 6 online, and from helm's return (the Job exists) to the same point; helm upgrade
//     6 -> 8 to rank 0 counting 8; helm uninstall to nothing left.
// Times come from the container runtime's log timestamps, not from polling.

const benchSize = 6

func BenchmarkFloor(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		ns := newNamespace(b, "floor")
		start := time.Now()
		createFloor(b, ns, "floor", benchSize)
		var last time.Time
		eventually(b, 3*time.Minute, "every floor pod resolves every FQDN", func() (bool, string) {
			pods, _, err := podsByIndex(ns, "job-name=floor")
			if err != nil {
				return false, err.Error()
			}
			last = time.Time{}
			for i := range benchSize {
				p, ok := pods[i]
				if !ok {
					return false, fmt.Sprintf("no pod %d yet", i)
				}
				at, ok := logTime(ns, p.Name, "floor", "resolved")
				if !ok {
					return false, fmt.Sprintf("pod %d has not resolved every name", i)
				}
				last = maxTime(last, at)
			}
			return true, ""
		})
		total += last.Sub(start)
	}
	report(b, "s/all-resolvable", total)
}

func BenchmarkMiniCluster(b *testing.B) {
	// Helm 4 unless BENCH_HELM names another helm CLI.
	benchHelm := envOr("BENCH_HELM", helm4)
	var install, helmInstall, afterHelm, resize, uninstall time.Duration
	for b.Loop() {
		ns := newNamespace(b, "bench")
		r := newRelease(b, ns, "flux-sample", benchHelm)
		start := time.Now()
		r.install("--set", fmt.Sprintf("size=%d,interactive=true", benchSize))
		returned := time.Now()
		helmInstall += returned.Sub(start)
		pods := waitConnected(b, ns, r.name, benchSize, wiringTimeout)
		at, ok := logTime(ns, pods[0].Name, "flux", fmt.Sprintf("%d of 16 brokers online", benchSize))
		if !ok {
			b.Fatal("rank 0 logged no line with all brokers online")
		}
		install += at.Sub(start)
		afterHelm += at.Sub(returned)

		start = time.Now()
		if _, err := r.upgrade("--set", "size=8"); err != nil {
			b.Fatal(err)
		}
		pods = waitConnected(b, ns, r.name, 8, wiringTimeout)
		if at, ok = logTime(ns, pods[0].Name, "flux", "8 of 16 brokers online"); !ok {
			b.Fatal("rank 0 logged no line with 8 brokers online")
		}
		resize += at.Sub(start)

		start = time.Now()
		r.uninstall()
		for {
			left, err := leftovers(ns, r.name)
			if err != nil {
				b.Fatal(err)
			}
			if len(left) == 0 {
				break
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("uninstall left %v", left)
			}
			time.Sleep(50 * time.Millisecond)
		}
		uninstall += time.Since(start)
	}
	report(b, "s/install-to-all-connected", install)
	report(b, "s/helm-install-returned", helmInstall)
	report(b, "s/helm-returned-to-all-connected", afterHelm)
	report(b, "s/resize-6-to-8-connected", resize)
	report(b, "s/uninstall-to-nothing-left", uninstall)
}

func report(b *testing.B, unit string, total time.Duration) {
	avg := total.Seconds() / float64(b.N)
	b.ReportMetric(avg, unit)
	fmt.Printf("%s: %s %.2f (mean of %d)\n", b.Name(), unit, avg, b.N)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// logTime is the runtime's timestamp of the first log line containing s.
func logTime(ns, pod, container, s string) (time.Time, bool) {
	lines, err := timedLogs(ns, pod, container)
	if err != nil {
		return time.Time{}, false
	}
	for _, l := range lines {
		if strings.Contains(l.Text, s) {
			return l.At, true
		}
	}
	return time.Time{}, false
}

func podsByIndex(ns, selector string) (map[int]corev1.Pod, int, error) {
	list, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, 0, err
	}
	pods := map[int]corev1.Pod{}
	for _, p := range list.Items {
		var i int
		if _, err := fmt.Sscan(p.Labels[indexLabel], &i); err == nil {
			pods[i] = p
		}
	}
	return pods, len(list.Items), nil
}

// createFloor creates a headless Service and an indexed Job whose pods loop until every pod's
// FQDN resolves, then log "resolved" and wait.
func createFloor(b *testing.B, ns, name string, size int) {
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Selector: map[string]string{"job-name": name}},
	}
	if _, err := kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	script := fmt.Sprintf(`while :; do ok=1; i=0
  while [ $i -lt %d ]; do nslookup %s-$i.%s.$NS.svc.cluster.local >/dev/null 2>&1 || ok=0; i=$((i+1)); done
  [ $ok = 1 ] && break; sleep 0.1; done
echo resolved; exec sleep 3600`, size, name, name)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Completions:    ptr.To(int32(size)),
			Parallelism:    ptr.To(int32(size)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Subdomain:                     name,
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To(int64(1)),
				Containers: []corev1.Container{{
					Name: "floor", Image: "localhost/minicluster/busybox:test", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"/bin/sh", "-c", script},
					Env:     []corev1.EnvVar{{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
				}},
			}},
		},
	}
	if _, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}
