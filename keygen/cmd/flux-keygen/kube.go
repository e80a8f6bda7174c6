package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/minicluster/minicluster/internal/kubeclient"
	"github.com/minicluster/minicluster/keygen/kube"
)

const kubeLong = `kube creates the CURVE certificate of a minicluster release in Kubernetes, and with --munge
its munge key; the chart's keygen Job runs it. ` + "`flux-keygen sidecar`" + ` is the broker pods' side.

The certificate goes under the key curve.cert of the Secret --curve-name (default
<release>-curve). A Secret is the default because the file holds the private key that every
broker authenticates with: Kubernetes keeps Secrets apart from ConfigMaps in RBAC (and can
encrypt them at rest), so whoever may read ConfigMaps in the namespace cannot join or listen
to the MiniCluster. --storage=ConfigMap reproduces the Flux Operator's layout for setups
that need it. --munge also creates the Secret --munge-name (default <release>-munge) with
munge.key, 1024 random bytes. --api-name creates (or fills) the Secret of the chart's API
credentials: user, token and secret-key, random, kept once made.

The chart renders these objects without data, with the release, and runs this command in a
Job of the release at the same time: it reads each object and writes the key into it when it
has none (an update that fails if the object changed since it was read, so a concurrent
writer never loses a key). Helm owns the object, keeps its data on upgrade (it never renders
any) and deletes it on helm uninstall. Outside the chart a missing object is created, with
Helm's ownership metadata (label app.kubernetes.io/managed-by=Helm, annotations
meta.helm.sh/release-name and meta.helm.sh/release-namespace) and the chart's labels.

A key is never overwritten: an existing valid object is kept (a retried Job keeps the key
the brokers use), the release's data-less object is filled, and anything else is an error
that says what is wrong and how to recover. In the chart the Job's Role has only get and
update on these names.

The namespace defaults to $POD_NAMESPACE. Without --kubeconfig (or $KUBECONFIG) it uses the
in-cluster service account.`

func newKubeCmd(e env) *cobra.Command {
	var o kube.Options
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "kube --release R [--namespace NS] (--curve-name N --storage Secret|ConfigMap | --skip-curve) [--munge --munge-name M] [--api-name A]",
		Short: "Create the certificate (and munge key) objects of a release, idempotently",
		Long:  kubeLong,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.SkipCurve && (cmd.Flags().Changed("curve-name") || cmd.Flags().Changed("storage")) {
				return usageError{errors.New("--skip-curve leaves the certificate to the user: drop --curve-name and --storage")}
			}
			api.defaults(e, &o.Namespace)
			if host, err := e.hostname(); err == nil {
				o.Hostname = host
			}
			o.Version, o.Now = version, e.now
			return api.run(cmd, e, o.Validate, func(ctx context.Context, client kubernetes.Interface) error {
				_, err := kube.Run(ctx, client, o, e.stdout)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Release, "release", "", "Helm release name (required)")
	api.add(f, &o.Namespace, 2*time.Minute)
	f.StringVar(&o.CurveName, "curve-name", "", "name of the certificate object (default <release>-curve)")
	f.StringVar(&o.Storage, "storage", kube.StorageSecret, "kind of the certificate object: Secret or ConfigMap")
	f.BoolVar(&o.SkipCurve, "skip-curve", false, "do not create the certificate (the chart's curve.existingSecret)")
	f.BoolVar(&o.Munge, "munge", false, "also create the munge key Secret")
	f.StringVar(&o.MungeName, "munge-name", "", "name of the munge key Secret (default <release>-munge)")
	f.StringVar(&o.APIName, "api-name", "", "also create the Secret of the API's credentials with this name")
	cmd.AddCommand(newWaitCmd(e))
	return cmd
}

// newClient connects as flux-keygen with a kubeconfig when given one, else as the pod's service
// account; outside a pod without a kubeconfig it was called wrongly (exit 2).
func newClient(kubeconfig string) (kubernetes.Interface, error) {
	c, err := kubeclient.New(kubeconfig, "flux-keygen/"+version)
	if errors.Is(err, kubeclient.ErrNotInCluster) {
		return nil, usageError{err}
	}
	return c, err
}

// apiFlags are the flags and defaults of the commands that talk to the API server.
type apiFlags struct {
	kubeconfig string
	timeout    time.Duration
}

func (a *apiFlags) add(f *pflag.FlagSet, namespace *string, timeout time.Duration) {
	f.StringVar(namespace, "namespace", "", "namespace of the release (default $POD_NAMESPACE)")
	f.StringVar(&a.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else the in-cluster service account)")
	f.DurationVar(&a.timeout, "timeout", timeout, "give up after this long")
}

// defaults takes the namespace and kubeconfig from the environment where no flag gave them.
func (a *apiFlags) defaults(e env, namespace *string) {
	if *namespace == "" {
		*namespace = e.getenv("POD_NAMESPACE")
	}
	if a.kubeconfig == "" {
		a.kubeconfig = e.getenv("KUBECONFIG")
	}
}

// run validates the options (a failure is a usage error), then calls do with a client and a
// context that ends after --timeout.
func (a *apiFlags) run(cmd *cobra.Command, e env, validate func() error, do func(context.Context, kubernetes.Interface) error) error {
	if err := validate(); err != nil {
		return usageError{err}
	}
	client, err := e.newClient(a.kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
	defer cancel()
	return do(ctx, client)
}
