// Package wait is what a user runs after helm install or upgrade (`minicluster wait`):
// Release watches the release's pods until its MiniCluster is up, and says at once, with the
// fix, when a container cannot pull its image (PullError) or the Job fails, which Helm cannot
// report for a Job, or that a PersistentVolumeClaim the brokers mount stays Pending and why
// (claims.go). It only reads.
package wait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/podutils"
)

// Options name the release whose MiniCluster Release waits for.
type Options struct {
	Namespace, Release string
	Poll               time.Duration // how often to look (default 1s)
	// Workloads lists Kueue's Workloads of a namespace (KueueWorkloads); nil: not looked at.
	Workloads func(ctx context.Context, ns string) ([]Workload, error)
}

func (o *Options) Validate() error {
	if o.Release == "" {
		return errors.New("--release is required: the Helm release to wait for")
	}
	if o.Namespace == "" {
		return errors.New("--namespace is empty: give the release's namespace")
	}
	return nil
}

// PullError says that a container of the release cannot get its image, or the image of an
// image volume it mounts (Volume), and what to do.
type PullError struct {
	Pod, Container, Volume, Image, Reason, Message string
}

func (e PullError) Error() string {
	who := "container " + e.Container
	if e.Volume != "" {
		who = fmt.Sprintf("image volume %s (of container %s)", e.Volume, e.Container)
	}
	return fmt.Sprintf("pod %s %s cannot pull image %q (%s: %s): %s", e.Pod, who, e.Image, e.Reason, e.Message, e.fix())
}

// pullReasons are the kubelet's waiting reasons for an image it cannot get.
var pullReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}

// value names the chart value that sets a container's image.
func (e PullError) value() string {
	if e.Volume == "flux-view" {
		return "flux.view.image"
	}
	switch e.Container {
	case "keygen", "keys":
		return "imageRegistry (or keygen.image.repository and keygen.image.tag)"
	case "flux-view":
		return "flux.view.image"
	case "flux":
		return "image"
	}
	return "the image values"
}

// fix tells, from the kubelet's message, whether the image is missing, the registry refuses the
// credentials, or the registry cannot be reached.
func (e PullError) fix() string {
	m := strings.ToLower(e.Message)
	has := func(words ...string) bool {
		return slices.ContainsFunc(words, func(w string) bool { return strings.Contains(m, w) })
	}
	switch {
	case e.Reason == "InvalidImageName":
		return "the reference is not a valid image name; set " + e.value() + " to registry/path:tag"
	case e.Reason == "ErrImageNeverPull":
		// Kubernetes 1.35+ says the same of an image loaded by hand whose image ID its kubelet pulled under another name.
		return "imagePullPolicy is Never and the node does not have it, or has it loaded by hand but pulled the same image under another name (docs/images.md, \"Images loaded by hand\"); load it onto the nodes or set the pull policy to IfNotPresent"
	case has("unauthorized", "denied", "forbidden", "401", "403", "authentication required"):
		return "the registry refuses the credentials; give imagePullSecrets a Secret that can read it (kubectl create secret docker-registry NAME --docker-server=... --docker-username=... --docker-password=...)"
	case has("not found", "manifest unknown", "name unknown", "404"):
		return "that registry has no such image or tag; push it there (make push REGISTRY=...) or set " + e.value() + " to an image that exists"
	case has("no such host", "connection refused", "i/o timeout", "dial tcp", "no route to host", "server gave http response to https client", "x509"):
		return "the cluster cannot reach that registry; set " + e.value() + " to a registry the nodes can pull from (and configure plain HTTP or its CA on the nodes if it needs that)"
	}
	return "make sure it exists in a registry the nodes can reach, set " + e.value() + " to it, and give imagePullSecrets if the registry needs credentials"
}

// Release polls the release's pods until its MiniCluster is up (every broker pod of the Job is
// Ready, or the Job completed) and returns nil; it returns a PullError as soon as a container
// of the release cannot pull its image, an error naming the reason when the Job fails, and on
// timeout (ctx) an error that says what is still pending. Pods that no node can take are said
// so on log as soon as the scheduler says why (and again when its reason changes), but waited
// for: a cluster autoscaler, or pods of another release going away, may yet make room.
func Release(ctx context.Context, client kubernetes.Interface, opts Options, log io.Writer) error {
	poll := opts.Poll
	if poll <= 0 {
		poll = time.Second
	}
	selector := "app.kubernetes.io/instance=" + opts.Release // the release's objects
	pending, told, toldClaims := "nothing listed yet", "", ""
	notUp := func() error {
		return fmt.Errorf("release %s/%s is not up: %s (%w)", opts.Namespace, opts.Release, pending, ctx.Err())
	}
	for {
		st, err := look(ctx, client, opts.Namespace, selector)
		if err != nil && ctx.Err() != nil {
			return notUp() // the deadline fell during a call: say what was pending, not the call
		}
		if err != nil {
			return err
		}
		if st.done {
			fmt.Fprintf(log, "wait: release %s/%s: %s\n", opts.Namespace, opts.Release, st.state)
			return nil
		}
		if st, err = withCreateFailures(ctx, client, opts, selector, st); err != nil {
			if ctx.Err() != nil {
				return notUp()
			}
			return err
		}
		if st.tell != "" && st.tell != told {
			fmt.Fprintf(log, "wait: release %s/%s: %s\n", opts.Namespace, opts.Release, st.tell)
		}
		if st.claims != "" && st.claims != toldClaims {
			fmt.Fprintf(log, "wait: release %s/%s: %s\n", opts.Namespace, opts.Release, st.claims)
		}
		toldClaims = st.claims
		pending, told = st.state, st.tell
		select {
		case <-ctx.Done():
			return notUp()
		case <-time.After(poll):
		}
	}
}

