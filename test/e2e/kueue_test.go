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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The MiniCluster queued by Kueue (queue.name), against a running Kueue (`make kueue-up`;
// `make e2e-kueue` starts it, runs these tests and stops it). Without Kueue they skip, saying
// so; with MINICLUSTER_REQUIRE_KUEUE=1 (make e2e-kueue) they fail instead.

const requireKueueEnv = "MINICLUSTER_REQUIRE_KUEUE"

// queueLabel puts a Job in a LocalQueue; localQueue is the one each test makes.
const (
	queueLabel = "kueue.x-k8s.io/queue-name"
	localQueue = "brokers"
)

func kueueGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}
}

// requireKueue returns a dynamic client for Kueue's objects, or ends the test: a skip naming the
// fix, or a failure under MINICLUSTER_REQUIRE_KUEUE=1.
func requireKueue(t testing.TB) dynamic.Interface {
	t.Helper()
	dep, err := kube.AppsV1().Deployments("kueue-system").Get(context.Background(), "kueue-controller-manager", metav1.GetOptions{})
	reason := ""
	switch {
	case apierrors.IsNotFound(err):
		reason = "Kueue is not installed (no Deployment kueue-system/kueue-controller-manager)"
	case err != nil:
		reason = "looking for Kueue: " + err.Error()
	case dep.Status.ReadyReplicas < 1:
		reason = "Kueue's controller (kueue-system/kueue-controller-manager) is not ready"
	}
	if reason != "" {
		if os.Getenv(requireKueueEnv) == "1" {
			t.Fatalf("%s, but %s=1", reason, requireKueueEnv)
		}
		t.Skipf("%s: `make kueue-up` starts it (`make e2e-kueue` runs these tests with it)", reason)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// kueueQueue makes a ResourceFlavor and a ClusterQueue for ns alone, with quota for pods pods
// (each broker is one pod; the chart's pods request no CPU or memory unless resources says so,
// and a ClusterQueue admits only what it has quota for, so it covers pods alone), and the
// LocalQueue "brokers" in ns. The cluster-scoped ones go when the test ends.
func kueueQueue(t testing.TB, dyn dynamic.Interface, ns string, pods int) {
	t.Helper()
	ctx := context.Background()
	name := ns // unique, and the flavor's too
	objs := []struct {
		resource string
		obj      map[string]any
	}{
		{"resourceflavors", map[string]any{"kind": "ResourceFlavor", "metadata": map[string]any{"name": name}}},
		{"clusterqueues", map[string]any{"kind": "ClusterQueue", "metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
				"queueingStrategy":  "StrictFIFO",
				"resourceGroups": []any{map[string]any{
					"coveredResources": []any{"pods"},
					"flavors": []any{map[string]any{"name": name, "resources": []any{
						map[string]any{"name": "pods", "nominalQuota": pods},
					}}},
				}},
			}}},
		{"localqueues", map[string]any{"kind": "LocalQueue", "metadata": map[string]any{"name": localQueue, "namespace": ns},
			"spec": map[string]any{"clusterQueue": name}}},
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o.obj}
		u.SetAPIVersion("kueue.x-k8s.io/v1beta2")
		var err error
		if u.GetNamespace() != "" {
			_, err = dyn.Resource(kueueGVR(o.resource)).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = dyn.Resource(kueueGVR(o.resource)).Create(ctx, u, metav1.CreateOptions{})
			t.Cleanup(func() { // after the namespace's cleanup, registered before: its Workloads are gone
				_ = dyn.Resource(kueueGVR(o.resource)).Delete(context.Background(), name, metav1.DeleteOptions{})
			})
		}
		if err != nil {
			t.Fatalf("create %s %s: %v", o.obj["kind"], name, err)
		}
	}
	// Ready once Kueue counts the LocalQueue active (its ClusterQueue and flavor known).
	eventually(t, time.Minute, "LocalQueue "+localQueue+" active", func() (bool, string) {
		lq, err := dyn.Resource(kueueGVR("localqueues")).Namespace(ns).Get(ctx, localQueue, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(lq.Object, "status", "conditions")
		for _, c := range conds {
			c := c.(map[string]any)
			if c["type"] == "Active" {
				return c["status"] == "True", fmt.Sprintf("Active=%v: %v", c["status"], c["message"])
			}
		}
		return false, "no Active condition yet"
	})
}

// workloadsOf lists the names of the Workloads in ns that Job job owns, with whether each holds
// quota (its QuotaReserved condition).
func workloadsOf(t testing.TB, dyn dynamic.Interface, ns, job string) map[string]bool {
	t.Helper()
	list, err := dyn.Resource(kueueGVR("workloads")).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list Workloads in %s: %v", ns, err)
	}
	out := map[string]bool{}
	for _, w := range list.Items {
		for _, o := range w.GetOwnerReferences() {
			if o.Kind == "Job" && o.Name == job {
				reserved := false
				conds, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
				for _, c := range conds {
					if c := c.(map[string]any); c["type"] == "QuotaReserved" && c["status"] == "True" {
						reserved = true
					}
				}
				out[w.GetName()] = reserved
			}
		}
	}
	return out
}

