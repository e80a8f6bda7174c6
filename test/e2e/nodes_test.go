//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Tests of a MiniCluster spread over several nodes (make cluster-up NODES=3). They share the
// nodes, cordon, drain and stop them, so they run one after another inside TestNodes.

// schedulableNodes are the Ready nodes new pods may go to (not cordoned, no NoSchedule taint).
func schedulableNodes(t testing.TB) []string {
	t.Helper()
	list, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		if n.Spec.Unschedulable || !nodeReady(n) || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Effect != corev1.TaintEffectPreferNoSchedule }) {
			continue
		}
		names = append(names, n.Name)
	}
	return names
}

// requireNodes skips the test on a cluster with fewer than n schedulable nodes, or fails it when
// MINICLUSTER_REQUIRE_NODES (which .ci/run sets) asks for at least n.
func requireNodes(t *testing.T, n int) []string {
	t.Helper()
	nodes := schedulableNodes(t)
	if len(nodes) >= n {
		return nodes
	}
	msg := fmt.Sprintf("needs %d schedulable nodes, the cluster has %d (%v): make cluster-down && make cluster-up NODES=%d", n, len(nodes), nodes, n)
	if required, _ := strconv.Atoi(os.Getenv("MINICLUSTER_REQUIRE_NODES")); required >= n {
		t.Fatal(msg + " (MINICLUSTER_REQUIRE_NODES is set)")
	}
	t.Skip(msg)
	return nil
}

// nodesOf maps each broker pod's node to the indexes of the brokers on it.
func nodesOf(pods map[int]corev1.Pod) map[string][]int {
	on := map[string][]int{}
	for _, i := range slices.Sorted(maps.Keys(pods)) {
		on[pods[i].Spec.NodeName] = append(on[pods[i].Spec.NodeName], i)
	}
	return on
}

// cordon marks a node unschedulable until the test ends.
func cordon(t *testing.T, node string) {
	t.Helper()
	t.Cleanup(cordonUntil(t, node))
}

// cordonUntil marks a node unschedulable and returns what makes it schedulable again.
func cordonUntil(t *testing.T, node string) func() {
	t.Helper()
	set := func(v bool) error {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, v)
		_, err := kube.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	if err := set(true); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := set(false); err != nil {
				t.Errorf("uncordon %s: %v", node, err)
			}
		})
	}
}

// drain does to the namespace's pods on node what `kubectl drain` does: cordon the node, then
// evict each pod through the Eviction API (which honours PodDisruptionBudgets).
func drain(t *testing.T, ns, node string) {
	t.Helper()
	cordon(t, node)
	ctx := context.Background()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}}
		if err := kube.PolicyV1().Evictions(ns).Evict(ctx, ev); err != nil {
			t.Fatalf("evict %s from %s: %v", p.Name, node, err)
		}
	}
}

// installUp installs a MiniCluster of size in a new namespace (args: more helm arguments) and
// waits until Flux has every broker up.
func installUp(t *testing.T, prefix, helm string, size int, args ...string) (*release, map[int]corev1.Pod) {
	t.Helper()
	ns := newNamespace(t, prefix)
	r := newRelease(t, ns, "flux-sample", helm)
	r.install(append([]string{"--set", fmt.Sprintf("size=%d", size)}, args...)...)
	return r, waitFluxUp(t, ns, r.name, size, 16, wiringTimeout)
}

// shortTolerations: the brokers tolerate an unreachable or not-ready node for 5 s (300 s by
// default), so that a dead node's pods are deleted soon.
var shortTolerations = []string{
	"--set", "tolerations[0].key=node.kubernetes.io/unreachable,tolerations[0].operator=Exists,tolerations[0].effect=NoExecute,tolerations[0].tolerationSeconds=5",
	"--set", "tolerations[1].key=node.kubernetes.io/not-ready,tolerations[1].operator=Exists,tolerations[1].effect=NoExecute,tolerations[1].tolerationSeconds=5",
}

// checkOffNode: no broker runs on node.
func checkOffNode(t *testing.T, pods map[int]corev1.Pod, node string) {
	t.Helper()
	if on := nodesOf(pods)[node]; len(on) > 0 {
		t.Errorf("brokers %v still on the drained node %s", on, node)
	}
}

// TestSpread: brokers spread over the nodes with Flux in both view modes and in the image, MPI
// where the image has it. It stops no node, so it runs beside the other parallel tests.
func TestSpread(t *testing.T) {
	t.Parallel()
	requireNodes(t, 3)
	t.Run("view-copy", func(t *testing.T) { testSpread(t, "image="+mpiImage+",flux.view.mode=copy") })
	t.Run("view-image-volume", func(t *testing.T) { testSpread(t, "image="+mpiImage+",flux.view.mode=image") })
	t.Run("flux-in-image", func(t *testing.T) { testSpread(t, "image="+fluxImage+",flux.view.enabled=false") })
}

