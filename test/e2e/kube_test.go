//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/minicluster/minicluster/internal/idset"
	"github.com/minicluster/minicluster/internal/limits"
)

const indexLabel = "batch.kubernetes.io/job-completion-index"

// newNamespace creates a namespace for one test and deletes it afterwards; when the test
// failed it first logs what is in it (pods, their logs, events).
func newNamespace(t testing.TB, prefix string) string {
	t.Helper()
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	name := fmt.Sprintf("%s-%s-%x", envOr("E2E_NAMESPACE_PREFIX", "e2e"), prefix, suffix)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"minicluster.dev/e2e": "true"}}}
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() && !dumped(name) {
			dumpNamespace(t, name)
		}
		err := kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// dumpedNamespaces are those a failed test has logged already.
var dumpedNamespaces sync.Map

// dumped reports whether ns was logged already, and marks it logged.
func dumped(ns string) bool {
	_, done := dumpedNamespaces.LoadOrStore(ns, true)
	return done
}

// dumpNamespace logs pods (with statuses and log tails), Jobs and the latest events.
func dumpNamespace(t testing.TB, ns string) {
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "==== diagnostics of namespace %s\n", ns)
	if jobs, err := kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, j := range jobs.Items {
			fmt.Fprintf(&b, "job %s: completions=%v parallelism=%v active=%d succeeded=%d failed=%d conditions=%v\n",
				j.Name, ptrStr(j.Spec.Completions), ptrStr(j.Spec.Parallelism), j.Status.Active, j.Status.Succeeded, j.Status.Failed, jobConditions(j.Status.Conditions))
		}
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s: %s deleting=%v %s\n", p.Name, p.Status.Phase, p.DeletionTimestamp != nil, containerStates(p))
			if slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == kwokLabel }) {
				continue // a simulated node has no logs
			}
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				logs, _ := podLogs(ns, p.Name, c.Name, 40)
				if logs != "" {
					fmt.Fprintf(&b, "---- logs of %s/%s (last 40 lines)\n%s", p.Name, c.Name, logs)
				}
			}
		}
	}
	if evs, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		items := evs.Items
		sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
		if len(items) > 50 {
			items = items[len(items)-50:]
		}
		fmt.Fprintf(&b, "---- last %d events\n", len(items))
		for _, e := range items {
			fmt.Fprintf(&b, "%s %s %s/%s %s: %s\n", eventTime(e).Format("15:04:05.000"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	t.Log(b.String())
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func ptrStr(p *int32) string {
	if p == nil {
		return "nil"
	}
	return strconv.Itoa(int(*p))
}

func containerStates(p corev1.Pod) string {
	var parts []string
	for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		state := "?"
		switch {
		case s.State.Running != nil:
			state = "running"
		case s.State.Waiting != nil:
			state = "waiting " + s.State.Waiting.Reason + " " + s.State.Waiting.Message
		case s.State.Terminated != nil:
			state = fmt.Sprintf("terminated %s exit=%d", s.State.Terminated.Reason, s.State.Terminated.ExitCode)
		}
		parts = append(parts, fmt.Sprintf("%s[%s restarts=%d]", s.Name, state, s.RestartCount))
	}
	return strings.Join(parts, " ")
}

// podLogs returns a container's log (the last tail lines when tail > 0).
func podLogs(ns, pod, container string, tail int64) (string, error) {
	opts := &corev1.PodLogOptions{Container: container}
	if tail > 0 {
		opts.TailLines = &tail
	}
	data, err := kube.CoreV1().Pods(ns).GetLogs(pod, opts).DoRaw(context.Background())
	return string(data), err
}

// followLogs streams a container's log from now on until the container ends; the returned
// function waits for that and gives the log.
func followLogs(t testing.TB, ns, pod, container string) func() string {
	t.Helper()
	stream, err := kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true, SinceSeconds: ptr.To(int64(1))}).Stream(context.Background())
	if err != nil {
		t.Fatalf("follow the log of %s/%s: %v", pod, container, err)
	}
	var log bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stream.Close()
		_, _ = io.Copy(&log, stream)
	}()
	return func() string {
		<-done
		return log.String()
	}
}

// logLine is one log line with the time the runtime recorded it.
type logLine struct {
	At   time.Time
	Text string
}

// timedLogs returns a container's log lines with their runtime timestamps.
func timedLogs(ns, pod, container string) ([]logLine, error) {
	data, err := kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Timestamps: true}).DoRaw(context.Background())
	if err != nil {
		return nil, err
	}
	var lines []logLine
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		stamp, text, _ := strings.Cut(l, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			continue
		}
		lines = append(lines, logLine{at, text})
	}
	return lines, nil
}

