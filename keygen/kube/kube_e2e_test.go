//go:build e2e

package kube_test

// The fill/keep/refuse logic (package kube) and the sidecar's fetch (package sidecar) against a
// real API server, as the chart's service accounts: Roles with exactly the chart's rules and
// requests impersonating those accounts.
// Run with the e2e tag and KUBECONFIG:
//
//	go test -tags e2e -count=1 ./keygen/kube/

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minicluster/minicluster/keygen/kube"
	"github.com/minicluster/minicluster/keygen/sidecar"
)

func adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		t.Fatal("KUBECONFIG is not set: the e2e tests need a cluster (make cluster-up)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// namespace makes a namespace for one test and removes it afterwards.
func namespace(t *testing.T, admin kubernetes.Interface) string {
	t.Helper()
	ns, err := admin.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "keygen-e2e-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// accountClient makes a ServiceAccount with a Role of exactly these rules and returns a client
// that acts as that account.
func accountClient(t *testing.T, admin kubernetes.Interface, ns, name string, rules []rbacv1.PolicyRule) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}))
	must(admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}))
	must(admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}))
	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, name)
	// The API server's RBAC cache sees a new RoleBinding a moment later: wait until it grants
	// each rule, so that a test's first call is not refused for that.
	for _, r := range rules {
		attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
		if len(r.ResourceNames) > 0 {
			attrs.Name = r.ResourceNames[0]
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs}}, metav1.CreateOptions{})
			if err == nil && sar.Status.Allowed {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is not granted %+v 30 s after its RoleBinding: %v", user, *attrs, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cfg := rest.CopyConfig(adminConfig(t))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(cfg)
}

// The chart's rules (templates/keygen-rbac.yaml, broker-rbac.yaml) for objects of one kind.
func keygenRules(resource string, names ...string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{resource}, ResourceNames: names, Verbs: []string{"get", "update"}}}
}

func brokerRules(resource string, names ...string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{resource}, ResourceNames: names, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}
}

// As the chart runs it: Helm creates the data-less objects, the keygen Job fills them with only
// get and update on their names, and a broker pod's sidecar, with only get, list and watch on
// those names, waits for the key and reads it.
func TestRealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(adminConfig(t))
	ns := namespace(t, admin)
	for _, name := range []string{"kc-curve", "kc-munge"} {
		if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: kube.ObjectMeta(kube.Options{Release: "kc", Namespace: ns}, name, "curve"), Type: corev1.SecretTypeOpaque}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	keygenClient := accountClient(t, admin, ns, "kc-keygen", keygenRules("secrets", "kc-curve", "kc-munge"))
	brokerClient := accountClient(t, admin, ns, "kc-broker", brokerRules("secrets", "kc-curve", "kc-munge"))
	if _, err := brokerClient.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the brokers' account may list all Secrets (err %v): the test is not running with its rights", err)
	}

	// The broker pod starts first and waits; the keygen Job fills the Secrets meanwhile.
	out := t.TempDir()
	fetched := make(chan error, 1)
	go func() {
		fetched <- sidecar.Fetch(ctx, brokerClient, sidecar.Options{Namespace: ns, CurveName: "kc-curve", MungeName: "kc-munge", Out: out}, io.Discard)
	}()
	time.Sleep(time.Second)
	o := kube.Options{Release: "kc", Namespace: ns, Munge: true, Hostname: "e2e"}
	var log bytes.Buffer
	res, err := kube.Run(ctx, keygenClient, o, &log)
	if err != nil || len(res) != 2 || res[0].Action != "filled" || res[1].Action != "filled" {
		t.Fatalf("first run as the keygen account: %+v %v\n%s", res, err, log.String())
	}
	if err := <-fetched; err != nil {
		t.Fatalf("fetch as the brokers' account: %v", err)
	}
	first, err := admin.CoreV1().Secrets(ns).Get(ctx, "kc-curve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, kube.CertKey))
	if err != nil || !bytes.Equal(got, first.Data[kube.CertKey]) {
		t.Fatalf("the broker fetched %q (%v), not the Secret's certificate", got, err)
	}
	res, err = kube.Run(ctx, keygenClient, o, &log)
	if err != nil || res[0].Action != "kept" || res[1].Action != "kept" {
		t.Fatalf("second run: %+v %v\n%s", res, err, log.String())
	}
	again, _ := admin.CoreV1().Secrets(ns).Get(ctx, "kc-curve", metav1.GetOptions{})
	if !bytes.Equal(again.Data[kube.CertKey], first.Data[kube.CertKey]) || again.ResourceVersion != first.ResourceVersion {
		t.Fatal("the second run changed the certificate Secret")
	}
	t.Logf("as the keygen Job's account:\n%s", log.String())

	// A broken object of the release is refused, and left as it is.
	broken := &corev1.Secret{ObjectMeta: kube.ObjectMeta(kube.Options{Release: "kb", Namespace: ns}, "kb-curve", "curve"),
		Data: map[string][]byte{kube.CertKey: []byte("curve\n")}}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = kube.Run(ctx, admin, kube.Options{Release: "kb", Namespace: ns}, &log)
	if err == nil || !strings.Contains(err.Error(), "no public-key") || !strings.Contains(err.Error(), "helm uninstall kb") {
		t.Fatalf("broken existing Secret: %v", err)
	}
	if s, _ := admin.CoreV1().Secrets(ns).Get(ctx, "kb-curve", metav1.GetOptions{}); string(s.Data[kube.CertKey]) != "curve\n" {
		t.Fatal("the broken Secret was changed")
	}

	// ConfigMap storage with its own Roles.
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: kube.ObjectMeta(kube.Options{Release: "kcm", Namespace: ns}, "kcm-curve", "curve")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cmKeygen := accountClient(t, admin, ns, "kcm-keygen", keygenRules("configmaps", "kcm-curve"))
	for _, want := range []string{"filled", "kept"} {
		res, err := kube.Run(ctx, cmKeygen, kube.Options{Release: "kcm", Namespace: ns, Storage: kube.StorageConfigMap}, &log)
		if err != nil || res[0].Action != want {
			t.Fatalf("ConfigMap storage: %+v %v, want %s", res, err, want)
		}
	}
	cmBroker := accountClient(t, admin, ns, "kcm-broker", brokerRules("configmaps", "kcm-curve"))
	if err := sidecar.Fetch(ctx, cmBroker, sidecar.Options{Namespace: ns, CurveName: "kcm-curve", Storage: kube.StorageConfigMap, Out: t.TempDir()}, io.Discard); err != nil {
		t.Fatalf("fetch from a ConfigMap as the brokers' account: %v", err)
	}
}

