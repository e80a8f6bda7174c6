package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minicluster/minicluster/keygen/kube"
)

const kubeLong = `kube creates the CURVE certificate of a minicluster release in Kubernetes, and with --munge
its munge key; the chart's keygen hook Job runs it.

The certificate goes under the key curve.cert of the Secret --curve-name (default
<release>-curve). A Secret is the default because the file holds the private key that every
broker authenticates with: Kubernetes keeps Secrets apart from ConfigMaps in RBAC (and can
encrypt them at rest), so whoever may read ConfigMaps in the namespace cannot join or listen
to the MiniCluster. --storage=ConfigMap reproduces the Flux Operator's layout for setups
that need it. --munge also creates the Secret --munge-name (default <release>-munge) with
munge.key, 1024 random bytes.

Each object carries Helm's ownership metadata (label app.kubernetes.io/managed-by=Helm,
annotations meta.helm.sh/release-name and meta.helm.sh/release-namespace) and the chart's
labels. The chart renders the same objects without data: with Helm 4 the hook runs
pre-install and Helm adopts what it made; with Helm 3 (which cannot adopt an object a
pre-install hook made) it runs post-install and writes the key into the object Helm made.
Either way the data stays and helm uninstall deletes the object.

A key is never overwritten: an existing valid object is kept (a retried hook keeps the key
the brokers use), the release's data-less object is filled, and anything else is an error
that says what is wrong and how to recover. The hook's Role needs only create on
secrets/configmaps and get and update on these names.

The namespace defaults to $POD_NAMESPACE. Without --kubeconfig (or $KUBECONFIG) it uses the
in-cluster service account.`

func newKubeCmd(e env) *cobra.Command {
	var o kube.Options
	var kubeconfig string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "kube --release R [--namespace NS] (--curve-name N --storage Secret|ConfigMap | --skip-curve) [--munge --munge-name M]",
		Short: "Create the certificate (and munge key) objects of a release, idempotently",
		Long:  kubeLong,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.SkipCurve && (cmd.Flags().Changed("curve-name") || cmd.Flags().Changed("storage")) {
				return usageError{errors.New("--skip-curve leaves the certificate to the user: drop --curve-name and --storage")}
			}
			if o.Namespace == "" {
				o.Namespace = e.getenv("POD_NAMESPACE")
			}
			if kubeconfig == "" {
				kubeconfig = e.getenv("KUBECONFIG")
			}
			if host, err := e.hostname(); err == nil {
				o.Hostname = host
			}
			o.Version, o.Now = version, e.now
			if err := o.Validate(); err != nil {
				return usageError{err}
			}
			client, err := e.newClient(kubeconfig)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			_, err = kube.Run(ctx, client, o, e.stdout)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Release, "release", "", "Helm release name (required)")
	f.StringVar(&o.Namespace, "namespace", "", "namespace of the release (default $POD_NAMESPACE)")
	f.StringVar(&o.CurveName, "curve-name", "", "name of the certificate object (default <release>-curve)")
	f.StringVar(&o.Storage, "storage", kube.StorageSecret, "kind of the certificate object: Secret or ConfigMap")
	f.BoolVar(&o.SkipCurve, "skip-curve", false, "do not create the certificate (the chart's curve.existingSecret)")
	f.BoolVar(&o.Munge, "munge", false, "also create the munge key Secret")
	f.StringVar(&o.MungeName, "munge-name", "", "name of the munge key Secret (default <release>-munge)")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else the in-cluster service account)")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "give up on the API server after this long")
	return cmd
}

// newClient connects with a kubeconfig when given one, else as the pod's service account.
func newClient(kubeconfig string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(kubeconfig)}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, usageError{errors.New("not running in a pod: give --kubeconfig or set KUBECONFIG")}
		}
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
	}
	cfg.UserAgent = "flux-keygen/" + version
	return kubernetes.NewForConfig(cfg)
}
