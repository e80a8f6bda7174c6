package wait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The messages are the API server's, as the Job controller records them; test/e2e makes the
// admission plugins and a webhook refuse the pods for real (TestCreateRefusalsNamed).

func failedCreate(job, uid, message string, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: job + "." + at.Format("150405.000"), Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: job, Namespace: "ns", UID: types.UID(uid)},
		Reason:         "FailedCreate", Type: corev1.EventTypeWarning, Message: message,
		LastTimestamp: metav1.NewTime(at),
	}
}

func TestWaitNamesRefusedPods(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name, message string
		want          []string
	}{
		{"pod security", `Error creating: pods "mc-0-x8k2p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (containers "flux", "flux-view" must set securityContext.allowPrivilegeEscalation=false), runAsNonRoot != true (pod or containers "flux", "flux-view" must set securityContext.runAsNonRoot=true)`,
			[]string{"the Job ns/mc cannot create its pods", `namespace ns enforces the "restricted" Pod Security Standard`, "allowPrivilegeEscalation != false", "-f values/restricted.yaml"}},
		{"limit range", `Error creating: pods "mc-0-x8k2p" is forbidden: maximum cpu usage per Container is 500m, but limit is 2`,
			[]string{"a LimitRange of namespace ns refuses the resources", "maximum cpu usage per Container is 500m", "kubectl describe limitrange -n ns"}},
		{"quota wants limits", `Error creating: pods "mc-0-x8k2p" is forbidden: failed quota: compute: must specify limits.cpu for: flux,keys; requests.cpu for: flux,keys,mine`,
			[]string{"a ResourceQuota of namespace ns wants every container to state", "must specify limits.cpu",
				"-f values/quota.yaml", "resources (flux, the brokers), keygen.sidecarResources (keys), the resources of mine (its entry in sidecars, initContainers or fluxContainers); or ask for a LimitRange with defaults"}},
		{"webhook", `Error creating: admission webhook "deny.example.com" denied the request: pods must carry label team`,
			[]string{"an admission webhook of the cluster denies the pods", "pods must carry label team", "validatingwebhookconfigurations"}},
		{"admission policy", `Error creating: pods "mc-0-x8k2p" is forbidden: ValidatingAdmissionPolicy 'no-big' with binding 'no-big' denied request: too many`,
			[]string{"a ValidatingAdmissionPolicy of the cluster denies the pods", "too many"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := brokerJob(2)
			job.UID = "u1"
			// An older event of another message, and one of an earlier Job of the same name.
			_, err := runWait(t, 5*time.Second, job,
				failedCreate("mc", "u1", "Error creating: Timeout: request did not complete", now.Add(-time.Minute)),
				failedCreate("mc", "u0", `Error creating: pods "x" is forbidden: exceeded quota: q`, now.Add(time.Minute)),
				failedCreate("mc", "u1", tc.message, now))
			var ce CreateError
			if !errors.As(err, &ce) {
				t.Fatalf("want a CreateError at once, got %v", err)
			}
			errorSays(t, err, tc.want)
		})
	}
}

// The keygen Job is looked at too: without it no broker ever gets its keys.
func TestWaitNamesRefusedKeygenPods(t *testing.T) {
	keygen := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mc-keygen", Namespace: "ns", UID: "k",
		Labels: map[string]string{"app.kubernetes.io/instance": "mc", "app.kubernetes.io/component": "keygen"}}}
	_, err := runWait(t, 5*time.Second, brokerJob(2), keygen,
		failedCreate("mc-keygen", "k", `Error creating: pods "mc-keygen-abc" is forbidden: minimum memory usage per Container is 1Gi, but request is 64Mi`, time.Now()))
	if err == nil || !strings.Contains(err.Error(), "the Job ns/mc-keygen cannot create its pods: a LimitRange") || !strings.Contains(err.Error(), "keygen.resources") {
		t.Errorf("keygen refused: %v", err)
	}
}

