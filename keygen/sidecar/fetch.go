// Package sidecar is the pod side of flux-keygen: the container that runs beside each broker's
// container in the MiniCluster's pods (a sidecar; the chart names it keys). It waits until the
// keygen Job (package kube) has put the keys into the release's objects, writes them where the
// broker's entrypoint installs them, waits until the headless Service lists the broker's parent
// (ParentHost) so that the broker's first DNS lookup finds it, and tells the entrypoint the
// outcome through files in their shared volume (RunBesideBroker). It only reads from the API
// server.
package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/minicluster/minicluster/keygen"
	"github.com/minicluster/minicluster/keygen/kube"
)

// Options say what the sidecar waits for. The keygen Job fills the key objects while the pods
// start, so the pods wait here instead of behind a pre-install hook.
type Options struct {
	Namespace string
	// CurveName is the certificate object (Storage: Secret or ConfigMap); empty = none.
	CurveName, Storage string
	// MungeName is the munge key Secret; empty = none.
	MungeName string
	// Out is the directory curve.cert and munge.key are written to (mode 0444: the pod's own
	// memory volume; the entrypoint installs a private copy for the user running Flux).
	Out string
	// APIName is the Secret of the API's credentials (user, token, secret-key) and APITLSName
	// its TLS Secret (tls.crt, tls.key): the lead writes their files to Out/api (APIDir) for
	// the API server. Empty = none.
	APIName, APITLSName string
	// Service and Host: also wait until an EndpointSlice of Service lists Host with an address,
	// so that the broker's first DNS lookup of its parent finds it (cluster DNS caches a
	// negative answer for seconds). Empty = do not wait.
	Service, Host string
}

// InvalidKeyError is a key object whose data is not a valid key: waiting cannot mend it.
type InvalidKeyError struct{ error }

func (e InvalidKeyError) Unwrap() error { return e.error }

// Validate checks the options.
func (o *Options) Validate() error {
	if o.Namespace == "" {
		return errors.New("--namespace is empty: give it or set POD_NAMESPACE")
	}
	if o.Out == "" {
		return errors.New("--out is empty: give the directory to write the keys to")
	}
	if o.Storage == "" {
		o.Storage = kube.StorageSecret
	}
	if o.Storage != kube.StorageSecret && o.Storage != kube.StorageConfigMap {
		return fmt.Errorf("--storage %q: want Secret or ConfigMap", o.Storage)
	}
	if (o.Service == "") != (o.Host == "") {
		return fmt.Errorf("--wait-service %q and --wait-host %q: give both or neither", o.Service, o.Host)
	}
	if o.CurveName == "" && o.MungeName == "" && o.Host == "" && o.APIName == "" && o.APITLSName == "" {
		return errors.New("nothing to wait for: give --curve-name, --munge-name, --api-name, --api-tls-name or --wait-host")
	}
	return nil
}

