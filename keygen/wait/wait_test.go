package wait

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// The pull reports against client-go's fake clientset; test/e2e makes the kubelet produce the
// same statuses for real (TestPullFailureReported).

func brokerJob(parallelism int32, conds ...batchv1.JobCondition) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "mc", Namespace: "ns", Labels: map[string]string{
			"app.kubernetes.io/instance": "mc", "app.kubernetes.io/component": "broker"}},
		Spec:   batchv1.JobSpec{Parallelism: &parallelism},
		Status: batchv1.JobStatus{Conditions: conds},
	}
}

// brokerPod is pod i of the Job; waiting gives its "keys" container (the sidecar beside the
// broker's) that waiting state.
func brokerPod(i int, ready bool, waiting *corev1.ContainerStateWaiting) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("mc-%d", i), Namespace: "ns", Labels: map[string]string{
			"app.kubernetes.io/instance": "mc", "batch.kubernetes.io/job-name": "mc"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if waiting != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "keys", Image: "reg.example/minicluster/flux-keygen:1.2.3",
			State: corev1.ContainerState{Waiting: waiting}}}
	}
	return p
}

func runWait(t *testing.T, within time.Duration, objs ...runtime.Object) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var log bytes.Buffer
	err := Release(ctx, fake.NewClientset(objs...), Options{Namespace: "ns", Release: "mc", Poll: 10 * time.Millisecond}, &log)
	return log.String(), err
}

func TestWaitReportsPullFailures(t *testing.T) {
	for _, tc := range []struct {
		name, reason, message string
		want                  []string
	}{
		{"missing tag", "ErrImagePull", `failed to pull and unpack image "reg.example/minicluster/flux-keygen:1.2.3": reg.example/minicluster/flux-keygen:1.2.3: not found`,
			[]string{`pod mc-1 container keys cannot pull image "reg.example/minicluster/flux-keygen:1.2.3"`, "no such image or tag", "make push REGISTRY=", "set imageRegistry"}},
		{"wrong registry", "ImagePullBackOff", `Back-off pulling image "x": dial tcp 10.0.0.9:5000: connect: connection refused`,
			[]string{"cannot reach that registry", "set imageRegistry"}},
		{"pull secret refused", "ErrImagePull", `failed to authorize: 401 Unauthorized`,
			[]string{"refuses the credentials", "imagePullSecrets"}},
		{"invalid name", "InvalidImageName", `couldn't parse image name "Reg/X"`,
			[]string{"not a valid image name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runWait(t, 5*time.Second, brokerJob(2), brokerPod(0, true, nil),
				brokerPod(1, false, &corev1.ContainerStateWaiting{Reason: tc.reason, Message: tc.message}))
			var pe PullError
			if !errors.As(err, &pe) {
				t.Fatalf("want a PullError at once, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

// flux.view.mode=image: the kubelet reports the view image's pull failure on the flux
// container, under the application image; the report names the view image and its value.
// A runtime that cannot mount image volumes is reported with the fix.
func TestWaitReportsImageVolumeFailures(t *testing.T) {
	viewPod := func(w corev1.ContainerStateWaiting) *corev1.Pod {
		p := brokerPod(1, false, nil)
		p.Spec.Volumes = []corev1.Volume{{Name: "flux-view", VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: "reg.example/flux-view:nope"}}}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "flux", Image: "reg.example/app:1",
			State: corev1.ContainerState{Waiting: &w}}}
		return p
	}
	_, err := runWait(t, 5*time.Second, brokerJob(2), viewPod(corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
		Message: `Back-off pulling image "reg.example/flux-view:nope": ErrImagePull: failed to resolve image: reg.example/flux-view:nope: not found`}))
	var pe PullError
	if !errors.As(err, &pe) || pe.Volume != "flux-view" {
		t.Fatalf("want a PullError of the flux-view volume, got %v", err)
	}
	for _, w := range []string{`pod mc-1 image volume flux-view (of container flux) cannot pull image "reg.example/flux-view:nope"`, "no such image or tag", "set flux.view.image"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}

	_, err = runWait(t, 5*time.Second, brokerJob(2), viewPod(corev1.ContainerStateWaiting{Reason: "CreateContainerError",
		Message: `failed to generate container "c03d" spec: failed to generate spec: failed to mkdir "": mkdir : no such file or directory`}))
	if err == nil || !strings.Contains(err.Error(), "cannot mount image volumes") || !strings.Contains(err.Error(), "flux.view.mode=copy") {
		t.Errorf("runtime without image volumes: %v", err)
	}
}

// The kubelet's own pull rate limit is no failure of the image: wait on (here until the
// timeout, with the throttled pull named as what is pending).
func TestWaitIgnoresThrottledPulls(t *testing.T) {
	for _, w := range []corev1.ContainerStateWaiting{
		{Reason: "ErrImagePull", Message: "pull QPS exceeded"},
		{Reason: "ImagePullBackOff", Message: `Back-off pulling image "reg.example/minicluster/flux-keygen:1.2.3": ErrImagePull: pull QPS exceeded`},
	} {
		_, err := runWait(t, 100*time.Millisecond, brokerJob(2), brokerPod(0, true, nil), brokerPod(1, false, &w))
		var pe PullError
		if errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "mc-1 (Pending: container keys "+w.Reason+")") {
			t.Errorf("%s %q: want a wait until the timeout, got %v", w.Reason, w.Message, err)
		}
	}
}

func TestWaitUpCompleteFailedAndTimeout(t *testing.T) {
	log, err := runWait(t, 5*time.Second, brokerJob(2), brokerPod(0, true, nil), brokerPod(1, true, nil))
	if err != nil || !strings.Contains(log, "2 of 2 broker pods ready") {
		t.Errorf("all ready: %v, log %q", err, log)
	}
	log, err = runWait(t, 5*time.Second, brokerJob(2, batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}))
	if err != nil || !strings.Contains(log, "Job mc completed") {
		t.Errorf("completed: %v, log %q", err, log)
	}
	_, err = runWait(t, 5*time.Second, brokerJob(2, batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
		Reason: "PodFailurePolicy", Message: "Container flux for pod ns/mc-1 failed with exit code 78"}))
	if err == nil || !strings.Contains(err.Error(), "exit code 78") || !strings.Contains(err.Error(), "kubectl logs -n ns job/mc") {
		t.Errorf("failed Job: %v", err)
	}
	_, err = runWait(t, 100*time.Millisecond, brokerJob(2), brokerPod(0, true, nil),
		brokerPod(1, false, &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 of 2 broker pods ready; mc-1 (Pending: container keys ContainerCreating)") {
		t.Errorf("timeout: %v", err)
	}
}
