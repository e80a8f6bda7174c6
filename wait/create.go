package wait

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateError says that a Job of the release cannot create its pods, and will not as the
// values are: the namespace's Pod Security level, a LimitRange, a ResourceQuota that wants
// limits, or an admission webhook or policy refuses them (the Job's FailedCreate event).
type CreateError struct {
	Job, Cause, Message, Fix string
}

func (e CreateError) Error() string {
	return fmt.Sprintf("the Job %s cannot create its pods: %s; the API server says %q; %s", e.Job, e.Cause, e.Message, e.Fix)
}

// jobCondition is true when the Job has condition t.
func jobCondition(job batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// createFailures looks, for each Job of the release (the brokers' and the keygen Job) that has
// fewer pods than it wants, at its newest FailedCreate event: a reason that the values must
// fix is a CreateError; one that may pass (a ResourceQuota that is full now, a webhook that
// does not answer) is returned to be said on log, and waited for. A user who may not list
// events gets no more than before.
func createFailures(ctx context.Context, client kubernetes.Interface, ns, selector string) (string, error) {
	jobs, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "", fmt.Errorf("listing the Jobs of %s in %s: %w", selector, ns, err)
	}
	var short []batchv1.Job
	for _, job := range jobs.Items {
		if job.Spec.Suspend != nil && *job.Spec.Suspend || jobCondition(job, batchv1.JobComplete) || jobCondition(job, batchv1.JobFailed) {
			continue
		}
		want := int32(1)
		if job.Spec.Parallelism != nil {
			want = *job.Spec.Parallelism
		}
		if job.Status.Active+job.Status.Succeeded < want {
			short = append(short, job)
		}
	}
	if len(short) == 0 {
		return "", nil
	}
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate,involvedObject.kind=Job"})
	if err != nil {
		return "", nil
	}
	// A refusal older than the Job's newest pod is history (a quota since raised, a LimitRange
	// since widened): the Job has made a pod after it. Events live an hour.
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "", fmt.Errorf("listing the pods of %s in %s: %w", selector, ns, err)
	}
	newest := map[string]time.Time{}
	for _, p := range pods.Items {
		job := p.Labels["batch.kubernetes.io/job-name"]
		if t := p.CreationTimestamp.Time; t.After(newest[job]) {
			newest[job] = t
		}
	}
	var tell []string
	for _, job := range short {
		var last *corev1.Event
		for i, e := range events.Items {
			if e.Reason == "FailedCreate" && e.InvolvedObject.Kind == "Job" && e.InvolvedObject.Name == job.Name &&
				(e.InvolvedObject.UID == "" || e.InvolvedObject.UID == job.UID) &&
				(last == nil || eventTime(e).After(eventTime(*last))) {
				last = &events.Items[i]
			}
		}
		if last == nil || eventTime(*last).Before(newest[job.Name]) { // same second: current (timestamps are in seconds)
			continue
		}
		if err := refused(ns, job.Name, last.Message); err != nil {
			return "", err
		}
		tell = append(tell, waitable(ns, job.Name, last.Message))
	}
	return strings.Join(tell, "; "), nil
}

// podSecurityLevel is the level in the PodSecurity admission's message: violates PodSecurity "restricted:latest".
var podSecurityLevel = regexp.MustCompile(`violates PodSecurity "([a-z]+)(:[^"]*)?"`)

