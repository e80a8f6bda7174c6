//go:build ignore

// Command netpol enforces NetworkPolicy on one node of the local cluster: kube-router's firewall
// controller alone. ci/cluster/build.sh builds it (without the build line above, which keeps it
// out of this repository's module) in the same module as the cluster's Kubernetes binaries, so
// that it compiles against their client libraries instead of building its own: kube-router's
// command also carries a BGP router, a service proxy and cloud SDKs this cluster does not run.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/v2/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/v2/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.RunFirewall = true
	config.EnableIPv4 = true
	flag.StringVar(&config.Kubeconfig, "kubeconfig", "", "the cluster's kubeconfig")
	flag.StringVar(&config.HostnameOverride, "hostname-override", "", "this node's name in the cluster")
	flag.DurationVar(&config.IPTablesSyncPeriod, "iptables-sync-period", config.IPTablesSyncPeriod, "how often every rule is written again")
	minInterval := flag.Duration("min-sync-interval", time.Second, "the least time between two syncs that changes ask for")
	flag.Parse()
	if config.Kubeconfig == "" || config.HostnameOverride == "" {
		fmt.Fprintln(os.Stderr, "netpol: --kubeconfig and --hostname-override are required")
		os.Exit(2)
	}
	if err := run(config, *minInterval); err != nil {
		fmt.Fprintln(os.Stderr, "netpol:", err)
		os.Exit(1)
	}
}

// run enforces the policies until SIGTERM or SIGINT, as kube-router does with --run-firewall alone.
func run(config *options.KubeRouterConfig, minInterval time.Duration) error {
	rest, err := clientcmd.BuildConfigFromFlags("", config.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	namespaces := factory.Core().V1().Namespaces().Informer()
	policies := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stop)
	for informer, synced := range factory.WaitForCacheSync(stop) {
		if !synced {
			return fmt.Errorf("the %v informer did not sync", informer)
		}
	}

	iptables, ipsets, err := netpol.NewIPTablesHandlers(config)
	if err != nil {
		return err
	}
	var ipsetMutex sync.Mutex
	npc, err := netpol.NewNetworkPolicyController(client, config, pods, policies, namespaces, &ipsetMutex, iptables, ipsets)
	if err != nil {
		return err
	}
	// kube-router's own handlers ask for a full sync on every relevant change, and its syncs run
	// back to back while a cluster's pods churn (more than two a second on each node under the
	// end-to-end tests, a fifth of the machine's CPU). Here a change asks at once when no sync
	// was asked for in the last minInterval, else once at its end.
	changed := make(chan struct{}, 1)
	mark := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	for informer, handler := range map[cache.SharedIndexInformer]cache.ResourceEventHandler{
		pods: podChanges(mark), namespaces: anyChange(mark), policies: anyChange(mark),
	} {
		if _, err := informer.AddEventHandler(handler); err != nil {
			return err
		}
	}
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-changed:
			}
			npc.RequestFullSync()
			select {
			case <-stop:
				return
			case <-time.After(minInterval):
			}
		}
	}()

	// The controller reports a heartbeat after each sync; nothing serves health here, so they are
	// dropped (unread, they would block the controller once the channel is full).
	beats := make(chan *healthcheck.ControllerHeartbeat, 10)
	go func() {
		for range beats {
		}
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go npc.Run(beats, stop, &wg)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	close(stop)
	wg.Wait()
	return nil
}

// podChanges calls mark when a pod changes in a way a policy can see: it gets or loses its
// address, its labels or its phase change, or it goes.
func podChanges(mark func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); !ok || p.Status.PodIP != "" {
				mark()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 || o.Status.PodIP != n.Status.PodIP || o.Status.Phase != n.Status.Phase ||
				!maps.Equal(o.Labels, n.Labels) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
				mark()
			}
		},
		DeleteFunc: func(any) { mark() },
	}
}

// anyChange calls mark on every change (namespaces and policies change rarely).
func anyChange(mark func()) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { mark() },
		UpdateFunc: func(any, any) { mark() },
		DeleteFunc: func(any) { mark() },
	}
}