// status is what one look at the release found: done, or what is pending; tell is what to say
// on log as soon as it is seen (and again when it changes): which broker pods no node can take
// and why, or that the Job waits in a queue (empty when neither).
type status struct {
	done                bool
	state, tell, claims string
}

// QueueLabel is the label that puts a Job in a Kueue LocalQueue (the chart's queue.name).
const QueueLabel = "kueue.x-k8s.io/queue-name"

// indexLabel is the label the Job controller gives each pod of an indexed Job: its index.
const indexLabel = "batch.kubernetes.io/job-completion-index"

// shownPods is how many waiting pods a state names; a MiniCluster of 1,000 would give a page.
const shownPods = 5

// look reads the release's broker Job and pods once; selector is the label selector of the
// release's objects.
func look(ctx context.Context, client kubernetes.Interface, ns, selector string) (status, error) {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return status{}, fmt.Errorf("listing the pods of %s in %s: %w", selector, ns, err)
	}
	for _, p := range pods.Items {
		if err := pullFailure(p); err != nil {
			return status{}, err
		}
	}
	jobs, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: selector + ",app.kubernetes.io/component=broker"})
	if err != nil {
		return status{}, fmt.Errorf("listing the broker Job of %s in %s: %w", selector, ns, err)
	}
	if len(jobs.Items) != 1 {
		return status{state: fmt.Sprintf("%d broker Jobs with label %s", len(jobs.Items), selector)}, nil
	}
	job := jobs.Items[0]
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return status{done: true, state: "Job " + job.Name + " completed"}, nil
		case batchv1.JobFailed:
			return status{}, fmt.Errorf("the broker Job %s/%s failed (%s): %s; kubectl logs -n %s job/%s shows the brokers' messages", ns, job.Name, c.Reason, c.Message, ns, job.Name)
		}
	}
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		// No pods until Kueue admits the Job (or whoever suspended it resumes it).
		st := status{state: fmt.Sprintf(`the broker Job %s is suspended: no pods until it is resumed (kubectl patch job %s -n %s -p '{"spec":{"suspend":false}}')`, job.Name, job.Name, ns)}
		if q := job.Labels[QueueLabel]; q != "" {
			st.state = fmt.Sprintf("the broker Job %s is suspended by Kueue, waiting for admission in LocalQueue %s (no pods until its ClusterQueue has quota for all the brokers; kubectl get workloads -n %s says why it waits)", job.Name, q, ns)
		}
		st.tell = st.state
		return st, nil
	}
	want := 1
	if job.Spec.Parallelism != nil {
		want = int(*job.Spec.Parallelism)
	}
	ready, waiting, leaving := 0, []string{}, []string{}
	var stuck, held []corev1.Pod
	for _, p := range pods.Items {
		if p.Labels["batch.kubernetes.io/job-name"] != job.Name {
			continue
		}
		// After a shrink the lead's Flux counts a removed broker up until its pod stops running.
		if i, err := strconv.Atoi(p.Labels[indexLabel]); err == nil && i >= want && p.Status.Phase == corev1.PodRunning {
			leaving = append(leaving, p.Name)
			continue
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		switch {
		case podutils.IsPodReady(&p):
			ready++
		case len(p.Spec.SchedulingGates) > 0:
			held = append(held, p)
		case unschedulable(p) != nil:
			stuck = append(stuck, p)
		default:
			waiting = append(waiting, p.Name+" "+podState(p))
		}
	}
	st := status{state: fmt.Sprintf("%d of %d broker pods ready", ready, want)}
	if len(leaving) > 0 {
		slices.Sort(leaving)
		st.state += fmt.Sprintf("; %d beyond size %d still stopping (%s)", len(leaving), want, strings.Join(leaving, ", "))
	} else if ready >= want {
		st.done = true
		return st, nil
	}
	// A claim the pods mount (flux.state) that stays Pending: say why, rather than that no
	// node fits them (the scheduler's "unbound immediate PersistentVolumeClaims").
	if len(stuck)+len(waiting) > 0 {
		if st.claims, err = claims(ctx, client, ns, pods.Items); err != nil {
			return status{}, err
		}
	}
	if st.claims != "" {
		st.state += "; " + st.claims
	} else if len(stuck) > 0 {
		st.tell = noNodeFits(stuck, want)
		st.state += "; " + st.tell
	}
	if len(held) > 0 {
		gated := gatedPods(held, want, job.Labels[QueueLabel], ns)
		st.tell = strings.TrimPrefix(st.tell+"; "+gated, "; ")
		st.state += "; " + gated
	}
	if len(waiting) > 0 {
		slices.Sort(waiting)
		if n := len(waiting); n > shownPods {
			waiting = append(waiting[:shownPods], fmt.Sprintf("and %d more", n-shownPods))
		}
		st.state += "; " + strings.Join(waiting, ", ")
	}
	return st, nil
}

