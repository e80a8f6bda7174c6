package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minicluster/minicluster/keygen/kube"
)

const ns = "team-a"

// validCert is a certificate as the keygen Job writes it.
func validCert(t *testing.T) []byte {
	t.Helper()
	client := fake.NewClientset()
	o := kube.Options{Release: "flux-sample", Namespace: ns, Hostname: "flux-sample-keygen-abcde", Version: "1.2.3"}
	if _, err := kube.Run(context.Background(), client, o, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	s, err := client.CoreV1().Secrets(ns).Get(context.Background(), "flux-sample-curve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data[kube.CertKey]
}

func fetch(t *testing.T, client *fake.Clientset, o Options) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var log bytes.Buffer
	err := Fetch(ctx, client, o, &log)
	return log.String(), err
}

// The pod starts before the keygen Job filled the Secret: Fetch waits for the update, then
// writes the certificate, readable (the entrypoint makes Flux's 0400 copy) and complete.
func TestFetchWaitsForTheKeygenJob(t *testing.T) {
	cert := validCert(t)
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "flux-sample-curve", Namespace: ns}, Type: corev1.SecretTypeOpaque}
	client := fake.NewClientset(empty)
	go func() {
		time.Sleep(200 * time.Millisecond)
		filled := empty.DeepCopy()
		filled.Data = map[string][]byte{kube.CertKey: cert}
		client.CoreV1().Secrets(ns).Update(context.Background(), filled, metav1.UpdateOptions{})
	}()
	out := t.TempDir()
	log, err := fetch(t, client, Options{Namespace: ns, CurveName: "flux-sample-curve", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, kube.CertKey))
	if err != nil || !bytes.Equal(got, cert) {
		t.Fatalf("curve.cert = %q, %v; want the Secret's certificate", got, err)
	}
	if fi, _ := os.Stat(filepath.Join(out, kube.CertKey)); fi.Mode().Perm() != 0o444 {
		t.Errorf("curve.cert mode %o, want 444", fi.Mode().Perm())
	}
	if !strings.Contains(log, "fetched curve.cert from Secret team-a/flux-sample-curve") {
		t.Errorf("log: %s", log)
	}
}

func TestFetchConfigMapAndMunge(t *testing.T) {
	cert := validCert(t)
	munge := bytes.Repeat([]byte{7}, kube.MungeKeySize)
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}, Data: map[string]string{kube.CertKey: string(cert)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns}, Data: map[string][]byte{kube.MungeKey: munge}})
	out := t.TempDir()
	if _, err := fetch(t, client, Options{Namespace: ns, CurveName: "c", Storage: kube.StorageConfigMap, MungeName: "m", Out: out}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{kube.CertKey: cert, kube.MungeKey: munge} {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, not the object's data", name, err)
		}
	}
}

// Invalid data is an error at once: waiting would not mend it.
func TestFetchRefusesAnInvalidKey(t *testing.T) {
	client := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}, Data: map[string][]byte{kube.CertKey: []byte("not a cert")}})
	start := time.Now()
	_, err := fetch(t, client, Options{Namespace: ns, CurveName: "c", Out: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "Secret team-a/c its curve.cert is not a valid certificate") || time.Since(start) > 5*time.Second {
		t.Errorf("err = %v after %s, want an immediate error naming the Secret", err, time.Since(start))
	}
}

func TestFetchWaitsForTheParentEndpoint(t *testing.T) {
	client := fake.NewClientset()
	go func() {
		time.Sleep(200 * time.Millisecond)
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "flux-sample-abcde", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "flux-sample"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Hostname: ptr.To("flux-sample-0"), Addresses: []string{"10.244.0.9"}}},
		}
		client.DiscoveryV1().EndpointSlices(ns).Create(context.Background(), slice, metav1.CreateOptions{})
	}()
	log, err := fetch(t, client, Options{Namespace: ns, Out: t.TempDir(), Service: "flux-sample", Host: "flux-sample-0"})
	if err != nil || !strings.Contains(log, "flux-sample-0 is listed by Service team-a/flux-sample") {
		t.Fatalf("err %v, log %s", err, log)
	}
	// Timing out names what it waited for.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = Fetch(ctx, client, Options{Namespace: ns, Out: t.TempDir(), Service: "flux-sample", Host: "flux-sample-3"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "waiting for flux-sample-3 in the EndpointSlices of Service team-a/flux-sample") {
		t.Errorf("err = %v", err)
	}
}

