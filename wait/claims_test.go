package wait

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A broker pod that mounts the state claim and that the scheduler holds back for it.
func statePod(i int) *corev1.Pod {
	p := brokerPod(i, false, nil)
	p.Spec.Volumes = []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mc-state"}}}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."}}
	return p
}

func stateClaim(class string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "mc-state", Namespace: "ns"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	if class != "-" {
		c.Spec.StorageClassName = &class
	}
	return c
}

func claimEvent(reason, message string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e-" + reason, Namespace: "ns"}, Reason: reason, Message: message,
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "mc-state", Namespace: "ns"},
		LastTimestamp:  metav1.Now()}
}

// A claim or a storage class that does not exist fails kube wait at once; a class whose
// provisioner makes no volume is said on the log and in the timeout error, in place of the
// scheduler's "unbound immediate PersistentVolumeClaims".
func TestWaitReportsPendingClaims(t *testing.T) {
	noClass := []runtime.Object{brokerJob(1), statePod(0), stateClaim("fast")}
	_, err := runWait(t, 5*time.Second, noClass...)
	var ce ClaimError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `asks for storage class "fast", which does not exist`) ||
		!strings.Contains(err.Error(), "kubectl delete pvc -n ns mc-state") {
		t.Errorf("missing storage class: want a ClaimError at once, got %v", err)
	}

	_, err = runWait(t, 5*time.Second, brokerJob(1), statePod(0))
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "PersistentVolumeClaim ns/mc-state does not exist") || !strings.Contains(err.Error(), "flux.state.existingClaim") {
		t.Errorf("missing claim: want a ClaimError at once, got %v", err)
	}

	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "example.com/nobody"}
	log, err := runWait(t, 200*time.Millisecond, brokerJob(1), statePod(0), stateClaim("fast"), class,
		claimEvent("ExternalProvisioning", "Waiting for a volume to be created either by the external provisioner 'example.com/nobody' or manually by the system administrator."))
	want := "PersistentVolumeClaim mc-state Pending: no volume from provisioner example.com/nobody of storage class fast yet: if no such provisioner runs in the cluster, none will come"
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "no node fits") {
		t.Errorf("no provisioner: want a timeout naming the claim and the provisioner, got %v", err)
	}
	if strings.Count(log, want) != 1 {
		t.Errorf("the log should say it once:\n%s", log)
	}

	_, err = runWait(t, 200*time.Millisecond, brokerJob(1), statePod(0), stateClaim("fast"), class,
		claimEvent("ProvisioningFailed", "failed to provision volume: disk quota exceeded"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `the provisioner of storage class fast failed: "failed to provision volume: disk quota exceeded"`) {
		t.Errorf("provisioning failed: %v", err)
	}

	_, err = runWait(t, 200*time.Millisecond, brokerJob(1), statePod(0), stateClaim("-"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "names no storage class and the cluster has no default one") {
		t.Errorf("no class: %v", err)
	}

	bound := stateClaim("fast")
	bound.Status.Phase = corev1.ClaimBound
	ready := brokerPod(0, true, nil)
	ready.Spec.Volumes = statePod(0).Spec.Volumes
	if _, err := runWait(t, 5*time.Second, brokerJob(1), ready, bound); err != nil {
		t.Errorf("bound claim, pod ready: %v", err)
	}
}