// The API's credentials as the chart makes them: Helm creates the data-less Secret, the keygen
// Job fills it (get and update on its name), and the lead's keys container, with get, list and
// watch on that name, hands the files over; nothing else of the namespace is readable to it.
func TestRealAPIServerAPICredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(adminConfig(t))
	ns := namespace(t, admin)
	meta := kube.ObjectMeta(kube.Options{Release: "ka", Namespace: ns}, "ka-api", "api")
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keygenClient := accountClient(t, admin, ns, "ka-keygen", keygenRules("secrets", "ka-api"))
	brokerClient := accountClient(t, admin, ns, "ka-broker", brokerRules("secrets", "ka-api"))
	out := t.TempDir()
	fetched := make(chan error, 1)
	go func() {
		fetched <- sidecar.Fetch(ctx, brokerClient, sidecar.Options{Namespace: ns, APIName: "ka-api", Out: out}, io.Discard)
	}()
	time.Sleep(time.Second)
	var log bytes.Buffer
	res, err := kube.Run(ctx, keygenClient, kube.Options{Release: "ka", Namespace: ns, SkipCurve: true, APIName: "ka-api"}, &log)
	if err != nil || len(res) != 1 || res[0].Action != "filled" {
		t.Fatalf("as the keygen account: %+v %v\n%s", res, err, log.String())
	}
	if err := <-fetched; err != nil {
		t.Fatalf("fetch as the brokers' account: %v", err)
	}
	s, err := admin.CoreV1().Secrets(ns).Get(ctx, "ka-api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Annotations[kube.FilledBy] == "" || len(s.Data["token"]) != 40 {
		t.Fatalf("the filled Secret: annotations %v, %d bytes of token", s.Annotations, len(s.Data["token"]))
	}
	for _, k := range sidecar.APICredentialKeys {
		got, err := os.ReadFile(filepath.Join(out, sidecar.APIDir, k))
		if err != nil || !bytes.Equal(got, s.Data[k]) {
			t.Errorf("%s handed over: %q %v", k, got, err)
		}
	}
	if strings.Contains(log.String(), string(s.Data["token"])) {
		t.Error("the keygen log shows the token")
	}
}
