//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// One image on a node under two names: imported from bin/images (make cluster-up:
// localhost/minicluster/busybox:VERSION) and pulled from the cluster's registry
// (CLUSTER_REGISTRY/minicluster/busybox:VERSION), the same image ID. A kubelet of 1.35 or later
// that pulled an image ID itself lets a pod use another name of it only after pulling that name
// too (KubeletEnsureSecretPulledImages); the imported name then fails with ErrImageNeverPull
// (pull policy Never) or ErrImagePull (IfNotPresent: nothing answers for localhost/) although
// containerd has it. cluster-up's kubelets verify no image (imagePullCredentialsVerificationPolicy
// NeverVerify): after the registry copy ran on a node, pods there still run the imported name
// with Never and with IfNotPresent.
func TestImportedImageAfterPull(t *testing.T) {
	t.Parallel()
	if imagePrefix == "localhost/minicluster/" {
		skipUnlessRequired(t, "the images go by their local names only (no CLUSTER_REGISTRY): none is pulled under a second name; make e2e sets CLUSTER_REGISTRY on the local cluster")
	}
	local := "localhost/minicluster/busybox:" + version
	node := nodeWithImage(t, local)
	ns := newNamespace(t, "images")

	// Always: this kubelet pulls the registry copy now, and records that it did.
	pulled := runToEnd(t, ns, "pulled", node, testsImage, corev1.PullAlways)
	never := runToEnd(t, ns, "imported-never", node, local, corev1.PullNever)
	present := runToEnd(t, ns, "imported-if-not-present", node, local, corev1.PullIfNotPresent)
	// containerd reports the image's first repo digest as every container's image, so one image
	// under two names shows the same imageID in all three pods.
	if id := imageID(pulled); id != imageID(never) || id != imageID(present) {
		t.Fatalf("%s on %s is not the image pulled as %s (imageIDs %s, %s, %s), so the two names were not checked on one image: bin/images changed since make cluster-up imported it; import it again (bash ci/cluster/load-images.sh)",
			local, node, testsImage, id, imageID(never), imageID(present))
	}
}

// nodeWithImage names a schedulable node whose status lists image, or ends the test: a cluster
// that did not get bin/images imported (kind without kind-up, a real one) has nothing to check.
func nodeWithImage(t *testing.T, image string) string {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schedulable := schedulableNodes(t)
	for _, n := range nodes.Items {
		if !slices.Contains(schedulable, n.Name) {
			continue
		}
		for _, img := range n.Status.Images {
			if slices.Contains(img.Names, image) {
				return n.Name
			}
		}
	}
	skipUnlessRequired(t, fmt.Sprintf("no schedulable node lists %s among its images: it was not imported (make cluster-up imports bin/images)", image))
	return ""
}

// runToEnd runs /bin/true in image with pull policy on node and returns the pod once it succeeded;
// a pull error fails the test at once, with the kubelet's message.
func runToEnd(t *testing.T, ns, name, node, image string, policy corev1.PullPolicy) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName: node, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: policy, Command: []string{"/bin/true"}}},
		},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *corev1.Pod
	eventually(t, time.Minute, fmt.Sprintf("pod %s (%s, %s) succeeded on %s", name, image, policy, node), func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		last = p
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && slices.Contains([]string{"ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff"}, w.Reason) {
				t.Fatalf("pod %s on %s, image %s, pull policy %s: %s: %s", name, node, image, policy, w.Reason, w.Message)
			}
		}
		return p.Status.Phase == corev1.PodSucceeded, fmt.Sprintf("phase %s, %s", p.Status.Phase, containerStates(*p))
	})
	return last
}

func imageID(p *corev1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 {
		return ""
	}
	return p.Status.ContainerStatuses[0].ImageID
}