// A full ResourceQuota may empty: kube wait says so once and waits; a Job with all its pods, or
// one complete, is not looked at again for old events.
func TestWaitSaysQuotaFullAndWaits(t *testing.T) {
	job := brokerJob(3)
	job.UID = "u1"
	job.Status.Active = 2
	quota := `Error creating: pods "mc-2-abcde" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`
	log, err := runWait(t, 200*time.Millisecond, job, brokerPod(0, true, nil), brokerPod(1, true, nil), failedCreate("mc", "u1", quota, time.Now()))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout: a full quota is waited for", err)
	}
	want := `the Job mc cannot create more pods: a ResourceQuota of namespace ns is full ("pods \"mc-2-abcde\" is forbidden: exceeded quota: pods`
	if !strings.Contains(err.Error(), "2 of 3 broker pods ready; "+want) || !strings.Contains(err.Error(), "kubectl describe resourcequota -n ns") {
		t.Errorf("the error lacks %q:\n%v", want, err)
	}
	if n := strings.Count(log, want); n != 1 {
		t.Errorf("the log says it %d times, want once:\n%s", n, log)
	}

	// All pods made (the quota grew): the old event is history.
	job.Status.Active = 3
	if _, err := runWait(t, 100*time.Millisecond, job, brokerPod(0, true, nil), brokerPod(1, true, nil),
		brokerPod(2, false, &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}), failedCreate("mc", "u1", quota, time.Now())); err == nil || strings.Contains(err.Error(), "quota") {
		t.Errorf("all pods made: %v", err)
	}
}

func TestWaitSaysKueueNeverAdmits(t *testing.T) {
	job := brokerJob(3)
	job.UID = "u1"
	job.Labels[QueueLabel] = "brokers"
	job.Spec.Suspend = new(true)
	workload := func(reason string) []Workload {
		w := Workload{ObjectMeta: metav1.ObjectMeta{Name: "job-mc-1a2b", OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: "mc", UID: "u1"}}}}
		w.Status.Conditions = []metav1.Condition{{Type: "QuotaReserved", Status: metav1.ConditionFalse, Reason: reason,
			Message: "couldn't assign flavors to pod set main: insufficient quota for pods in flavor f, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"}}
		return []Workload{w}
	}
	run := func(ws []Workload) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		var log strings.Builder
		return Release(ctx, fake.NewClientset(job), Options{Namespace: "ns", Release: "mc", Poll: 10 * time.Millisecond,
			Workloads: func(context.Context, string) ([]Workload, error) { return ws, nil }}, &log)
	}
	err := run(workload(exceedsMaxQuota))
	var ke KueueError
	if !errors.As(err, &ke) || !strings.Contains(err.Error(), "Kueue will never admit the broker Job ns/mc") ||
		!strings.Contains(err.Error(), "> maximum capacity (2)") || !strings.Contains(err.Error(), "fewer brokers") {
		t.Errorf("exceeds max quota: %v", err)
	}
	// Waiting for quota others hold: waited for.
	if err := run(workload("WaitingForQuota")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting for quota: %v", err)
	}
}

// A refusal older than the Job's newest pod was fixed since (the Job made that pod after it):
// while a pod is being replaced, it is not reported.
func TestWaitIgnoresRefusalsBeforeTheNewestPod(t *testing.T) {
	job := brokerJob(2)
	job.UID = "u1"
	job.Status.Active = 1
	newPod := brokerPod(1, false, &corev1.ContainerStateWaiting{Reason: "ContainerCreating"})
	newPod.CreationTimestamp = metav1.NewTime(time.Now())
	old := failedCreate("mc", "u1", `Error creating: pods "mc-1-x" is forbidden: maximum cpu usage per Container is 500m, but limit is 1`, time.Now().Add(-10*time.Minute))
	_, err := runWait(t, 100*time.Millisecond, job, brokerPod(0, true, nil), newPod, old)
	var ce CreateError
	if errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a refusal from before the newest pod: %v, want a plain timeout", err)
	}
}

// When the deadline falls during an API call (a slow or loaded API server), the error still
// says what was pending, not only that the call ran out of time.
func TestWaitTimeoutDuringACallSaysWhatWasPending(t *testing.T) {
	job := brokerJob(3)
	job.UID = "u1"
	quota := `Error creating: pods "mc-0-abcde" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0`
	client := fake.NewClientset(job, failedCreate("mc", "u1", quota, time.Now()))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	rounds := 0
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if rounds++; rounds > 2 { // the first look and its create failures pass; the next one hangs
			<-ctx.Done()
			return true, nil, fmt.Errorf("client rate limiter Wait returned an error: %w", ctx.Err())
		}
		return false, nil, nil
	})
	err := Release(ctx, client, Options{Namespace: "ns", Release: "mc", Poll: 10 * time.Millisecond}, io.Discard)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "is not up: 0 of 3 broker pods ready; the Job mc cannot create more pods: a ResourceQuota") {
		t.Errorf("err = %v, want what was pending (the full quota) and the timeout", err)
	}
}