// execIn runs a command in a pod's container and returns its stdout and stderr.
func execIn(ns, pod, container string, cmd ...string) (string, string, error) {
	return execInWithin(60*time.Second, ns, pod, container, cmd...)
}

// execInWithin is execIn with a deadline of its own, for long runs in a pod (benchmarks).
func execInWithin(within time.Duration, ns, pod, container string, cmd ...string) (string, string, error) {
	req := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(restConfig, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

// eventually polls cond every 200ms until it is true, failing the test with its last
// explanation when the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	poll(t, within, 200*time.Millisecond, what, cond)
}

// poll checks cond every interval until it is true or within has passed.
func poll(t testing.TB, within, interval time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, within, why)
		}
		time.Sleep(interval)
	}
}

// brokerSelector selects every broker pod of a release, terminating ones included.
func brokerSelector(release string) metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=broker"}
}

// brokerPods returns the release's broker pods by completion index (the newest pod of each
// index that is not being deleted) and how many pods exist in all, terminating ones included.
func brokerPods(ns, release string) (map[int]corev1.Pod, int, error) {
	list, err := kube.CoreV1().Pods(ns).List(context.Background(), brokerSelector(release))
	if err != nil {
		return nil, 0, err
	}
	pods := map[int]corev1.Pod{}
	for _, p := range list.Items {
		i, err := strconv.Atoi(p.Labels[indexLabel])
		if err != nil || p.DeletionTimestamp != nil {
			continue
		}
		if old, ok := pods[i]; !ok || old.CreationTimestamp.Before(&p.CreationTimestamp) {
			pods[i] = p
		}
	}
	return pods, len(list.Items), nil
}

// fluxIn runs flux in a broker pod as a user would (NOTES.txt): plain flux, which finds the
// chart's on PATH, which sets up the view and the pod's socket.
func fluxIn(ns, pod string, args ...string) (string, string, error) {
	return execIn(ns, pod, "flux", append([]string{"flux"}, args...)...)
}

// nodeStates counts the nodes of `flux resource list` in the lead by state: up (free or
// allocated) and down.
func nodeStates(ns, lead string) (up, down int, err error) {
	out, stderr, err := fluxIn(ns, lead, "resource", "list", "--no-header", "--format", "{state} {ranks}")
	if err != nil {
		return 0, 0, fmt.Errorf("flux resource list in %s: %v: %s", lead, err, stderr)
	}
	return countStates(out)
}

// brokersOffline is what `flux uptime` in the lead says: the instance's size (maxSize here) and
// how many of its brokers are not online. A C command, where `flux resource list` starts
// Python: asked every fraction of a second while an instance starts, the difference is a good
// part of a core on this machine, which the brokers being waited for would otherwise have.
func brokersOffline(ns, lead string) (size, offline int, err error) {
	out, stderr, err := fluxIn(ns, lead, "uptime")
	if err != nil {
		return 0, 0, fmt.Errorf("flux uptime in %s: %v: %s", lead, err, stderr)
	}
	// " 07:23:04 run 2.3m,  owner flux,  depth 0,  size 16,  10 offline" (the count only when not 0)
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	size = -1
	for _, f := range strings.Split(line, ",") {
		var n int
		var word string
		if _, err := fmt.Sscan(strings.TrimSpace(f), &word, &n); err == nil && word == "size" {
			size = n
		} else if _, err := fmt.Sscan(strings.TrimSpace(f), &n, &word); err == nil && word == "offline" {
			offline = n
		}
	}
	if size < 0 {
		return 0, 0, fmt.Errorf("flux uptime in %s: no size in %q", lead, out)
	}
	return size, offline, nil
}

// countStates counts the nodes of `flux resource list --format '{state} {ranks}'`: up (free
// or allocated) and down. By ranks, not by each line's node count: a node that runs a job on
// some of its cores is on the free line and on the allocated one.
func countStates(out string) (up, down int, err error) {
	upRanks, downRanks := map[int]bool{}, map[int]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		state, set, _ := strings.Cut(strings.TrimSpace(l), " ") // no ranks: none in that state
		ranks, err := idset.Parse(set, limits.MaxBrokers)
		if state == "" || err != nil {
			return 0, 0, fmt.Errorf("flux resource list line %q: want a state and its ranks (%v)", l, err)
		}
		for _, r := range ranks {
			if state == "down" {
				downRanks[r] = true
			} else {
				upRanks[r] = true
			}
		}
	}
	return len(upRanks), len(downRanks), nil
}

// waitFluxUp waits until exactly size broker pods run and Flux in the lead shows size nodes up
// and maxSize-size down.
func waitFluxUp(t testing.TB, ns, release string, size, maxSize int, within time.Duration) map[int]corev1.Pod {
	t.Helper()
	return waitFluxUpEvery(t, ns, release, size, maxSize, within, 200*time.Millisecond)
}