// TestNodes is not parallel: Go runs it before the parallel tests, alone, because the node it
// stops (and the out-of-service taint that evicts everything on it) would take down the other
// tests' brokers too.
func TestNodes(t *testing.T) {
	requireNodes(t, 3)
	t.Run("drain/interactive", testDrainInteractive)
	t.Run("drain/ephemeral-lead", testDrainEphemeralLead)
	t.Run("node-lost", testNodeLost)
	t.Run("drain/budget", testDrainBudget)
}

// testSpread: a MiniCluster of 6 on 3 nodes has brokers on all 3 (the chart's soft
// anti-affinity), Flux has them all up, `flux run -N 6` reaches every one, and with an MPI image
// MPICH's ranks on 6 pods pass their ring and allreduce across the nodes.
func testSpread(t *testing.T, values string) {
	nodes := requireNodes(t, 3)
	r, pods := installUp(t, "spread", helm4, 6, "--set", values)
	ns := r.ns
	if on := nodesOf(pods); len(on) != len(nodes) {
		t.Errorf("brokers by node: %v; want brokers on each of the %d nodes %v", on, len(nodes), nodes)
	}
	checkFluxRun(t, ns, r.name, pods)
	if strings.Contains(values, mpiImage) {
		out, stderr, err := fluxIn(ns, pods[0].Name, "run", "-N", "6", "-n", "6", "--env=LD_PRELOAD=/usr/local/lib/mpich-ucx-finalize.so", "mpi-hello-mpich")
		if err != nil {
			t.Fatalf("MPICH across the nodes: %v\n%s%s", err, out, stderr)
		}
		checkMPIHello(t, out, 6, 6, "MPICH Version:")
	}
	r.uninstallToNothing()
}

// testDrainInteractive: draining a node that runs only workers evicts them; the Job replaces
// them on the other nodes (an eviction does not count against backoffLimit) and they rejoin the
// same lead. Draining the lead's node then takes the lead-loss path: a new lead elsewhere,
// every worker rejoins it, the Job keeps running.
func testDrainInteractive(t *testing.T) {
	requireNodes(t, 3)
	r, pods := installUp(t, "drain", helm3, 6)
	ns := r.ns
	leadNode := pods[0].Spec.NodeName
	var workerNode string
	for node := range nodesOf(pods) {
		if node != leadNode {
			workerNode = node
			break
		}
	}
	if workerNode == "" {
		t.Fatalf("every broker is on the lead's node %s", leadNode)
	}
	lead := pods[0]
	start := time.Now()
	drain(t, ns, workerNode)
	pods = waitFluxUp(t, ns, r.name, 6, 16, 3*time.Minute)
	t.Logf("drained %s (workers %v): whole again in %.1fs", workerNode, nodesOf(pods), time.Since(start).Seconds())
	checkOffNode(t, pods, workerNode)
	if pods[0].UID != lead.UID {
		t.Errorf("the lead changed (%s -> %s) although only workers were evicted", lead.Name, pods[0].Name)
	}
	checkFluxRun(t, ns, r.name, pods)
	checkJobRunning(t, r)

	start = time.Now()
	drain(t, ns, leadNode)
	eventually(t, 2*time.Minute, "a new lead", func() (bool, string) {
		now, _, err := brokerPods(ns, r.name)
		if err != nil {
			return false, err.Error()
		}
		p, ok := now[0]
		return ok && p.UID != lead.UID, "the evicted lead " + lead.Name
	})
	pods = waitFluxUp(t, ns, r.name, 6, 16, 3*time.Minute)
	t.Logf("drained the lead's node %s: whole again in %.1fs (%v)", leadNode, time.Since(start).Seconds(), nodesOf(pods))
	checkOffNode(t, pods, leadNode)
	checkFluxRun(t, ns, r.name, pods)
	checkJobRunning(t, r)
	r.uninstallToNothing()
}

