//go:build e2e && extra

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The control plane of the local cluster restarted under a MiniCluster (make e2e-extra,
// alone, since a restarted API server or kubelet fails the calls of any test running beside):
// the API server, then node 2's kubelet, then its containerd, each while an ephemeral run is in
// the middle of its MPI steps and each right after a resize. The run finishes right (the Job is
// Complete only with the whole output), the resized MiniCluster comes back whole, and nothing is
// left behind.
func TestControlPlaneRestarts(t *testing.T) {
	faults := []string{"kube-apiserver", "kubelet-n2", "containerd-n2"}

	t.Run("ephemeral", func(t *testing.T) {
		ns := newNamespace(t, "cp-ephemeral")
		r := newRelease(t, ns, "flux-sample", helm4)
		// Eight MPI steps 8 s apart: the faults fall between and during them.
		command := "for i in 1 2 3 4 5 6 7 8; do flux run -N 3 -n 3 --env=LD_PRELOAD=/usr/local/lib/mpich-ucx-finalize.so mpi-hello-mpich || exit 1; " +
			"echo step $i done; sleep 8; done; echo the whole run finished"
		r.install("--set", "image="+mpiImage+",size=3,command="+command)
		eventually(t, 5*time.Minute, "the first MPI step done", func() (bool, string) {
			pods, _, err := brokerPods(ns, r.name)
			if err != nil || len(pods) == 0 {
				return false, "no lead"
			}
			log, _ := podLogs(ns, pods[0].Name, "flux", 0)
			return strings.Contains(log, "step 1 done"), "waiting for step 1"
		})
		for _, c := range faults {
			restartComponent(t, c)
		}
		waitJobComplete(t, r, 6*time.Minute)
		log := leadLog(t, r)
		if strings.Count(log, "mpi-hello: ok") != 8 || !strings.Contains(log, "the whole run finished") {
			t.Errorf("the Job is Complete, but the run did not finish whole (want 8 MPI steps and the last line):\n%s", indentAll(log))
		}
		r.uninstallToNothing()
	})

	t.Run("resize", func(t *testing.T) {
		ns := newNamespace(t, "cp-resize")
		r := newRelease(t, ns, "flux-sample", helm4)
		r.install("--set", "image="+mpiImage+",size=2,maxSize=5")
		waitFluxUp(t, ns, r.name, 2, 5, 4*time.Minute)
		for i, size := range []int{4, 5, 3} {
			if _, err := r.upgrade("--set", "size="+strconv.Itoa(size)); err != nil {
				t.Fatalf("resize to %d: %v", size, err)
			}
			restartComponent(t, faults[i])
			pods := waitFluxUp(t, ns, r.name, size, 5, 4*time.Minute)
			if len(pods) != size {
				t.Fatalf("after the resize to %d and the restart of %s: %d brokers", size, faults[i], len(pods))
			}
			checkFluxRun(t, ns, r.name, pods)
		}
		// Shrunk to 3: no broker of index 3 or 4 is left behind.
		eventually(t, 2*time.Minute, "the brokers above the size gone", func() (bool, string) {
			_, all, err := brokerPods(ns, r.name)
			return err == nil && all == 3, "broker pods: " + strconv.Itoa(all)
		})
		r.uninstallToNothing()
	})
}

// restartComponent restarts a component of the local cluster (ci/cluster/restart.sh) and waits
// until the cluster answers through it again: the API server's readiness, or node 2 Ready with
// a heartbeat from after the restart.
func restartComponent(t *testing.T, name string) {
	t.Helper()
	began := time.Now()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "ci", "cluster", "restart.sh"), name)
	cmd.Env = append(os.Environ(), "CLUSTER_DIR="+clusterDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("restart.sh %s: %v\n%s", name, err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	ctx := context.Background()
	eventually(t, 3*time.Minute, name+" back", func() (bool, string) {
		if _, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			return false, "API server: " + err.Error()
		}
		if name == "kube-apiserver" {
			return true, ""
		}
		node, err := kube.CoreV1().Nodes().Get(ctx, "minicluster-2", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		// The kubelet renews its node's Lease every 10 s; the node's status only changes, or
		// every 5 minutes, so a runtime back within a second may leave it as it was.
		lease, err := kube.CoordinationV1().Leases("kube-node-lease").Get(ctx, "minicluster-2", metav1.GetOptions{})
		if err != nil || lease.Spec.RenewTime == nil {
			return false, fmt.Sprintf("the node's Lease: %v", err)
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue && lease.Spec.RenewTime.After(began),
					fmt.Sprintf("node minicluster-2 Ready=%s, Lease renewed %s", c.Status, lease.Spec.RenewTime.Format(time.RFC3339))
			}
		}
		return false, "no Ready condition"
	})
	t.Logf("%s restarted and back after %.1fs", name, time.Since(began).Seconds())
}