// waitFluxUpEvery is waitFluxUp polling every interval.
func waitFluxUpEvery(t testing.TB, ns, release string, size, maxSize int, within, interval time.Duration) map[int]corev1.Pod {
	t.Helper()
	var pods map[int]corev1.Pod
	poll(t, within, interval, fmt.Sprintf("Flux in %s shows %d nodes up, %d down", release, size, maxSize-size), func() (bool, string) {
		var total int
		var err error
		if pods, total, err = brokerPods(ns, release); err != nil {
			return false, err.Error()
		}
		if len(pods) != size || total != size {
			return false, fmt.Sprintf("%d broker pods (%d with terminating ones), want %d", len(pods), total, size)
		}
		for i := range size {
			if p, ok := pods[i]; !ok || p.Status.Phase != corev1.PodRunning {
				return false, fmt.Sprintf("pod %d is not running: %s", i, containerStates(p))
			}
		}
		// The cheap look first; the resource list (what the scheduler sees) decides. Where flux
		// uptime fails (flux-core 0.88 crashes for a user with no name), the list alone.
		if n, offline, err := brokersOffline(ns, pods[0].Name); err == nil && (n != maxSize || offline != maxSize-size) {
			return false, fmt.Sprintf("flux uptime: size %d, %d offline", n, offline)
		}
		up, down, err := nodeStates(ns, pods[0].Name)
		if err != nil {
			return false, err.Error()
		}
		return up == size && down == maxSize-size, fmt.Sprintf("flux resource list: %d up, %d down", up, down)
	})
	return pods
}

// waitReadyThenFluxUp waits, by the API alone, until size broker pods are Ready (a broker's pod
// is Ready once Flux counts it), then as waitFluxUp asks Flux in the lead, which then rarely
// needs a second look. For measures of Kubernetes' CPU: every look at Flux is a kubectl exec,
// which costs the kubelet, containerd and runc more than the broker pods themselves do.
func waitReadyThenFluxUp(t testing.TB, ns, release string, size, maxSize int, within time.Duration) map[int]corev1.Pod {
	t.Helper()
	waitPodsReady(t, ns, brokerSelector(release).LabelSelector, size, within)
	return waitFluxUpEvery(t, ns, release, size, maxSize, within, 200*time.Millisecond)
}

// checkFluxRun: `flux run -N size hostname` in the lead reaches every broker pod.
func checkFluxRun(t testing.TB, ns, release string, pods map[int]corev1.Pod) {
	t.Helper()
	out, stderr, err := fluxIn(ns, pods[0].Name, "run", "-N", strconv.Itoa(len(pods)), "hostname")
	if err != nil {
		t.Fatalf("flux run -N %d hostname: %v\n%s%s", len(pods), err, out, stderr)
	}
	got := strings.Fields(out)
	slices.Sort(got)
	var want []string
	for i := range len(pods) {
		want = append(want, pods[i].Spec.Hostname)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("flux run -N %d hostname printed %v, want every broker's hostname %v", len(pods), got, want)
	}
}

