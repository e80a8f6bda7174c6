package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minicluster/minicluster/keygen/kube"
)

const kubeLong = `kube creates the CURVE certificate of a minicluster release in Kubernetes, and with --munge
its munge key; the chart's keygen Job runs it. ` + "`kube fetch`" + ` is the broker pods' side.

The certificate goes under the key curve.cert of the Secret --curve-name (default
<release>-curve). A Secret is the default because the file holds the private key that every
broker authenticates with: Kubernetes keeps Secrets apart from ConfigMaps in RBAC (and can
encrypt them at rest), so whoever may read ConfigMaps in the namespace cannot join or listen
to the MiniCluster. --storage=ConfigMap reproduces the Flux Operator's layout for setups
that need it. --munge also creates the Secret --munge-name (default <release>-munge) with
munge.key, 1024 random bytes.

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
		Use:   "kube --release R [--namespace NS] (--curve-name N --storage Secret|ConfigMap | --skip-curve) [--munge --munge-name M]",
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
	cmd.AddCommand(newFetchCmd(e), newWaitCmd(e))
	return cmd
}

// contextNamespace is the namespace of the kubeconfig's current context ("default" when it
// names none), as kubectl and helm pick it.
func contextNamespace(kubeconfig string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules = &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(kubeconfig)}
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
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

const fetchLong = `fetch is what the keys container of every broker pod runs: it waits until the keygen Job
has put a valid certificate into the object --curve-name (and with --munge-name a munge key
into that Secret), writes curve.cert and munge.key to --out, and exits. With --wait-service
and --wait-host it then waits until an EndpointSlice of that Service lists the host (the
broker's parent) with an address, so that the broker's first DNS lookup finds it: cluster
DNS caches a "no such name" answer for seconds, which would stall the broker's connect.

With --beside-broker it runs in a container beside the broker's, which starts at the same
time (an init container would hold the broker back until the kubelet's next 1 s relist): it
makes the FIFO --out/.alive, then writes --out/.ready when the keys are there and the parent
is listed, or the error to --out/.invalid (an invalid key object: the broker cannot start) or
--out/.failed (anything else). The broker's entrypoint holds .alive open while its container
lives; when it is closed (EOF), or at SIGTERM, fetch exits, so the pod can complete.

It reads only the named objects (get, list and watch with a metadata.name field selector) and
the Service's EndpointSlices; it never writes to the API server.`

func newFetchCmd(e env) *cobra.Command {
	var o kube.FetchOptions
	var api apiFlags
	var hostsFile, topology string
	var waitParent, beside bool
	cmd := &cobra.Command{
		Use:   "fetch --out DIR [--curve-name N --storage Secret|ConfigMap] [--munge-name M] [--wait-parent --hosts-file F --topology T] [--beside-broker]",
		Short: "Wait for the release's keys (and the parent broker's endpoint) and write the keys to a directory",
		Long:  fetchLong,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			fetch := func() error {
				api.defaults(e, &o.Namespace)
				if waitParent {
					var err error
					if o.Service, o.Host, err = parentOf(e, hostsFile, topology); err != nil {
						return err
					}
				}
				if o.Host == "" && o.CurveName == "" && o.MungeName == "" {
					return nil // the lead with the user's own certificate: nothing to wait for
				}
				return api.run(cmd, e, o.Validate, func(ctx context.Context, client kubernetes.Interface) error {
					return kube.Fetch(ctx, client, o, e.stdout)
				})
			}
			if !beside {
				return fetch()
			}
			if o.Out == "" {
				return usageError{errors.New("--beside-broker needs --out, the volume it shares with the broker")}
			}
			return fetchBeside(o.Out, fetch, e.signals(), e.stderr)
		},
	}
	f := cmd.Flags()
	api.add(f, &o.Namespace, 10*time.Minute)
	f.StringVar(&o.CurveName, "curve-name", "", "name of the certificate object")
	f.StringVar(&o.Storage, "storage", kube.StorageSecret, "kind of the certificate object: Secret or ConfigMap")
	f.StringVar(&o.MungeName, "munge-name", "", "name of the munge key Secret")
	f.StringVar(&o.Out, "out", "", "directory to write curve.cert and munge.key to")
	f.BoolVar(&waitParent, "wait-parent", false, "wait until the headless Service lists this pod's parent broker (index from $JOB_COMPLETION_INDEX)")
	f.StringVar(&hostsFile, "hosts-file", "/minicluster/config/hosts", "file with the RFC 29 host list of all brokers (the broker ConfigMap's hosts)")
	f.StringVar(&topology, "topology", "", "the brokers' tbon.topo (empty = flux's default for broker.toml boot)")
	f.BoolVar(&beside, "beside-broker", false, "run beside the broker's container: report through files in --out and exit when the broker's container ends")
	return cmd
}

// parentOf finds this pod's parent broker and its Service from the pod's environment.
func parentOf(e env, hostsFile, topology string) (service, host string, err error) {
	index, err := strconv.Atoi(e.getenv("JOB_COMPLETION_INDEX"))
	if err != nil {
		return "", "", usageError{fmt.Errorf("--wait-parent: JOB_COMPLETION_INDEX=%q is not an index: run it in a pod of an indexed Job", e.getenv("JOB_COMPLETION_INDEX"))}
	}
	hostname, err := e.hostname()
	if err != nil {
		return "", "", err
	}
	hosts, err := os.ReadFile(hostsFile)
	if err != nil {
		return "", "", fmt.Errorf("--wait-parent: %w", err)
	}
	etcHosts, err := os.Open(e.etcHosts)
	if err != nil {
		return "", "", fmt.Errorf("--wait-parent: %w", err)
	}
	defer etcHosts.Close()
	return kube.ParentHost(kube.Pod{Hostname: hostname, Index: index, Hosts: strings.TrimSpace(string(hosts)), Topology: topology}, etcHosts)
}

const waitLong = `wait is what a user runs after helm install or upgrade: it watches the release's pods until
the MiniCluster is up (every broker pod of its Job ready, or the Job completed) and exits 0.
It exits 1 at once, naming the pod, the container, the image and the fix, when a container
cannot pull its image (a wrong registry, a missing tag, a pull secret that does not work), and
when the Job fails; on --timeout it says what is still pending. Helm cannot say this itself:
Helm 3 does not wait for Jobs without --wait-for-jobs, and Helm 4 counts a started Job as ready.

It lists pods and Jobs in the namespace, and changes nothing.`

func newWaitCmd(e env) *cobra.Command {
	var o kube.WaitOptions
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
				return kube.Wait(ctx, client, o, e.stdout)
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
