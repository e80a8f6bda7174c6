package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minicluster/minicluster/keygen/wait"
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

func newWaitCmd(e env) *cobra.Command {
	var o wait.Options
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "wait --release NAME [--namespace NS] [--timeout 5m]",
		Short: "Wait until a release's MiniCluster is up; report an image that cannot be pulled",
		Long:  waitLong,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			api.defaults(e, &o.Namespace)
			if api.kubeconfig == "" && e.getenv("KUBERNETES_SERVICE_HOST") == "" {
				api.kubeconfig = clientcmd.RecommendedHomeFile // ~/.kube/config, as kubectl
			}
			if o.Namespace == "" {
				o.Namespace = contextNamespace(api.kubeconfig)
			}
			return api.run(cmd, e, o.Validate, func(ctx context.Context, client kubernetes.Interface) error {
				if rc := client.Discovery().RESTClient(); rc != nil {
					o.Workloads = wait.KueueWorkloads(rc)
				}
				return wait.Release(ctx, client, o, e.stdout)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Release, "release", "", "Helm release name (required)")
	api.add(f, &o.Namespace, 5*time.Minute)
	// A user's defaults, as kubectl's, not a pod's.
	f.Lookup("namespace").Usage = "namespace of the release (default $POD_NAMESPACE, else the kubeconfig context's)"
	f.Lookup("kubeconfig").Usage = "kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)"
	return cmd
}