func TestParentHost(t *testing.T) {
	etc := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n10.244.0.7\tteam-flux-sample-5.team-svc.ns.svc.cluster.local\tteam-flux-sample-5\n"
	for _, tc := range []struct {
		pod                Pod
		service, host, err string
	}{
		{pod: Pod{Hostname: "team-flux-sample-5", Index: 5, Hosts: "team-flux-sample-[0-15]"}, service: "team-svc", host: "team-flux-sample-0"},
		{pod: Pod{Hostname: "team-flux-sample-5", Index: 5, Hosts: "team-flux-sample-[0-15]", Topology: "kary:2"}, service: "team-svc", host: "team-flux-sample-2"},
		{pod: Pod{Hostname: "team-flux-sample-0", Index: 0, Hosts: "team-flux-sample-[0-15]"}},
		{pod: Pod{Hostname: "other-5", Index: 4, Hosts: "x-[0-3]"}, err: `hostname "other-5" does not end in -4`},
		{pod: Pod{Hostname: "x-5", Index: 5, Hosts: "x-[0-7]"}, err: "/etc/hosts has no FQDN for x-5"},
		{pod: Pod{Hostname: "team-flux-sample-5", Index: 5, Hosts: "team-flux-sample-[0-15]", Topology: "star"}, err: `topology "star"`},
	} {
		service, host, err := ParentHost(tc.pod, strings.NewReader(etc))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: err %v, want %q", tc.pod, err, tc.err)
			}
			continue
		}
		if err != nil || service != tc.service || host != tc.host {
			t.Errorf("%+v: %q %q %v, want %q %q", tc.pod, service, host, err, tc.service, tc.host)
		}
	}
}

// TestFetchRetriesRBACLag: a list refused right at the start (the API server's RBAC cache has
// not seen the RoleBinding yet) is retried; one still refused after rbacPropagation is an error.
func TestFetchRetriesRBACLag(t *testing.T) {
	cert := validCert(t)
	filled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "flux-sample-curve", Namespace: ns}, Data: map[string][]byte{kube.CertKey: cert}}
	client := fake.NewClientset(filled)
	refusals := 2
	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refusals == 0 {
			return false, nil, nil
		}
		refusals--
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("RBAC: not yet"))
	})
	if _, err := fetch(t, client, Options{Namespace: ns, CurveName: "flux-sample-curve", Out: t.TempDir()}); err != nil || refusals != 0 {
		t.Fatalf("after 2 refusals: %v (refusals left %d)", err, refusals)
	}

	defer func(d time.Duration) { rbacPropagation = d }(rbacPropagation)
	rbacPropagation = 300 * time.Millisecond
	refusals = 1000
	_, err := fetch(t, client, Options{Namespace: ns, CurveName: "flux-sample-curve", Out: t.TempDir()})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("refused for good: %v, want the Forbidden error", err)
	}
}

// TestFetchRetriesABusyAPIServer: a list or watch the API server answers with "too many
// requests", a timeout or "unavailable" (a loaded control plane) is retried until the keys come;
// an error that waiting cannot mend is returned at once.
func TestFetchRetriesABusyAPIServer(t *testing.T) {
	cert := validCert(t)
	filled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "flux-sample-curve", Namespace: ns}, Data: map[string][]byte{kube.CertKey: cert}}
	client := fake.NewClientset(filled)
	busy := []error{
		apierrors.NewTooManyRequests("slow down", 0),
		apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "list", 0),
		apierrors.NewServiceUnavailable("restarting"),
	}
	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if len(busy) == 0 {
			return false, nil, nil
		}
		err := busy[0]
		busy = busy[1:]
		return true, nil, err
	})
	if _, err := fetch(t, client, Options{Namespace: ns, CurveName: "flux-sample-curve", Out: t.TempDir()}); err != nil || len(busy) != 0 {
		t.Fatalf("after three busy answers: %v (left %d)", err, len(busy))
	}

	client = fake.NewClientset(filled)
	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewBadRequest("no such field selector")
	})
	if _, err := fetch(t, client, Options{Namespace: ns, CurveName: "flux-sample-curve", Out: t.TempDir()}); !apierrors.IsBadRequest(err) {
		t.Fatalf("a bad request: %v, want it returned at once", err)
	}
}

// endpointSlice is an EndpointSlice of service listing hosts first..last (with addresses).
func endpointSlice(name, service string, first, last int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i := first; i <= last; i++ {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Hostname:  ptr.To(fmt.Sprintf("flux-sample-%d", i)),
			Addresses: []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)},
		})
	}
	return s
}