// refused is the CreateError for a FailedCreate message that only a change of values (or of the
// namespace's policies) can fix, or nil.
func refused(ns, job, message string) error {
	msg := strings.TrimPrefix(message, "Error creating: ")
	has := func(s string) bool { return strings.Contains(msg, s) }
	e := CreateError{Job: ns + "/" + job, Message: msg}
	switch {
	case has("violates PodSecurity"):
		level := "restricted"
		if m := podSecurityLevel.FindStringSubmatch(msg); m != nil {
			level = m[1]
		}
		e.Cause = fmt.Sprintf("namespace %s enforces the %q Pod Security Standard (label pod-security.kubernetes.io/enforce) and the pods break it", ns, level)
		e.Fix = "install with -f values/restricted.yaml (every container non-root, no privilege escalation, all capabilities dropped, seccomp RuntimeDefault: docs/shared-clusters.md) " +
			"and without the values that ask for what it forbids (hostIPC, hostPID, a privileged securityContext, added capabilities, hostPath volumes), or use a namespace that does not enforce it"
	case has("exceeded quota"):
		return nil // full now: it may empty (waitable)
	case has("failed quota") && has("must specify"):
		e.Cause = fmt.Sprintf("a ResourceQuota of namespace %s wants every container to state the resources it names, and some do not", ns)
		e.Fix = fmt.Sprintf("give them requests and limits (-f values/quota.yaml gives the chart's own containers theirs): %s; or ask for a LimitRange with defaults for containers that state none (kubectl describe resourcequota,limitrange -n %s)",
			strings.Join(resourceValues(msg), ", "), ns)
	case has(" usage per Container is") || has(" usage per Pod is") || has("limit to request ratio per") || has("must be less than or equal to"):
		e.Cause = fmt.Sprintf("a LimitRange of namespace %s refuses the resources of the pods", ns)
		e.Fix = fmt.Sprintf("set %s within its bounds (kubectl describe limitrange -n %s), or ask its owner to widen them", everyResourceValue, ns)
	case has("admission webhook") && has("denied the request"):
		e.Cause = "an admission webhook of the cluster denies the pods"
		e.Fix = "change the values it objects to (its message says what), or ask the cluster's administrators about its policy (kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations)"
	case has("ValidatingAdmissionPolicy") && has("denied request"):
		e.Cause = "a ValidatingAdmissionPolicy of the cluster denies the pods"
		e.Fix = "change the values it objects to (its message says what), or ask the cluster's administrators about its policy (kubectl get validatingadmissionpolicies)"
	default:
		return nil
	}
	return e
}

// everyResourceValue names the values that give the chart's containers their resources.
const everyResourceValue = "resources (the brokers), keygen.resources, keygen.sidecarResources and flux.view.resources (mode copy)"

// quotaContainers lists the containers in a ResourceQuota's "must specify limits.cpu for: flux,keys; ..." message.
var quotaContainers = regexp.MustCompile(` for: ([^;]+)`)

// resourceValues names the chart value that gives resources to each container a ResourceQuota's
// message lists, in the order they first appear.
func resourceValues(msg string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range quotaContainers.FindAllStringSubmatch(msg, -1) {
		for _, name := range strings.Split(m[1], ",") {
			name = strings.TrimSpace(name)
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			value := fmt.Sprintf("the resources of %s (its entry in sidecars, initContainers or fluxContainers)", name)
			switch name {
			case "flux":
				value = "resources (flux, the brokers)"
			case "keys":
				value = "keygen.sidecarResources (keys)"
			case "flux-view":
				value = "flux.view.resources (flux-view)"
			case "keygen":
				value = "keygen.resources (keygen)"
			}
			out = append(out, value)
		}
	}
	if out == nil {
		out = []string{everyResourceValue}
	}
	return out
}

// waitable says what a FailedCreate that may pass is, with the fix.
func waitable(ns, job, message string) string {
	msg := strings.TrimPrefix(message, "Error creating: ")
	switch {
	case strings.Contains(msg, "exceeded quota"):
		return fmt.Sprintf("the Job %s cannot create more pods: a ResourceQuota of namespace %s is full (%q); waiting for it to free up: "+
			"kubectl describe resourcequota -n %s shows what uses it; ask for more quota, lower resources, or resize to fewer brokers", job, ns, msg, ns)
	case strings.Contains(msg, "failed calling webhook"):
		return fmt.Sprintf("the Job %s cannot create its pods: an admission webhook does not answer (%q); it retries: the cluster's administrators can say why the webhook is down", job, msg)
	}
	return fmt.Sprintf("the Job %s cannot create its pods yet: %q; it retries", job, msg)
}

// withCreateFailures adds to st why a Job of the release cannot create its pods (the Job's
// FailedCreate events), or why Kueue will never admit it, or returns that as the error.
func withCreateFailures(ctx context.Context, client kubernetes.Interface, opts Options, selector string, st status) (status, error) {
	tell, err := createFailures(ctx, client, opts.Namespace, selector)
	if err != nil {
		return st, err
	}
	if opts.Workloads != nil {
		if err := neverAdmitted(ctx, client, opts, selector); err != nil {
			return st, err
		}
	}
	if tell != "" {
		st.tell = strings.TrimPrefix(st.tell+"; "+tell, "; ")
		st.state += "; " + tell
	}
	return st, nil
}