// testDrainEphemeralLead: an ephemeral MiniCluster whose lead's node is drained while its
// command runs is never reported a success for it: a new lead on another node runs the command
// again with every broker, and only then does the Job complete.
func testDrainEphemeralLead(t *testing.T) {
	requireNodes(t, 3)
	r, pods := installUp(t, "drain-eph", helm4, 6, "--set-string", "command=flux run -N 6 hostname && echo run-done-$(flux getattr broker.starttime) && sleep 20")
	ns := r.ns
	leadNode := pods[0].Spec.NodeName
	drain(t, ns, leadNode)
	checkJobRunning(t, r)
	waitJobComplete(t, r, 4*time.Minute)
	log := leadLog(t, r)
	if !strings.Contains(log, "run-done-") {
		t.Errorf("the new lead did not run the command to its end:\n%s", log)
	}
	final, _, err := brokerPods(ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := final[0]; ok && p.Spec.NodeName == leadNode {
		t.Errorf("the lead that completed ran on the drained node %s", leadNode)
	}
	checkLeadPrintedHostnames(t, r, 6)
	r.uninstallToNothing()
}

// localNode is the number K of a node of the local cluster (minicluster-K, K >= 2: node.sh
// cannot stop the first, which runs the control plane), or 0 for any other node.
func localNode(name string) int {
	k, err := strconv.Atoi(strings.TrimPrefix(name, "minicluster-"))
	if err != nil || !strings.HasPrefix(name, "minicluster-") || k < 2 {
		return 0
	}
	return k
}

// nodeScript runs ci/cluster/node.sh (stop or start a node of the local cluster).
func nodeScript(t *testing.T, action string, k int) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "ci", "cluster", "node.sh"), action, strconv.Itoa(k))
	cmd.Env = append(os.Environ(), "CLUSTER_DIR="+clusterDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node.sh %s %d: %v\n%s", action, k, err, out)
	}
}

// clusterDir is the local cluster's state directory (make cluster-up).
func clusterDir() string { return envOr("CLUSTER_DIR", filepath.Join(repoRoot, ".cluster")) }

// waitNodeReady waits until the node's Ready condition is want.
func waitNodeReady(t *testing.T, node string, want bool, within time.Duration) {
	t.Helper()
	eventually(t, within, fmt.Sprintf("node %s Ready=%t", node, want), func() (bool, string) {
		n, err := kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(*n) == want, "not yet"
	})
}

// restartNode starts a stopped node again, takes the out-of-service taint off and waits until
// new pods may go there (Ready, and the not-ready and unreachable taints gone), so that the next
// test finds every node.
func restartNode(t *testing.T, node string, k int) {
	t.Helper()
	nodeScript(t, "start", k)
	setOutOfService(t, node, false)
	eventually(t, 3*time.Minute, "node "+node+" schedulable again", func() (bool, string) {
		nodes := schedulableNodes(t)
		return slices.Contains(nodes, node), fmt.Sprintf("schedulable: %v", nodes)
	})
}

const outOfService = "node.kubernetes.io/out-of-service"

// setOutOfService adds or removes the out-of-service taint (Kubernetes' non-graceful node
// shutdown: what an administrator sets on a node that is known to be gone).
func setOutOfService(t *testing.T, node string, on bool) {
	t.Helper()
	ctx := context.Background()
	n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == outOfService })
	if on {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: outOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
	}
	if _, err := kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// testNodeLost: one node dies (node.sh stop: link cut, kubelet, runtime and pods killed) under