// jobSuspended reports whether the Job is suspended, and how many pods it has.
func jobSuspended(t testing.TB, ns, name string) (suspended bool, pods int) {
	t.Helper()
	ctx := context.Background()
	job, err := kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Job %s: %v", name, err)
	}
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return job.Spec.Suspend != nil && *job.Spec.Suspend, len(list.Items)
}

// Two ephemeral MiniClusters of 6 brokers in a queue with room for 8 pods: Kueue admits one
// (all of its brokers at once), and the other stays suspended with no pods, its keygen Job (no
// queue label) done all the same and `flux-keygen kube wait` saying that it waits for admission,
// until the first completes; then it runs. Both print every broker's hostname. A third, waiting,
// is uninstalled: nothing of it is left, its Workload neither.
func TestKueue(t *testing.T) {
	dyn := requireKueue(t)
	t.Parallel()
	ns := newNamespace(t, "kueue")
	kueueQueue(t, dyn, ns, 8)
	const size = 6
	// The sleep keeps the first one running while the test looks at the others.
	cmd := fmt.Sprintf("flux run -N %d hostname && sleep 10", size)
	a := newRelease(t, ns, "mc-a", helm4)
	b := newRelease(t, ns, "mc-b", helm3)
	c := newRelease(t, ns, "mc-c", helm4)
	for _, r := range []*release{a, b, c} {
		r.install("--set", fmt.Sprintf("size=%d,queue.name=%s", size, localQueue), "--set-string", "command="+cmd)
	}

	// Exactly one of them is admitted: which one is Kueue's choice (in order of creation).
	var first *release
	eventually(t, 2*time.Minute, "one MiniCluster admitted", func() (bool, string) {
		var running []string
		for _, r := range []*release{a, b, c} {
			if s, _ := jobSuspended(t, ns, r.name); !s {
				running = append(running, r.name)
				first = r
			}
		}
		if len(running) > 1 {
			t.Fatalf("Kueue admitted %v at once; the quota (8 pods) has room for one MiniCluster of %d", running, size)
		}
		return len(running) == 1, "none admitted yet"
	})
	waiting := []*release{}
	for _, r := range []*release{a, b, c} {
		if r != first {
			waiting = append(waiting, r)
		}
	}
	second, third := waiting[0], waiting[1]
	t.Logf("admitted first: %s; waiting: %s, %s", first.name, second.name, third.name)

	// The waiting ones: keys made (the keygen Job is not queued), kube wait names the reason.
	checkKeys(t, second)
	out, code, _ := runWaitCLI(t, ns, second.name, "3s")
	if code != 1 || !strings.Contains(out, "is suspended by Kueue, waiting for admission in LocalQueue "+localQueue) {
		t.Errorf("flux-keygen kube wait on a queued MiniCluster: exit %d, want 1 and that it waits for admission:\n%s", code, out)
	}
	third.uninstallToNothing()
	eventually(t, time.Minute, "no Workload of "+third.name, func() (bool, string) {
		w := workloadsOf(t, dyn, ns, third.name)
		return len(w) == 0, fmt.Sprintf("left: %v", w)
	})

	// While the first runs its command, the second has no pods and no quota. Once the first's
	// pods begin to succeed (the command is done), Kueue may give their quota to the next
	// (reclaimable pods) before the Job is Complete; the first must still complete.
	for {
		job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), first.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c, done := jobFinished(job); done {
			if c.Type != batchv1.JobComplete {
				t.Fatalf("Job %s failed: %s %s", first.name, c.Reason, c.Message)
			}
			break
		}
		if job.Status.Succeeded > 0 {
			break
		}
		var wrong string
		if s, pods := jobSuspended(t, ns, second.name); !s || pods > 0 {
			wrong = fmt.Sprintf("%s: suspended %v with %d pods while %s runs; want suspended with none (no quota)", second.name, s, pods, first.name)
		}
		for w, reserved := range workloadsOf(t, dyn, ns, second.name) {
			if reserved {
				wrong = fmt.Sprintf("Workload %s of %s holds quota while %s runs", w, second.name, first.name)
			}
		}
		if wrong != "" {
			// Kueue may have seen the first's pods succeed after the look above.
			if job, err = kube.BatchV1().Jobs(ns).Get(context.Background(), first.name, metav1.GetOptions{}); err != nil || job.Status.Succeeded == 0 {
				t.Fatalf("%s (%v)", wrong, err)
			}
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	waitJobComplete(t, first, 3*time.Minute)
	waitJobComplete(t, second, 3*time.Minute)
	checkLeadPrintedHostnames(t, first, size)
	checkLeadPrintedHostnames(t, second, size)
	for _, r := range []*release{first, second} {
		r.uninstallToNothing()
		eventually(t, time.Minute, "no Workload of "+r.name, func() (bool, string) {
			w := workloadsOf(t, dyn, ns, r.name)
			return len(w) == 0, fmt.Sprintf("left: %v", w)
		})
	}
}

// Resize under Kueue (the chart makes the Job elastic: Kueue's workload slices), in a queue with
// room for 6 pods: 4 -> 6 fits, Kueue admits the new size and the two new brokers join the
// running instance (none of the others restarted); 6 -> 8 does not fit: the two new pods wait
// on Kueue's scheduling gate, the 6 keep running and kube wait says why; 8 -> 3 cancels the
// growth and shrinks at once. Helm 3 and Helm 4 (which applies server-side).
func TestKueueResize(t *testing.T) {
	dyn := requireKueue(t)
	t.Parallel()
	eachHelm(t, func(t *testing.T, helm string) {
		ns := newNamespace(t, "kueue-resize")
		kueueQueue(t, dyn, ns, 6)
		r := newRelease(t, ns, "flux-sample", helm)
		r.install("--set", "size=4,maxSize=8,queue.name="+localQueue)
		pods := waitFluxUp(t, ns, r.name, 4, 8, wiringTimeout)
		uids := map[int]string{}
		for i, p := range pods {
			uids[i] = string(p.UID)
		}
		kept := func(pods map[int]corev1.Pod, n int) {
			t.Helper()
			for i := range n {
				if string(pods[i].UID) != uids[i] {
					t.Errorf("broker %d was replaced by the resize (pod %s)", i, pods[i].Name)
				}
			}
		}
		if _, err := r.upgrade("--set", "size=6"); err != nil {
			t.Fatal(err)
		}
		pods = waitFluxUp(t, ns, r.name, 6, 8, wiringTimeout)
		kept(pods, 4)
		for i, p := range pods {
			uids[i] = string(p.UID)
		}

		if _, err := r.upgrade("--set", "size=8"); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "2 new broker pods gated", func() (bool, string) {
			g := gated(t, ns, r.name)
			return len(g) == 2, fmt.Sprintf("gated: %v", g)
		})
		out, code, _ := runWaitCLI(t, ns, r.name, "5s")
		if code != 1 || !strings.Contains(out, "2 broker pods (flux-sample-6-") || !strings.Contains(out, "wait for Kueue to admit size 8") {
			t.Errorf("flux-keygen kube wait on a resize past the quota: exit %d, want 1 and the gated pods:\n%s", code, out)
		}
		// The running instance is untouched: still the same 6 up.
		time.Sleep(5 * time.Second)
		pods, _, err := brokerPods(ns, r.name)
		if err != nil {
			t.Fatal(err)
		}
		kept(pods, 6)
		if up, down, err := nodeStates(ns, pods[0].Name); err != nil || up != 6 || down != 2 {
			t.Errorf("flux resource list while the growth waits: %d up, %d down (%v); want 6 and 2", up, down, err)
		}
		if g := gated(t, ns, r.name); len(g) != 2 {
			t.Errorf("gated pods after a while: %v, want the 2 new ones still waiting", g)
		}

		if _, err := r.upgrade("--set", "size=3"); err != nil {
			t.Fatal(err)
		}
		pods = waitFluxUp(t, ns, r.name, 3, 8, wiringTimeout)
		kept(pods, 3)
		if job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), r.name, metav1.GetOptions{}); err != nil || job.Spec.Suspend == nil || *job.Spec.Suspend {
			t.Errorf("after the resizes the Job must still be running (not suspended): %v", err)
		}
		r.uninstallToNothing()
		eventually(t, time.Minute, "no Workload of "+r.name, func() (bool, string) {
			w := workloadsOf(t, dyn, ns, r.name)
			return len(w) == 0, fmt.Sprintf("left: %v", w)
		})
	})
}

// gated lists the release's broker pods that wait on a scheduling gate.
func gated(t testing.TB, ns, release string) []string {
	t.Helper()
	pods, err := kube.CoreV1().Pods(ns).List(context.Background(), brokerSelector(release))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if len(p.Spec.SchedulingGates) > 0 && p.Status.Phase == corev1.PodPending {
			out = append(out, p.Name)
		}
	}
	return out
}
