package wait

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
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
			"app.kubernetes.io/instance": "mc", "batch.kubernetes.io/job-name": "mc", indexLabel: strconv.Itoa(i)}},
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
			errorSays(t, err, tc.want)
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

// After a shrink to 2 the lead's Flux counts broker 2 up until its pod stops: kube wait waits
// for it, and returns once it has stopped or gone.
func TestWaitForBrokersBeyondSizeToStop(t *testing.T) {
	leaving := brokerPod(2, true, nil)
	leaving.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	_, err := runWait(t, 100*time.Millisecond, brokerJob(2), brokerPod(0, true, nil), brokerPod(1, true, nil), leaving)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "2 of 2 broker pods ready; 1 beyond size 2 still stopping (mc-2)") {
		t.Errorf("a removed broker still running: %v", err)
	}
	leaving.Status.Phase = corev1.PodSucceeded
	if log, err := runWait(t, 5*time.Second, brokerJob(2), brokerPod(0, true, nil), brokerPod(1, true, nil), leaving); err != nil || !strings.Contains(log, "2 of 2 broker pods ready") {
		t.Errorf("a removed broker stopped: %v, log %q", err, log)
	}
}

// Broker pods that no node can take (the scheduler's PodScheduled=False, Unschedulable): kube
// wait says so once on its log with the scheduler's reason, keeps waiting (nodes may yet come),
// and its timeout error names them, the reason and the fix. Other pending pods are named, at
// most five.
func TestWaitSaysWhenNoNodeFits(t *testing.T) {
	const reason = "0/11 nodes are available: 1 Too many pods, 10 node(s) didn't match Pod's node affinity/selector. preemption: 0/11 nodes are available: 11 Preemption is not helpful for scheduling."
	objs := []runtime.Object{brokerJob(120)}
	for i := range 120 {
		p := brokerPod(i, i < 100, nil)
		if i >= 110 {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: reason}}
		}
		objs = append(objs, p)
	}
	log, err := runWait(t, 300*time.Millisecond, objs...)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout: pods that do not fit yet are waited for", err)
	}
	for _, want := range []string{
		"100 of 120 broker pods ready",
		`10 broker pods Pending because no node fits them; the scheduler says (pod mc-110): "` + reason + `"`,
		"make room for 120 broker pods", "or resize to fewer brokers",
		"mc-100 (Pending), mc-101 (Pending), mc-102 (Pending), mc-103 (Pending), mc-104 (Pending), and 5 more",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "mc-105") || strings.Contains(err.Error(), "mc-111") {
		t.Errorf("the error names more than five waiting pods, or an unschedulable pod as waiting:\n%v", err)
	}
	if n := strings.Count(log, "no node fits"); n != 1 || !strings.Contains(log, reason) {
		t.Errorf("the log says %d times that no node fits (want once, with the scheduler's reason):\n%s", n, log)
	}
}

// A broker Job that Kueue holds (queue.name set, not yet admitted) has no pods: kube wait says
// once that it waits for admission, in which LocalQueue, and keeps waiting; its timeout error
// says the same. A Job suspended without a queue label is named as such, with how to resume it.
func TestWaitSaysSuspendedByKueue(t *testing.T) {
	queued := brokerJob(6)
	queued.Labels[QueueLabel] = "brokers"
	queued.Spec.Suspend = new(true)
	log, err := runWait(t, 200*time.Millisecond, queued)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout: a queued MiniCluster is waited for", err)
	}
	want := "the broker Job mc is suspended by Kueue, waiting for admission in LocalQueue brokers"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "kubectl get workloads -n ns") {
		t.Errorf("the error lacks %q and kubectl get workloads:\n%v", want, err)
	}
	if n := strings.Count(log, want); n != 1 {
		t.Errorf("the log says %d times that the Job waits for admission (want once):\n%s", n, log)
	}

	plain := brokerJob(6)
	plain.Spec.Suspend = new(true)
	if _, err := runWait(t, 100*time.Millisecond, plain); err == nil || !strings.Contains(err.Error(), "the broker Job mc is suspended: no pods until it is resumed") {
		t.Errorf("suspended without a queue: %v", err)
	}
	// Admitted: Kueue resumes the Job and its pods count as before.
	queued.Spec.Suspend = new(false)
	if log, err := runWait(t, 5*time.Second, queued, brokerPod(0, true, nil), brokerPod(1, true, nil), brokerPod(2, true, nil),
		brokerPod(3, true, nil), brokerPod(4, true, nil), brokerPod(5, true, nil)); err != nil || !strings.Contains(log, "6 of 6 broker pods ready") {
		t.Errorf("admitted: %v, log %q", err, log)
	}
}

// A resize past the queue's quota: the new brokers' pods wait on Kueue's scheduling gate while
// the others run; kube wait says so once and keeps waiting.
func TestWaitSaysWhenKueueHoldsANewSize(t *testing.T) {
	job := brokerJob(8)
	job.Labels[QueueLabel] = "brokers"
	objs := []runtime.Object{job}
	for i := range 8 {
		p := brokerPod(i, i < 6, nil)
		if i >= 6 {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: ElasticJobGate}}
		}
		objs = append(objs, p)
	}
	log, err := runWait(t, 200*time.Millisecond, objs...)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	want := "2 broker pods (mc-6...) wait for Kueue to admit size 8: LocalQueue brokers has no quota for them yet"
	if !strings.Contains(err.Error(), "6 of 8 broker pods ready; "+want) {
		t.Errorf("the error lacks %q:\n%v", want, err)
	}
	if n := strings.Count(log, want); n != 1 {
		t.Errorf("the log says it %d times, want once:\n%s", n, log)
	}
}

// errorSays fails t for each of want that err's message lacks.
func errorSays(t *testing.T, err error, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}