// A Service of 250 brokers has three EndpointSlices (Kubernetes splits them at 100 endpoints):
// the parent wait finds a host in any of them, and a host that a slice lists only later, when
// the slice is updated or a new slice is added; a host without an address, or listed only by
// another Service's slice, is not found.
func TestFetchFindsTheParentInAnyEndpointSlice(t *testing.T) {
	client := fake.NewClientset(
		endpointSlice("flux-sample-a", "flux-sample", 0, 99),
		endpointSlice("flux-sample-b", "flux-sample", 100, 199),
		endpointSlice("flux-sample-c", "flux-sample", 200, 249),
		endpointSlice("other-a", "other", 250, 270))
	parent := func(host string, within time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		return Fetch(ctx, client, Options{Namespace: ns, Out: t.TempDir(), Service: "flux-sample", Host: host}, &bytes.Buffer{})
	}
	for _, host := range []string{"flux-sample-0", "flux-sample-150", "flux-sample-249"} {
		if err := parent(host, 5*time.Second); err != nil {
			t.Errorf("%s (listed from the start): %v", host, err)
		}
	}
	if err := parent("flux-sample-260", 300*time.Millisecond); err == nil {
		t.Error("flux-sample-260 is listed only by Service other's slice, but the wait for Service flux-sample found it")
	}

	// Changes once the wait watches: each happens after its watch has started.
	watching := make(chan struct{}, 8)
	client.PrependWatchReactor("endpointslices", func(k8stesting.Action) (bool, watch.Interface, error) {
		watching <- struct{}{}
		return false, nil, nil
	})
	slices := client.DiscoveryV1().EndpointSlices(ns)
	// Each change calls listed just before the update that lists the host with an address: the
	// wait must not return before.
	for _, tc := range []struct {
		host   string
		change func(listed func()) error
	}{
		{"flux-sample-250", func(listed func()) error { // the last slice grows
			listed()
			_, err := slices.Update(context.Background(), endpointSlice("flux-sample-c", "flux-sample", 200, 250), metav1.UpdateOptions{})
			return err
		}},
		{"flux-sample-300", func(listed func()) error { // a fourth slice
			listed()
			_, err := slices.Create(context.Background(), endpointSlice("flux-sample-d", "flux-sample", 251, 300), metav1.CreateOptions{})
			return err
		}},
		{"flux-sample-301", func(listed func()) error {
			// Another Service's slice lists it: not a match.
			if _, err := slices.Update(context.Background(), endpointSlice("other-a", "other", 250, 310), metav1.UpdateOptions{}); err != nil {
				return err
			}
			// A not-ready endpoint without an address: not yet.
			s := endpointSlice("flux-sample-d", "flux-sample", 251, 301)
			s.Endpoints[len(s.Endpoints)-1].Addresses = nil
			if _, err := slices.Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond)
			listed()
			s.Endpoints[len(s.Endpoints)-1].Addresses = []string{"10.244.1.52"}
			_, err := slices.Update(context.Background(), s, metav1.UpdateOptions{})
			return err
		}},
	} {
		changed := make(chan error, 1)
		listed := make(chan struct{})
		go func() {
			<-watching
			changed <- tc.change(func() { close(listed) })
		}()
		if err := parent(tc.host, 5*time.Second); err != nil {
			t.Errorf("%s (listed later): %v", tc.host, err)
		}
		select {
		case <-listed:
		default:
			t.Errorf("%s: the wait returned before a slice of flux-sample listed it with an address", tc.host)
		}
		if err := <-changed; err != nil {
			t.Fatalf("changing the slices for %s: %v", tc.host, err)
		}
	}
}

// TestFetchAPIFiles: the lead's keys container waits for the API's credentials and TLS Secret
// (a Secret of the user's may come after the pods) and writes their files to Out/api.
func TestFetchAPIFiles(t *testing.T) {
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "r-api", Namespace: ns}}
	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "r-tls", Namespace: ns}, Data: map[string][]byte{"tls.crt": []byte("CRT"), "tls.key": []byte("KEY")}}
	client := fake.NewClientset(creds, tls)
	go func() {
		time.Sleep(200 * time.Millisecond)
		filled := creds.DeepCopy()
		filled.Data = map[string][]byte{"user": []byte("flux"), "token": []byte("T"), "secret-key": []byte("S")}
		client.CoreV1().Secrets(ns).Update(context.Background(), filled, metav1.UpdateOptions{})
	}()
	out := t.TempDir()
	if _, err := fetch(t, client, Options{Namespace: ns, APIName: "r-api", APITLSName: "r-tls", Out: out}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"user": "flux", "token": "T", "secret-key": "S", "tls.crt": "CRT", "tls.key": "KEY"} {
		if got, err := os.ReadFile(filepath.Join(out, APIDir, name)); err != nil || string(got) != want {
			t.Errorf("api/%s = %q, %v; want %q", name, got, err, want)
		}
	}
	// A Secret without the keys is waited for, and the error says which.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := Fetch(ctx, fake.NewClientset(), Options{Namespace: ns, APIName: "mine", Out: t.TempDir()}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "user, token, secret-key in Secret team-a/mine") {
		t.Errorf("err = %v", err)
	}
}
