//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Ship through a registry, as a user would: push the images (go run ./ci/push) and the chart
// (helm package, helm push) to the local cluster's registry (CLUSTER_REGISTRY, started by
// `make cluster-up`), then, as a user who may only do what the built-in admin ClusterRole allows
// in one namespace, install from oci:// with imageRegistry so that every image is pulled from
// it (pull policy Always), check Flux, run helm test, resize, uninstall. With Helm 3 and Helm 4.
func TestInstallFromRegistry(t *testing.T) {
	t.Parallel()
	reg := os.Getenv("CLUSTER_REGISTRY")
	if reg == "" {
		t.Fatal("CLUSTER_REGISTRY is empty: start the local cluster (make cluster-up) and export CLUSTER_REGISTRY=NODE_IP:5000, the registry it prints (ci/cluster/lib.sh)")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw)) // the tag `make images` gave flux-keygen (ci/push insists)
	images := reg + "/minicluster"

	runCmd(t, 15*time.Minute, "go", "run", "./ci/push", "--registry", images, "--version", version,
		"--insecure", filepath.Join(repoRoot, "bin", "images"))
	pkgDir := t.TempDir()
	runCmd(t, time.Minute, helm3, "package", chartDir, "-d", pkgDir, "--version", version, "--app-version", version)
	runCmd(t, 2*time.Minute, helm3, "push", filepath.Join(pkgDir, "minicluster-"+version+".tgz"),
		"oci://"+reg+"/charts", "--plain-http")
	chartRef := "oci://" + reg + "/charts/minicluster"

	// Every image from the registry, pulled on every start. The chart's own (flux-keygen, the
	// test image) through imageRegistry; the application and view images as written.
	sets := "imageRegistry=" + images +
		",image=" + images + "/app:test,imagePullPolicy=Always" +
		",flux.view.image=" + images + "/flux-view:test,flux.view.imagePullPolicy=Always" +
		",keygen.image.pullPolicy=Always" +
		",tests.image=" + testsImage + ",tests.imagePullPolicy=Always" +
		",size=3,interactive=true"

	eachHelm(t, func(t *testing.T, helm string) {
		ns := newNamespace(t, "registry")
		userConfig := namespaceAdmin(t, ns)
		home := t.TempDir() // a user with no helm configuration, plugins or cache of ours
		r := newRelease(t, ns, "flux-reg", helm)
		r.env = []string{"KUBECONFIG=" + userConfig, "HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
			"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "HELM_DATA_HOME=" + filepath.Join(home, "data")}

		if out, err := r.run("install", r.name, chartRef, "--version", version, "--plain-http", "--set", sets); err != nil {
			t.Fatalf("helm install %s from %s as the namespace admin: %v\n%s", r.name, chartRef, err, out)
		}
		pods := waitFluxUp(t, ns, r.name, 3, 16, wiringTimeout)
		checkFluxRun(t, ns, r.name, pods)
		checkPulledFrom(t, ns, r.name, images)
		helmTest(t, r)

		if out, err := r.run("upgrade", r.name, chartRef, "--version", version, "--plain-http", "--reuse-values", "--set", "size=5"); err != nil {
			t.Fatalf("helm upgrade %s --set size=5: %v\n%s", r.name, err, out)
		}
		pods = waitFluxUp(t, ns, r.name, 5, 16, wiringTimeout)
		checkFluxRun(t, ns, r.name, pods)
		checkPulledFrom(t, ns, r.name, images)

		if out, err := r.run("uninstall", r.name); err != nil {
			t.Fatalf("helm uninstall %s: %v\n%s", r.name, err, out)
		}
		waitNothingLeft(t, ns, r.name, time.Minute)
	})
}

// runCmd runs a command in the repository root, failing the test with its output on error.
func runCmd(t *testing.T, within time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s (%.1fs): %v\n%s", filepath.Base(name), strings.Join(args, " "), time.Since(start).Seconds(), err, indent(out.String()))
	if err != nil {
		t.Fatalf("%s %s: %v", filepath.Base(name), strings.Join(args, " "), err)
	}
	return out.String()
}

// namespaceAdmin makes a ServiceAccount bound to the built-in admin ClusterRole by a RoleBinding
// in ns only, and returns the path of a kubeconfig that authenticates as it (a TokenRequest
// token) to the test's API server with the test's CA.
func namespaceAdmin(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	const sa = "installer"
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceAccount %s: %v", sa, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa + "-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RoleBinding %s: %v", rb.Name, err)
	}
	expiry := int64(3600)
	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s: %v", sa, err)
	}
	ca := restConfig.CAData
	if len(ca) == 0 && restConfig.CAFile != "" {
		if ca, err = os.ReadFile(restConfig.CAFile); err != nil {
			t.Fatalf("the API server's CA: %v", err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: ca,
		TLSServerName: restConfig.ServerName, InsecureSkipTLSVerify: restConfig.Insecure}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts[sa] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: sa, Namespace: ns}
	cfg.CurrentContext = sa
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}

	// The user is what we think: it can read its namespace and nothing cluster-wide.
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	user, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := user.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the namespace admin cannot list pods in %s: %v", ns, err)
	}
	if _, err := user.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the namespace admin may list namespaces (err %v): it must have rights in %s only", err, ns)
	}
	return path
}

// checkPulledFrom: every container of the release's pods (brokers and keygen Job) runs an image
// from the registry prefix, pulled on every start, and every started one has an image ID.
func checkPulledFrom(t *testing.T, ns, release, prefix string) {
	t.Helper()
	pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("no pods of release %s in %s", release, ns)
	}
	for _, p := range pods.Items {
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			if !strings.HasPrefix(c.Image, prefix+"/") || c.ImagePullPolicy != corev1.PullAlways {
				t.Errorf("pod %s container %s: image %q pull policy %s, want %s/... and Always", p.Name, c.Name, c.Image, c.ImagePullPolicy, prefix)
			}
		}
		for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if (s.State.Running != nil || s.State.Terminated != nil) && s.ImageID == "" {
				t.Errorf("pod %s container %s started with no image ID", p.Name, s.Name)
			}
		}
	}
}
