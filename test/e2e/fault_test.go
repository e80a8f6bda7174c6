//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A deleted worker pod comes back with the same hostname and reconnects; so do the brokers
// below it in the tree (rank 1's children are 3 and 4).
func TestWorkerPodDeleted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fault-pod")
	r := newRelease(t, ns, "flux-sample", helm3)
	r.install("--set", "size=6,interactive=true")
	pods := waitConnected(t, ns, r.name, 6, wiringTimeout)
	old := pods[1]
	if err := kube.CoreV1().Pods(ns).Delete(context.Background(), old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "a new pod with index 1", func() (bool, string) {
		pods, _, err := brokerPods(ns, r.name)
		if err != nil {
			return false, err.Error()
		}
		p, ok := pods[1]
		return ok && p.UID != old.UID, "only the deleted pod " + old.Name
	})
	pods = waitConnected(t, ns, r.name, 6, wiringTimeout)
	host, stderr, err := execIn(ns, pods[1].Name, "flux", "hostname")
	if err != nil || strings.TrimSpace(host) != r.name+"-1" {
		t.Errorf("the new pod %s has hostname %q (%v %s), want %s-1", pods[1].Name, host, err, stderr, r.name)
	}
	for _, child := range []int{3, 4} {
		eventually(t, time.Minute, "rank reconnected", func() (bool, string) {
			log, err := podLogs(ns, pods[child].Name, "flux", 0)
			n := strings.Count(log, connectedLine(child))
			return err == nil && n >= 2, fmt.Sprintf("rank %d logged %d connections to its parent, want 2", child, n)
		})
	}
}

// Deleting the certificate Secret of a running MiniCluster and then upgrading fails with the
// chart's message, and no new key appears.
func TestCertificateDeletedBeforeUpgrade(t *testing.T) {
	t.Parallel()
	eachHelm(t, testCertificateDeletedBeforeUpgrade)
}

func testCertificateDeletedBeforeUpgrade(t *testing.T, helm string) {
	ns := newNamespace(t, "fault-cert")
	r := newRelease(t, ns, "flux-sample", helm)
	r.install("--set", "size=4,interactive=true")
	connected(t, r, 4)
	if err := kube.CoreV1().Secrets(ns).Delete(context.Background(), r.name+"-curve", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := r.upgrade("--set", "size=5")
	want := "with the CURVE certificate is missing or empty"
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("upgrade without the certificate: want an error with %q, got %v:\n%s", want, err, out)
	}
	if r.curveSecret() != nil {
		t.Errorf("a new curve Secret appeared: a silent new key for a running MiniCluster")
	}
	if status, rev := r.status(); status != "deployed" || rev != 1 {
		t.Errorf("release is %s at revision %d after the refused upgrade, want deployed at 1", status, rev)
	}
	r.uninstall()
	waitNothingLeft(t, ns, r.name, time.Minute)
}

// A failed install (an image that does not exist, --wait with a short timeout) and then
// uninstall leaves nothing, the hook's certificate Secret included (Helm 4 runs the hook before
// the failure, Helm 3 after it: both leave the Secret to clean up).
func TestFailedInstallLeavesNothing(t *testing.T) {
	t.Parallel()
	eachHelm(t, testFailedInstallLeavesNothing)
}

func testFailedInstallLeavesNothing(t *testing.T, helm string) {
	ns := newNamespace(t, "fault-image")
	r := newRelease(t, ns, "flux-sample", helm)
	out, err := r.tryInstall("-f", filepath.Join(repoRoot, "values", "hello-world.yaml"),
		"--set", "image=localhost/minicluster/no-such-image:none", "--wait", "--wait-for-jobs", "--timeout", "30s")
	if err == nil {
		t.Fatalf("install with a missing image succeeded:\n%s", out)
	}
	if status, _ := r.status(); status != "failed" {
		t.Errorf("release status %q after the failed install, want failed", status)
	}
	if r.curveSecret() == nil {
		t.Errorf("no curve Secret after the failed install: the test would not show that uninstall removes it")
	}
	if !strings.Contains(out, "timed out") && !strings.Contains(out, "deadline exceeded") {
		t.Errorf("the install failed for another reason than the --wait timeout on the missing image:\n%s", out)
	}
	r.uninstall()
	waitNothingLeft(t, ns, r.name, time.Minute)
}
