package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minicluster/minicluster/internal/kubeclient"
	"github.com/minicluster/minicluster/wait"
)

const waitLong = `wait is what a user runs after helm install or upgrade: it watches the release's pods until
the MiniCluster is up (every broker pod of its Job ready, or the Job completed) and exits 0.
It exits 1 at once, naming the pod, the container, the image and the fix, when a container
cannot pull its image (a wrong registry, a missing tag, a pull secret that does not work), and
when the Job fails, and when a PersistentVolumeClaim the brokers mount (flux.state) or its
storage class does not exist; a claim that stays Pending is said with why (the storage class's
provisioner, the volume controller's events). A MiniCluster that Kueue queues (queue.name) has no
pods until Kueue admits it: wait says so, names the LocalQueue, and keeps waiting, as it does for
the new brokers of a resize the queue has no quota for yet; a Workload that asks for more than
its ClusterQueue can ever hold (Kueue's ExceedsMaxQuota) exits 1 at once. When the Job cannot
create its pods (its FailedCreate events) it exits 1 at once with the fix if the namespace's Pod
Security level, a LimitRange, a ResourceQuota that wants limits, or an admission webhook or
policy refuses them, and says so and waits when a ResourceQuota is full for now. On --timeout it
says what is still pending. Helm cannot say this itself:
Helm 3 does not wait for Jobs without --wait-for-jobs, and Helm 4 counts a started Job as ready.

It lists pods, Jobs, PersistentVolumeClaims and events in the namespace (and reads storage
classes and Kueue's Workloads when it may), and changes nothing.`

// NewWaitCmd is `minicluster wait RELEASE`. --release (hidden) names the release too, as the
// deprecated `flux-keygen kube wait --release R` did.
func NewWaitCmd(e Env) *cobra.Command {
	var o wait.Options
	var kubeconfig string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait RELEASE",
		Short: "Wait until a release's MiniCluster is up, or say at once why it cannot come up",
		Long:  waitLong,
		Example: `  helm install flux-sample ./charts/minicluster -n hpc
  minicluster wait flux-sample -n hpc --timeout 5m`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if o.Release != "" && o.Release != args[0] {
					return UsageError{errors.New("give the release once: as RELEASE or as --release")}
				}
				o.Release = args[0]
			}
			if o.Release == "" {
				return UsageError{fmt.Errorf("no release to wait for (usage: %s)", cmd.UseLine())}
			}
			return waitFor(cmd.Context(), e, o, kubeconfig, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Namespace, "namespace", "n", "", "`NAMESPACE` of the release (default $POD_NAMESPACE, else the kubeconfig context's)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	f.StringVar(&o.Release, "release", "", "the Helm release, as RELEASE")
	_ = f.MarkHidden("release") // one way shown; the old one still read
	return cmd
}

// waitFor fills in the namespace and the kubeconfig as kubectl picks them (in a pod: its own
// namespace and service account), then waits at most timeout.
func waitFor(ctx context.Context, e Env, o wait.Options, kubeconfig string, timeout time.Duration) error {
	if o.Namespace == "" {
		o.Namespace = e.Getenv("POD_NAMESPACE")
	}
	if kubeconfig == "" {
		kubeconfig = e.Getenv("KUBECONFIG")
	}
	if kubeconfig == "" && e.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		kubeconfig = clientcmd.RecommendedHomeFile // ~/.kube/config, as kubectl
	}
	if o.Namespace == "" {
		o.Namespace = kubeclient.ContextNamespace(kubeconfig)
	}
	if err := o.Validate(); err != nil {
		return UsageError{err}
	}
	client, err := e.NewClient(kubeconfig)
	if err != nil {
		return err
	}
	if rc := client.Discovery().RESTClient(); rc != nil {
		o.Workloads = wait.KueueWorkloads(rc)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return wait.Release(ctx, client, o, e.Stdout)
}