// unschedulable is the pod's PodScheduled condition when the scheduler found no node for it.
func unschedulable(p corev1.Pod) *corev1.PodCondition {
	if p.Status.Phase != corev1.PodPending {
		return nil
	}
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// noNodeFits says how many broker pods no node can take, with the scheduler's reason (the
// message of the first such pod by name: they share a template) and what to do.
func noNodeFits(stuck []corev1.Pod, size int) string {
	slices.SortFunc(stuck, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	c := unschedulable(stuck[0])
	return fmt.Sprintf("%d broker pods Pending because no node fits them; the scheduler says (pod %s): %q; "+
		"make room for %d broker pods (more or larger nodes, or fewer other pods; check nodeSelector, tolerations and resources), or resize to fewer brokers",
		len(stuck), stuck[0].Name, strings.TrimSpace(c.Message), size)
}

// ElasticJobGate is the scheduling gate Kueue puts on the pods of an elastic Job until it
// admits them: on a resize, the new brokers' pods wait on it for quota.
const ElasticJobGate = "kueue.x-k8s.io/elastic-job"

// gatedPods says how many broker pods wait on a scheduling gate, which one, and, for Kueue's,
// that the queue has no quota yet for the new size.
func gatedPods(held []corev1.Pod, size int, queue, ns string) string {
	slices.SortFunc(held, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	gate := held[0].Spec.SchedulingGates[0].Name
	if gate == ElasticJobGate {
		return fmt.Sprintf("%d broker pods (%s...) wait for Kueue to admit size %d: LocalQueue %s has no quota for them yet, while the other brokers run "+
			"(kubectl get workloads -n %s says why; resize to fewer brokers to cancel)", len(held), held[0].Name, size, queue, ns)
	}
	return fmt.Sprintf("%d broker pods (%s...) are held by the scheduling gate %s, which whoever set it must remove", len(held), held[0].Name, gate)
}

// pullQPSExceeded is the kubelet's message for a pull it throttled.
const pullQPSExceeded = "pull QPS exceeded"

func pullFailure(p corev1.Pod) error {
	statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		w := s.State.Waiting
		if w == nil {
			continue
		}
		if slices.Contains(pullReasons, w.Reason) {
			// The kubelet's own pull rate limit (registryPullQPS, 5 a second by default) says
			// nothing about the image: it pulls again after a back-off. Many containers pulled
			// at once with imagePullPolicy Always (three a broker pod) reach it.
			if strings.Contains(w.Message, pullQPSExceeded) {
				continue
			}
			e := PullError{Pod: p.Name, Container: s.Name, Image: s.Image, Reason: w.Reason, Message: w.Message}
			if volume, ref := imageVolume(p, w.Message); volume != "" {
				e.Volume, e.Image = volume, ref
			}
			return e
		}
		// A runtime without image volumes (containerd before 2.1) gets an empty mount source
		// for one and fails to create the container, again and again.
		if w.Reason == "CreateContainerError" && hasImageVolume(p) && strings.Contains(w.Message, `mkdir ""`) {
			return fmt.Errorf("pod %s container %s cannot be created (%s: %s): the node's container runtime cannot mount image volumes (containerd 2.1 or later and CRI-O 1.31 or later can); install with flux.view.mode=copy",
				p.Name, s.Name, w.Reason, w.Message)
		}
	}
	return nil
}

// imageVolume is the image volume a kubelet message is about: the kubelet reports a volume's
// pull failure on the containers that mount it, under the container's own image.
func imageVolume(p corev1.Pod, message string) (name, ref string) {
	for _, v := range p.Spec.Volumes {
		if v.Image != nil && strings.Contains(message, `"`+v.Image.Reference+`"`) {
			return v.Name, v.Image.Reference
		}
	}
	return "", ""
}

func hasImageVolume(p corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Image != nil })
}

// podState is a short account of why a pod is not ready: its phase and the first waiting
// container's reason.
func podState(p corev1.Pod) string {
	statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return fmt.Sprintf("(%s: container %s %s)", p.Status.Phase, s.Name, w.Reason)
		}
	}
	return "(" + string(p.Status.Phase) + ")"
}
