package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/minicluster/minicluster/keygen/kube"
	"github.com/minicluster/minicluster/keygen/sidecar"
)

const sidecarLong = `sidecar is what the keys container of every broker pod runs, beside the broker's container
(a sidecar: it starts with it, where an init container would hold the broker back until the
kubelet's next 1 s relist). It waits until the keygen Job has put a valid certificate into the
object --curve-name (and with --munge-name a munge key into that Secret) and writes curve.cert
and munge.key to --out; on the lead, with --api-name and --api-tls-name, also the API's
credentials and TLS key to --out/api. With --wait-parent it then waits until an EndpointSlice of the
headless Service lists this pod's parent broker (from --hosts-file, --topology and
$JOB_COMPLETION_INDEX) with an address, so that the broker's first DNS lookup finds it: cluster
DNS caches a "no such name" answer for seconds, which would stall the broker's connect.

With --supervisor it first copies this image's minicluster-broker there, the broker container's
supervisor, which the container's command waits for and execs (every broker pod); on the lead,
with --api-server and --autoscaler, the API server and autoscaler likewise.

It tells the broker's supervisor the outcome through files in --out: it makes the FIFO .alive,
then writes .ready when the keys are there and the parent is listed, or the error to .invalid
(an invalid key object: the broker cannot start) or .failed (anything else). The supervisor
holds .alive open while its container lives; when it is closed (EOF), or at SIGTERM, the
sidecar exits, so the pod can complete. Once the entrypoint has made its private copies of the
keys it writes .installed, and the sidecar deletes the copies in --out that every user of the pod
can read (at the latest when the broker's container ends). With --once it only writes the keys, waits for the
parent and exits, with no files for a supervisor.

With --readiness-addr it answers the pod's readiness probes there: GET /readyz is
200 while --out holds .online, which the supervisor writes once Flux counts the broker online.

With --namespace-deleted-code N it asks at its end (the broker's container ended, or SIGTERM)
whether its namespace is being deleted, and if so deletes the Job --job (when given) and exits
N, on which the chart's Job fails (podFailurePolicy). Either lets Kubernetes remove the pods:
otherwise the Job controller keeps each failed broker pod until its replacement exists, which a
namespace being deleted never allows, and kubectl delete namespace waits for ever. The failure
alone can wait 5 minutes or more (after a replacement the namespace refused, the controller
holds back the Job's end until it stops expecting that pod); a deleted Job lets go at once.

With --autoscale-dir (the lead, autoscale.enabled) it applies the sizes the autoscaler in the
broker's container asks for there (target.json) to the Job --job, records each resize as an
Event on the Job, and writes the Job's size there (size).

It reads only the named objects (get, list and watch with a metadata.name field selector), the
Service's EndpointSlices and, with --namespace-deleted-code, its namespace; it writes nothing
to the API server but the deletion of --job when its namespace is being deleted and, with
--autoscale-dir, the size of --job and Events.`