// two MiniClusters at once: an interactive one with workers there (its lead elsewhere) and an
// ephemeral one with its lead there, mid-command. Flux marks the lost brokers down at once;
// Kubernetes marks the node NotReady after the controller manager's node-monitor-grace-period
// (50 s) and, once the pods' tolerations of unreachable run out (5 s here, 300 s by default),
// deletes them, but they stay Terminating: the Job replaces a pod only when it has ended, which
// nobody can confirm for a dead node. The out-of-service taint (set by an administrator who
// knows the node is gone) ends them: the interactive workers come back on the other nodes and
// rejoin the same lead; the ephemeral MiniCluster gets a new lead elsewhere that runs the
// command again with every broker, and only then completes (never reported a success for the
// lost run). Then the node comes back. One node stop serves both: each costs the grace period.
func testNodeLost(t *testing.T) {
	requireNodes(t, 3)
	r, pods := installUp(t, "node-lost", helm4, 6, shortTolerations...)
	ns := r.ns
	lead := pods[0]
	// The ephemeral lead must land on a node node.sh can stop, and not on the interactive
	// lead's: the other nodes are cordoned while its pods are placed.
	var uncordon []func()
	for _, n := range schedulableNodes(t) {
		if localNode(n) == 0 || n == lead.Spec.NodeName {
			u := cordonUntil(t, n)
			t.Cleanup(u)
			uncordon = append(uncordon, u)
		}
	}
	er, epods := installUp(t, "node-lost-eph", helm3, 6, slices.Concat(shortTolerations,
		[]string{"--set-string", "command=flux run -N 6 hostname && echo run-done-$(flux getattr broker.starttime) && sleep 30"})...)
	for _, u := range uncordon {
		u() // the replacements may go anywhere
	}
	node := epods[0].Spec.NodeName
	k := localNode(node)
	if k == 0 || node == lead.Spec.NodeName {
		t.Fatalf("the ephemeral lead runs on %s, which was cordoned (interactive lead on %s)", node, lead.Spec.NodeName)
	}
	lost := nodesOf(pods)[node]
	if len(lost) == 0 {
		t.Fatalf("no interactive worker on %s, the node to stop: %v (the chart spreads brokers over the nodes)", node, nodesOf(pods))
	}

	start := time.Now()
	nodeScript(t, "stop", k)
	t.Cleanup(func() { restartNode(t, node, k) })
	eventually(t, 2*time.Minute, fmt.Sprintf("Flux marks the %d brokers of %s down", len(lost), node), func() (bool, string) {
		up, down, err := nodeStates(ns, lead.Name)
		return err == nil && up == 6-len(lost) && down == 10+len(lost), fmt.Sprintf("%d up, %d down, %v", up, down, err)
	})
	t.Logf("node %s (interactive brokers %v, the ephemeral lead) stopped: Flux had them down after %.1fs", node, lost, time.Since(start).Seconds())
	waitNodeReady(t, node, false, 2*time.Minute)
	t.Logf("node %s NotReady after %.1fs", node, time.Since(start).Seconds())
	checkJobRunning(t, er)
	// Past the 5 s toleration (and the taint manager's own delay): deleted, never replaced.
	time.Sleep(20 * time.Second)
	now, _, err := brokerPods(ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range lost {
		if p, ok := now[i]; ok {
			// The README's node-loss section says otherwise: it must follow.
			t.Errorf("broker %d: want its pod deleted (toleration of 5 s) and not replaced before the out-of-service taint, found %s on %s", i, p.Name, p.Spec.NodeName)
		}
	}
	checkJobRunning(t, er)

	tainted := time.Now()
	setOutOfService(t, node, true)
	pods = waitFluxUp(t, ns, r.name, 6, 16, 3*time.Minute)
	t.Logf("out-of-service taint on %s: the interactive one whole again %.1fs later (%.1fs after the node stopped)", node, time.Since(tainted).Seconds(), time.Since(start).Seconds())
	checkOffNode(t, pods, node)
	if pods[0].UID != lead.UID {
		t.Errorf("the lead changed (%s -> %s) although only workers were lost", lead.Name, pods[0].Name)
	}
	checkFluxRun(t, ns, r.name, pods)
	checkJobRunning(t, r)

	waitJobComplete(t, er, 4*time.Minute)
	t.Logf("the ephemeral Job complete %.1fs after the node stopped", time.Since(start).Seconds())
	log := leadLog(t, er)
	if !strings.Contains(log, "run-done-") {
		t.Errorf("the ephemeral lead that completed did not run the command to its end:\n%s", log)
	}
	checkLeadPrintedHostnames(t, er, 6)
	r.uninstallToNothing()
	er.uninstallToNothing()
}

// testDrainBudget: with maxUnavailable=0 (a PodDisruptionBudget), a drain cannot take a broker of
// the running instance: the Eviction API refuses (429) and the instance stays whole with the same
// lead; a resize moves the budget to the new size; uninstall removes it with the rest.
func testDrainBudget(t *testing.T) {
	requireNodes(t, 2)
	r, pods := installUp(t, "budget", helm3, 4, "--set", "maxUnavailable=0")
	ns := r.ns
	ctx := context.Background()
	// The disruption controller fills in what the budget allows once it has seen the pods.
	eventually(t, time.Minute, "the budget counts 4 healthy brokers", func() (bool, string) {
		pdb, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pdb.Status.CurrentHealthy == 4 && pdb.Status.DesiredHealthy == 4 && pdb.Status.ObservedGeneration == pdb.Generation, fmt.Sprintf("%+v", pdb.Status)
	})
	for _, i := range []int{0, 1} {
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pods[i].Name, Namespace: ns}}
		err := kube.PolicyV1().Evictions(ns).Evict(ctx, ev)
		if !apierrors.IsTooManyRequests(err) {
			t.Errorf("evicting broker %d with maxUnavailable=0: %v, want 429 (the budget refuses)", i, err)
		}
	}
	now := waitFluxUp(t, ns, r.name, 4, 16, wiringTimeout)
	for i := range 4 {
		if now[i].UID != pods[i].UID {
			t.Errorf("broker %d was replaced (%s -> %s) although the budget refused its eviction", i, pods[i].Name, now[i].Name)
		}
	}
	// A resize renders the budget again for the new size.
	if _, err := r.upgrade("--reuse-values", "--set", "size=6"); err != nil {
		t.Fatal(err)
	}
	waitFluxUp(t, ns, r.name, 6, 16, wiringTimeout)
	if pdb, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, r.name, metav1.GetOptions{}); err != nil || pdb.Spec.MinAvailable.IntValue() != 6 {
		t.Errorf("after the resize to 6 the budget keeps %v brokers (%v), want 6", pdb.Spec.MinAvailable, err)
	}
	r.uninstallToNothing()
}