// Fetch waits until each named key object holds a valid key and writes it to opts.Out, then
// waits for the host's endpoint. It reads only the named objects (get, list and watch with a
// metadata.name field selector, which RBAC allows by resourceNames) and the Service's
// EndpointSlices.
func Fetch(ctx context.Context, client kubernetes.Interface, opts Options, log io.Writer) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if opts.CurveName != "" {
		data, err := waitCurve(ctx, client, opts)
		if err != nil {
			return err
		}
		if err := writeKey(opts.Out, kube.CertKey, data); err != nil {
			return err
		}
		c, _ := keygen.Parse(data)
		fmt.Fprintf(log, "fetched %s from %s %s/%s (public key %s)\n", kube.CertKey, opts.Storage, opts.Namespace, opts.CurveName, c.PublicText())
	}
	if opts.MungeName != "" {
		data, err := waitObject(ctx, client, kube.StorageSecret, opts.Namespace, opts.MungeName, kube.MungeKey, checkMunge)
		if err != nil {
			return err
		}
		if err := writeKey(opts.Out, kube.MungeKey, data); err != nil {
			return err
		}
		fmt.Fprintf(log, "fetched %s from Secret %s/%s\n", kube.MungeKey, opts.Namespace, opts.MungeName)
	}
	for _, api := range []struct{ name, what string }{{opts.APIName, "credentials"}, {opts.APITLSName, "TLS certificate"}} {
		if api.name == "" {
			continue
		}
		keys := APICredentialKeys
		if api.name == opts.APITLSName {
			keys = APITLSKeys
		}
		data, err := waitSecretKeys(ctx, client, opts.Namespace, api.name, keys)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := os.MkdirAll(filepath.Join(opts.Out, APIDir), 0o755); err != nil {
				return err
			}
			if err := writeKey(filepath.Join(opts.Out, APIDir), k, data[k]); err != nil {
				return err
			}
		}
		fmt.Fprintf(log, "fetched the API's %s from Secret %s/%s\n", api.what, opts.Namespace, api.name)
	}
	if opts.Host != "" {
		start := time.Now()
		if err := waitEndpoint(ctx, client, opts.Namespace, opts.Service, opts.Host); err != nil {
			return err
		}
		fmt.Fprintf(log, "%s is listed by Service %s/%s (waited %s)\n", opts.Host, opts.Namespace, opts.Service, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// The files of the API's Secrets, and the directory of Out they are written to.
var (
	APICredentialKeys = []string{"user", "token", "secret-key"}
	APITLSKeys        = []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey}
)

const APIDir = "api"

// waitSecretKeys watches a Secret until it holds every key, not empty. A Secret given by the
// user (api.existingSecret, api.tls.secretName) may come later than the pods.
func waitSecretKeys(ctx context.Context, client kubernetes.Interface, ns, name string, keys []string) (map[string][]byte, error) {
	secrets := client.CoreV1().Secrets(ns)
	lw := listWatcher{
		list:  func(o metav1.ListOptions) (runtime.Object, error) { return secrets.List(ctx, o) },
		watch: func(o metav1.ListOptions) (watch.Interface, error) { return secrets.Watch(ctx, o) }}
	var data map[string][]byte
	err := lw.until(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}, func(obj runtime.Object) bool {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return false
		}
		for _, k := range keys {
			if len(s.Data[k]) == 0 {
				return false
			}
		}
		data = s.Data
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the keys %s in Secret %s/%s: %w (is the keygen Job running, or, for a Secret of yours, does it exist with these keys? kubectl get secret -n %s %s)",
			strings.Join(keys, ", "), ns, name, err, ns, name)
	}
	return data, nil
}

func waitCurve(ctx context.Context, client kubernetes.Interface, opts Options) ([]byte, error) {
	return waitObject(ctx, client, opts.Storage, opts.Namespace, opts.CurveName, kube.CertKey, checkCert)
}

func checkCert(data []byte) error {
	if _, err := keygen.Parse(data); err != nil {
		return fmt.Errorf("its %s is not a valid certificate (%w)", kube.CertKey, err)
	}
	return nil
}

func checkMunge(data []byte) error {
	if len(data) != kube.MungeKeySize {
		return fmt.Errorf("its %s is %d bytes, want %d", kube.MungeKey, len(data), kube.MungeKeySize)
	}
	return nil
}

// waitObject watches one Secret or ConfigMap until it holds key. Empty means the keygen Job has
// not filled it yet; invalid data is an error at once (waiting would not mend it).
func waitObject(ctx context.Context, client kubernetes.Interface, kind, ns, name, key string, check func([]byte) error) ([]byte, error) {
	where := fmt.Sprintf("%s %s/%s", kind, ns, name)
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	var lw listWatcher
	if kind == kube.StorageConfigMap {
		cms := client.CoreV1().ConfigMaps(ns)
		lw = listWatcher{
			list:  func(o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) },
			watch: func(o metav1.ListOptions) (watch.Interface, error) { return cms.Watch(ctx, o) }}
	} else {
		secrets := client.CoreV1().Secrets(ns)
		lw = listWatcher{
			list:  func(o metav1.ListOptions) (runtime.Object, error) { return secrets.List(ctx, o) },
			watch: func(o metav1.ListOptions) (watch.Interface, error) { return secrets.Watch(ctx, o) }}
	}
	var data []byte
	var bad error
	err := lw.until(ctx, byName, func(obj runtime.Object) bool {
		switch o := obj.(type) {
		case *corev1.Secret:
			data = o.Data[key]
		case *corev1.ConfigMap:
			data = []byte(o.Data[key])
		}
		if len(data) == 0 {
			return false
		}
		bad = check(data)
		return true
	})
	if bad != nil {
		return nil, InvalidKeyError{fmt.Errorf("%s %w; delete it and run `helm uninstall`, then install again", where, bad)}
	}
	if err != nil {
		return nil, fmt.Errorf("waiting for %s in %s: %w (is the keygen Job running? kubectl logs -n %s job/<release>-keygen)", key, where, err, ns)
	}
	return data, nil
}