// checkDNS: from every broker pod, every broker's FQDN resolves (glibc, as Flux resolves it).
func checkDNS(t testing.TB, ns, release string, pods map[int]corev1.Pod) {
	t.Helper()
	var names []string
	for i := range len(pods) {
		names = append(names, fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", release, i, release, ns))
	}
	script := `for h in "$@"; do getent hosts "$h" >/dev/null || echo "FAIL $h does not resolve"; done`
	for i := range len(pods) {
		stdout, stderr, err := execIn(ns, pods[i].Name, "flux", append([]string{"/bin/sh", "-c", script, "sh"}, names...)...)
		if err != nil || strings.TrimSpace(stdout) != "" {
			t.Errorf("pod %s (rank %d) cannot resolve every broker: %v\n%s%s", pods[i].Name, i, err, stdout, stderr)
		}
	}
}

// leftovers lists what remains of a release in ns: anything with its instance label, the
// names the chart and its hook use, the EndpointSlices of its Services, and Helm's release
// records; but what the chart keeps on purpose (helm.sh/resource-policy: keep: the claim of
// flux.state, which state_test.go checks is kept).
func leftovers(ns, release string) ([]string, error) {
	return namespaceObjects(ns, func(_ string, o metav1.Object) bool {
		return ofRelease(o, release) && o.GetAnnotations()["helm.sh/resource-policy"] != "keep"
	})
}

// ofRelease: o has the release's instance label, one of the names the chart and its hook use,
// belongs to one of its Services (an EndpointSlice), or is one of Helm's release records.
func ofRelease(o metav1.Object, release string) bool {
	names := []string{release, release + "-keygen", release + "-broker", release + "-entrypoint", release + "-curve", release + "-munge",
		release + "-test-wiring", release + "-services", release + "-api", release + "-state"}
	labels := o.GetLabels()
	return labels["app.kubernetes.io/instance"] == release || slices.Contains(names, o.GetName()) ||
		slices.Contains(names, labels["kubernetes.io/service-name"]) ||
		labels["job-name"] == release || labels["job-name"] == release+"-keygen" ||
		(labels["owner"] == "helm" && labels["name"] == release)
}

// namespaceObjects lists ns's objects of every kind a MiniCluster is made of and returns, as
// Kind/name, those keep accepts.
func namespaceObjects(ns string, keep func(kind string, o metav1.Object) bool) ([]string, error) {
	ctx := context.Background()
	all := metav1.ListOptions{}
	c, rbac := kube.CoreV1(), kube.RbacV1()
	lists := []struct {
		kind string
		list func() (runtime.Object, error)
	}{
		{"Job", func() (runtime.Object, error) { return kube.BatchV1().Jobs(ns).List(ctx, all) }},
		{"Pod", func() (runtime.Object, error) { return c.Pods(ns).List(ctx, all) }},
		{"Service", func() (runtime.Object, error) { return c.Services(ns).List(ctx, all) }},
		{"ConfigMap", func() (runtime.Object, error) { return c.ConfigMaps(ns).List(ctx, all) }},
		{"Secret", func() (runtime.Object, error) { return c.Secrets(ns).List(ctx, all) }},
		{"ServiceAccount", func() (runtime.Object, error) { return c.ServiceAccounts(ns).List(ctx, all) }},
		{"Role", func() (runtime.Object, error) { return rbac.Roles(ns).List(ctx, all) }},
		{"RoleBinding", func() (runtime.Object, error) { return rbac.RoleBindings(ns).List(ctx, all) }},
		{"PodDisruptionBudget", func() (runtime.Object, error) { return kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, all) }},
		{"NetworkPolicy", func() (runtime.Object, error) { return kube.NetworkingV1().NetworkPolicies(ns).List(ctx, all) }},
		{"Deployment", func() (runtime.Object, error) { return kube.AppsV1().Deployments(ns).List(ctx, all) }},
		{"ReplicaSet", func() (runtime.Object, error) { return kube.AppsV1().ReplicaSets(ns).List(ctx, all) }},
		{"PersistentVolumeClaim", func() (runtime.Object, error) { return c.PersistentVolumeClaims(ns).List(ctx, all) }},
		{"EndpointSlice", func() (runtime.Object, error) { return kube.DiscoveryV1().EndpointSlices(ns).List(ctx, all) }},
	}
	found := make([][]string, len(lists))
	errs := make([]error, len(lists))
	// Every kind at once: a timing's poll is as short as one list.
	var wg sync.WaitGroup
	for i, l := range lists {
		wg.Go(func() {
			list, err := l.list()
			if err != nil {
				errs[i] = err
				return
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				errs[i] = err
				return
			}
			for _, item := range items {
				o, err := meta.Accessor(item)
				if err != nil {
					errs[i] = err
					return
				}
				if keep(l.kind, o) {
					found[i] = append(found[i], l.kind+"/"+o.GetName())
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(found...), nil
}

// waitNothingLeft waits until nothing of the release remains in ns.
func waitNothingLeft(t testing.TB, ns, release string, within time.Duration) {
	t.Helper()
	eventually(t, within, "nothing left of "+release, func() (bool, string) {
		left, err := leftovers(ns, release)
		if err != nil {
			return false, err.Error()
		}
		return len(left) == 0, "still there: " + strings.Join(left, ", ")
	})
}

func jobConditions(cs []batchv1.JobCondition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestCountStates: a node that runs a job on some of its cores is listed as free and as
// allocated (flux-core 0.88's `flux resource list`); it counts once.
func TestCountStates(t *testing.T) {
	up, down, err := countStates("free 0-1\nallocated 1\ndown 2-3\n")
	if err != nil || up != 2 || down != 2 {
		t.Errorf("countStates: %d up, %d down, %v; want 2 up, 2 down", up, down, err)
	}
	up, down, err = countStates("free 0-3\nallocated \ndown \n")
	if err != nil || up != 4 || down != 0 {
		t.Errorf("countStates with empty states: %d up, %d down, %v; want 4 up, 0 down", up, down, err)
	}
	if _, _, err := countStates("free x-y\n"); err == nil {
		t.Error("countStates took ranks that are not an idset")
	}
}