func newSidecarCmd(e env) *cobra.Command {
	var o sidecar.Options
	var api apiFlags
	var hostsFile, topology, readinessAddr string
	var waitParent, once bool
	var apiServer, autoscaler, supervisorPath string
	var resize sidecar.Resizer
	var namespaceDeletedCode int
	var job string
	cmd := &cobra.Command{
		Use:   "sidecar --out DIR [--curve-name N --storage Secret|ConfigMap] [--munge-name M] [--wait-parent --hosts-file F --topology T] [--once]",
		Short: "Beside a broker: wait for the release's keys (and the parent broker's endpoint), write them to a directory",
		Long:  sidecarLong,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Out == "" {
				return usageError{errors.New("--out is required: the volume the sidecar shares with the broker")}
			}
			fetch := func() error {
				// Every broker's container runs its supervisor from here.
				if err := installBeside("minicluster-broker", supervisorPath); err != nil {
					return err
				}
				// The lead's broker container runs the API server (api.enabled) from here.
				// And the autoscaler and metrics server (autoscale.enabled, metrics.enabled).
				if e.getenv("JOB_COMPLETION_INDEX") == "0" {
					for program, dest := range map[string]string{"minicluster-api": apiServer, "minicluster-autoscale": autoscaler} {
						if err := installBeside(program, dest); err != nil {
							return err
						}
					}
				}
				// The API's credentials and TLS key are the lead's alone.
				if e.getenv("JOB_COMPLETION_INDEX") != "0" {
					o.APIName, o.APITLSName = "", ""
				}
				api.defaults(e, &o.Namespace)
				if waitParent {
					var err error
					if o.Service, o.Host, err = parentOf(e, hostsFile, topology); err != nil {
						return err
					}
				}
				if o.Host == "" && o.CurveName == "" && o.MungeName == "" && o.APIName == "" && o.APITLSName == "" {
					return nil // the lead with the user's own certificate: nothing to wait for
				}
				return api.run(cmd, e, o.Validate, func(ctx context.Context, client kubernetes.Interface) error {
					return sidecar.Fetch(ctx, client, o, e.stdout)
				})
			}
			if once {
				return fetch()
			}
			if namespaceDeletedCode < 0 || namespaceDeletedCode > 255 {
				return usageError{fmt.Errorf("--namespace-deleted-code=%d is not an exit code: give 1 to 255 (0: never ask)", namespaceDeletedCode)}
			}
			// At the end, whatever ended it: a pod deleted with its namespace exits with the code.
			ended := func(err error) error {
				if namespaceDeletedCode == 0 {
					return err
				}
				api.defaults(e, &o.Namespace)
				return namespaceEnd(cmd.Context(), e, api.kubeconfig, o.Namespace, job, namespaceDeletedCode, err)
			}
			if readinessAddr != "" {
				ln, err := net.Listen("tcp", readinessAddr)
				if err != nil {
					// Told to the entrypoint like any other failure: the broker does not start.
					err = fmt.Errorf("the readiness probe's port: %w (set flux.readinessPort to a port no other container of the pod uses)", err)
					return ended(sidecar.RunBesideBroker(o.Out, func() error { return err }, e.signals(), e.stderr))
				}
				ctx, stop := context.WithCancel(cmd.Context())
				defer stop()
				go func() {
					if err := sidecar.ServeReadiness(ctx, ln, o.Out); err != nil {
						fmt.Fprintf(e.stderr, "flux-keygen: the readiness probe's server: %v\n", err)
					}
				}()
			}
			if resize.Dir != "" && e.getenv("JOB_COMPLETION_INDEX") == "0" {
				api.defaults(e, &o.Namespace)
				client, err := e.newClient(api.kubeconfig)
				if err != nil {
					return err
				}
				resize.Client, resize.Namespace, resize.Job, resize.Every, resize.Log = client, o.Namespace, job, time.Second, e.stderr
				ctx, stop := context.WithCancel(cmd.Context())
				defer stop()
				go resize.Run(ctx)
			}
			return ended(sidecar.RunBesideBroker(o.Out, fetch, e.signals(), e.stderr))
		},
	}
	f := cmd.Flags()
	api.add(f, &o.Namespace, 10*time.Minute)
	f.StringVar(&o.CurveName, "curve-name", "", "name of the certificate object")
	f.StringVar(&o.Storage, "storage", kube.StorageSecret, "kind of the certificate object: Secret or ConfigMap")
	f.StringVar(&o.MungeName, "munge-name", "", "name of the munge key Secret")
	f.StringVar(&o.Out, "out", "", "directory to write curve.cert and munge.key to, shared with the broker (required)")
	f.BoolVar(&waitParent, "wait-parent", false, "wait until the headless Service lists this pod's parent broker (index from $JOB_COMPLETION_INDEX)")
	f.StringVar(&hostsFile, "hosts-file", "/minicluster/config/hosts", "file with the RFC 29 host list of all brokers (the broker ConfigMap's hosts)")
	f.StringVar(&topology, "topology", "", "the brokers' tbon.topo (empty = flux's default for broker.toml boot)")
	f.StringVar(&readinessAddr, "readiness-addr", "", "serve the pod's readiness probes here (GET /readyz: 200 once the entrypoint wrote .online in --out)")
	f.StringVar(&apiServer, "api-server", "", "on the lead (index 0), copy this image's minicluster-api to this path, for the broker's container to run")
	f.StringVar(&supervisorPath, "supervisor", "", "copy this image's minicluster-broker (the broker container's supervisor) to this path, for the broker's container to run")
	f.StringVar(&o.APIName, "api-name", "", "on the lead (index 0), the Secret of the API's credentials (user, token, secret-key), written to --out/api")
	f.StringVar(&o.APITLSName, "api-tls-name", "", "on the lead (index 0), the API's TLS Secret (tls.crt, tls.key), written to --out/api")
	f.StringVar(&autoscaler, "autoscaler", "", "on the lead (index 0), copy this image's minicluster-autoscale to this path, for the broker's container to run")
	f.StringVar(&resize.Dir, "autoscale-dir", "", "on the lead (index 0), apply the autoscaler's targets from this directory to the Job --job, and write its size there")
	f.IntVar(&resize.MinSize, "min-size", 1, "with --autoscale-dir: the fewest brokers a target may ask for")
	f.IntVar(&resize.MaxSize, "max-size", 0, "with --autoscale-dir: the most brokers a target may ask for")
	f.BoolVar(&once, "once", false, "write the keys (and wait for the parent), then exit: no files for a broker's entrypoint")
	f.IntVar(&namespaceDeletedCode, "namespace-deleted-code", 0, "at the end, exit with this code when the namespace is being deleted (0: never ask)")
	f.StringVar(&job, "job", "", "with --namespace-deleted-code: the broker Job, deleted when the namespace is being deleted")
	return cmd
}

