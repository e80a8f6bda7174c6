// Package kubeclient connects the programs to the Kubernetes API server: with a kubeconfig as
// kubectl does when one is given, else as the pod's service account.
package kubeclient

import (
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNotInCluster is New's error without a kubeconfig outside a pod: the caller was called
// wrongly, which its CLI may say with its usage exit code.
var ErrNotInCluster = errors.New("not running in a pod: give --kubeconfig or set KUBECONFIG")

// New connects with the kubeconfig files (a list, as $KUBECONFIG holds) when given, else as
// the pod's service account; userAgent names the program in the API server's logs.
func New(kubeconfig, userAgent string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules(kubeconfig), &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, ErrNotInCluster
		}
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
	}
	cfg.UserAgent = userAgent
	Protobuf(cfg)
	return kubernetes.NewForConfig(cfg)
}

// Protobuf makes cfg's clients talk protobuf, JSON where the API server has no protobuf (custom
// resources): the API server encodes objects and watch events in it for a fraction of JSON's
// CPU and bytes, and every broker pod's keys container lists and watches.
func Protobuf(cfg *rest.Config) {
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
}

// ContextNamespace is the namespace of the kubeconfig's current context ("default" when it
// names none), as kubectl and helm pick it.
func ContextNamespace(kubeconfig string) string {
	r := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		r = rules(kubeconfig)
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(r, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

func rules(kubeconfig string) *clientcmd.ClientConfigLoadingRules {
	return &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(kubeconfig)}
}
