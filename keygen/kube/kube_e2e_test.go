//go:build e2e

package kube

// The create/keep/refuse logic against a real API server, as the hook's service account: a
// Role with exactly the chart's rules (create secrets/configmaps, get and update only the named objects)
// and requests impersonating that account. Run with the e2e tag and KUBECONFIG:
//
//	go test -tags e2e -count=1 ./keygen/kube/

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minicluster/minicluster/keygen"
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

// hookClient makes a namespace with the chart's keygen ServiceAccount, Role and RoleBinding and
// returns a client that acts as that account.
func hookClient(t *testing.T, release string, secrets, configMaps []string) (kubernetes.Interface, string) {
	t.Helper()
	ctx := context.Background()
	cfg := adminConfig(t)
	admin := kubernetes.NewForConfigOrDie(cfg)
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "keygen-e2e-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	name := release + "-keygen"
	var rules []rbacv1.PolicyRule
	if len(configMaps) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: configMaps, Verbs: []string{"get", "update"}})
	}
	if len(secrets) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: secrets, Verbs: []string{"get", "update"}})
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(admin.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}))
	must(admin.RbacV1().Roles(ns.Name).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}))
	must(admin.RbacV1().RoleBindings(ns.Name).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns.Name}},
	}, metav1.CreateOptions{}))
	hook := rest.CopyConfig(cfg)
	hook.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns.Name, name)}
	return kubernetes.NewForConfigOrDie(hook), ns.Name
}

func TestRealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, ns := hookClient(t, "kc", []string{"kc-curve", "kc-munge"}, nil)
	if _, err := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the hook's account may list Secrets (err %v): the test is not running with its rights", err)
	}
	o := Options{Release: "kc", Namespace: ns, Munge: true, Hostname: "e2e"}
	var log bytes.Buffer
	res, err := Run(ctx, client, o, &log)
	if err != nil || len(res) != 2 || res[0].Action != "created" || res[1].Action != "created" {
		t.Fatalf("first run as the hook's account: %+v %v\n%s", res, err, log.String())
	}
	first, err := client.CoreV1().Secrets(ns).Get(ctx, "kc-curve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keygen.Parse(first.Data[CertKey]); err != nil {
		t.Fatalf("stored certificate: %v", err)
	}
	res, err = Run(ctx, client, o, &log)
	if err != nil || res[0].Action != "kept" || res[1].Action != "kept" {
		t.Fatalf("second run: %+v %v\n%s", res, err, log.String())
	}
	again, _ := client.CoreV1().Secrets(ns).Get(ctx, "kc-curve", metav1.GetOptions{})
	if !bytes.Equal(again.Data[CertKey], first.Data[CertKey]) || again.ResourceVersion != first.ResourceVersion {
		t.Fatal("the second run changed the certificate Secret")
	}
	t.Logf("as the hook's service account:\n%s", log.String())

	// A broken object of the release is refused, and left as it is.
	admin := kubernetes.NewForConfigOrDie(adminConfig(t))
	broken := &corev1.Secret{ObjectMeta: objectMeta(Options{Release: "kb", Namespace: ns}, "kb-curve", "curve"),
		Data: map[string][]byte{CertKey: []byte("curve\n")}}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = Run(ctx, admin, Options{Release: "kb", Namespace: ns}, &log)
	if err == nil || !strings.Contains(err.Error(), "no public-key") || !strings.Contains(err.Error(), "helm uninstall kb") {
		t.Fatalf("broken existing Secret: %v", err)
	}
	if s, _ := admin.CoreV1().Secrets(ns).Get(ctx, "kb-curve", metav1.GetOptions{}); string(s.Data[CertKey]) != "curve\n" {
		t.Fatal("the broken Secret was changed")
	}

	// ConfigMap storage with its own Role.
	cmClient, cmNS := hookClient(t, "kcm", nil, []string{"kcm-curve"})
	for _, want := range []string{"created", "kept"} {
		res, err := Run(ctx, cmClient, Options{Release: "kcm", Namespace: cmNS, Storage: StorageConfigMap}, &log)
		if err != nil || res[0].Action != want {
			t.Fatalf("ConfigMap storage: %+v %v, want %s", res, err, want)
		}
	}
}