// namespaceAskTimeout bounds the question at the end: the pod is being stopped, and the kubelet
// kills it at the end of its grace period.
const namespaceAskTimeout = 5 * time.Second

// namespaceEnd returns a codeError with code when the namespace is being deleted, after deleting
// job (when not empty), else err (the sidecar's own outcome). An answer that does not come is
// said on stderr and changes nothing.
func namespaceEnd(ctx context.Context, e env, kubeconfig, namespace, job string, code int, err error) error {
	client, cerr := e.newClient(kubeconfig)
	if cerr != nil {
		fmt.Fprintf(e.stderr, "flux-keygen: cannot ask whether the namespace is being deleted: %v\n", cerr)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, namespaceAskTimeout)
	defer cancel()
	deleted, derr := sidecar.NamespaceDeleted(ctx, client, namespace)
	if derr != nil {
		fmt.Fprintf(e.stderr, "flux-keygen: cannot tell whether the namespace is being deleted: %v\n", derr)
		return err
	}
	if !deleted {
		return err
	}
	if job != "" {
		if jerr := sidecar.DeleteJob(ctx, client, namespace, job); jerr != nil {
			fmt.Fprintf(e.stderr, "flux-keygen: the namespace is being deleted: %v\n", jerr)
		}
	}
	return codeError{fmt.Errorf("the namespace %s is being deleted: exit %d fails the Job, so that Kubernetes can remove its pods", namespace, code), code}
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
	return sidecar.ParentHost(sidecar.Pod{Hostname: hostname, Index: index, Hosts: strings.TrimSpace(string(hosts)), Topology: topology}, etcHosts)
}

// stopSignals delivers SIGTERM and SIGINT: the kubelet stops the sidecar with the pod.
func stopSignals() <-chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	return c
}

// installBeside copies the program of this image that sits beside flux-keygen to dest, for the
// broker's container to run (nothing when dest is empty).
func installBeside(program, dest string) error {
	if dest == "" {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return sidecar.InstallProgram(filepath.Join(filepath.Dir(self), program), dest)
}