// waitEndpoint watches the Service's EndpointSlices until one lists host with an address. A
// Service of more than 100 endpoints has several slices (the EndpointSlice controller's
// default --max-endpoints-per-slice): each slice is looked at on its own, from the list and
// from every later event, so the host is found in whichever slice lists it, now or later.
func waitEndpoint(ctx context.Context, client kubernetes.Interface, ns, service, host string) error {
	slices := client.DiscoveryV1().EndpointSlices(ns)
	lw := listWatcher{
		list:  func(o metav1.ListOptions) (runtime.Object, error) { return slices.List(ctx, o) },
		watch: func(o metav1.ListOptions) (watch.Interface, error) { return slices.Watch(ctx, o) }}
	err := lw.until(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service}, func(obj runtime.Object) bool {
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelServiceName] != service {
			return false // another Service's slice, from a watch that did not filter
		}
		for _, e := range s.Endpoints {
			if e.Hostname != nil && *e.Hostname == host && len(e.Addresses) > 0 {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("waiting for %s in the EndpointSlices of Service %s/%s: %w", host, ns, service, err)
	}
	return nil
}

// rbacPropagation is how long a list refused at the start is retried (a variable for tests).
var rbacPropagation = 10 * time.Second

// listWatcher lists, then watches from the list's resourceVersion, until done says yes of an
// object; a closed watch starts over with a new list. (client-go's informers would do, but
// need more of the API than a list and a watch, and more rights.)
type listWatcher struct {
	list  func(metav1.ListOptions) (runtime.Object, error)
	watch func(metav1.ListOptions) (watch.Interface, error)
}

func (lw listWatcher) until(ctx context.Context, opts metav1.ListOptions, done func(runtime.Object) bool) error {
	// Helm creates the Role and RoleBinding just before the pods; the API server's RBAC cache
	// may lag behind them, so a refusal right at the start is retried for a while.
	grant := time.Now().Add(rbacPropagation)
	// retry waits a little before the next list; false when the context has ended.
	retry := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
			return true
		}
	}
	for {
		list, err := lw.list(opts)
		if (apierrors.IsForbidden(err) && time.Now().Before(grant)) || transient(err) {
			if !retry() {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, item := range items {
			if done(item) {
				return nil
			}
		}
		w := opts
		w.ResourceVersion, w.AllowWatchBookmarks = "", false
		if acc, err := meta.ListAccessor(list); err == nil {
			w.ResourceVersion = acc.GetResourceVersion()
		}
		watcher, err := lw.watch(w)
		if transient(err) {
			if !retry() {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if finished, err := watchUntil(ctx, watcher, done); finished || err != nil {
			return err
		}
	}
}

// transient: an API server too busy or briefly out of reach (a loaded control plane, its
// restart) answers again soon; waiting for the keys goes on until the context ends.
func transient(err error) bool {
	return err != nil && (apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err))
}

// watchUntil reads events until done, an error, or the watch closes (finished false).
func watchUntil(ctx context.Context, watcher watch.Interface, done func(runtime.Object) bool) (bool, error) {
	defer watcher.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Error:
				return false, nil // e.g. resourceVersion too old: list again
			case watch.Added, watch.Modified:
				if done(ev.Object) {
					return true, nil
				}
			}
		}
	}
}

// writeKey writes data to dir/name readable by every user of the pod (the entrypoint makes the
// 0400 copy Flux insists on, owned by whoever runs Flux), through a rename so that nobody reads
// half a key.
func writeKey(dir, name string, data []byte) error {
	return replaceFile(filepath.Join(dir, name), 0o444, bytes.NewReader(data))
}
