//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
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

// Ship through a registry, as a user would: as someone who may only do what the built-in admin
// ClusterRole allows in one namespace, install a release from oci:// with imageRegistry so that
// every image is pulled from the registry (pull policy Always), check Flux, run helm test,
// resize, uninstall. With Helm 3 and Helm 4. The release under test is
//   - with E2E_RELEASE_REGISTRY and E2E_RELEASE_VERSION (ci/release.sh sets them in its last
//     step): exactly what that release pushed;
//   - otherwise: a release of the committed tree (ci/release.sh on a clone of HEAD, so
//     uncommitted changes are not in it) to a new path of the local cluster's registry
//     (CLUSTER_REGISTRY, started by `make cluster-up`), whose last step is this test in the
//     first form. So `make release` is tested end to end, its own e2e step included.
func TestInstallFromRegistry(t *testing.T) {
	t.Parallel()
	images, releaseVersion := os.Getenv("E2E_RELEASE_REGISTRY"), os.Getenv("E2E_RELEASE_VERSION")
	if images == "" {
		releaseHead(t)
		return
	}
	if releaseVersion == "" {
		t.Fatal("E2E_RELEASE_REGISTRY is set but E2E_RELEASE_VERSION is not: give the version ci/release.sh pushed")
	}
	chartRef := "oci://" + images + "/charts/minicluster"
	var plainHTTP []string
	if os.Getenv("E2E_RELEASE_PLAIN_HTTP") == "1" {
		plainHTTP = []string{"--plain-http"}
	}
	t.Logf("installing the release %s %s, images from %s", chartRef, releaseVersion, images)

	// Every image from the registry, pulled on every start. The chart's own (flux-keygen)
	// through imageRegistry; the application, view and test images as written.
	sets := "imageRegistry=" + images +
		",image=" + images + "/app:" + releaseVersion + ",imagePullPolicy=Always" +
		",flux.view.image=" + images + "/flux-view:" + releaseVersion + ",flux.view.imagePullPolicy=Always" +
		",keygen.image.pullPolicy=Always" +
		",tests.image=" + images + "/busybox:" + releaseVersion + ",tests.imagePullPolicy=Always" +
		",size=3"
	fromRegistry := append([]string{chartRef, "--version", releaseVersion}, plainHTTP...)

	eachHelm(t, func(t *testing.T, helm string) {
		ns := newNamespace(t, "registry")
		userConfig := namespaceAdmin(t, ns)
		home := t.TempDir() // a user with no helm configuration, plugins or cache of ours
		r := newRelease(t, ns, "flux-reg", helm)
		r.env = []string{"KUBECONFIG=" + userConfig, "HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
			"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "HELM_DATA_HOME=" + filepath.Join(home, "data")}

		if out, err := r.run(append(append([]string{"install", r.name}, fromRegistry...), "--set", sets)...); err != nil {
			t.Fatalf("helm install %s from %s as the namespace admin: %v\n%s", r.name, chartRef, err, out)
		}
		// What a user runs after install, with the user's rights: it returns when the brokers are up.
		if out, code, took := runWaitCLI(t, ns, r.name, "5m", "KUBECONFIG="+userConfig); code != 0 || !strings.Contains(out, "3 of 3 broker pods ready") {
			t.Errorf("flux-keygen kube wait as the namespace admin: exit %d after %s:\n%s", code, took, out)
		}
		pods := waitFluxUp(t, ns, r.name, 3, 16, wiringTimeout)
		checkFluxRun(t, ns, r.name, pods)
		checkPulledFrom(t, ns, r.name, images)
		helmTest(t, r)

		if out, err := r.run(append(append([]string{"upgrade", r.name}, fromRegistry...), "--reuse-values", "--set", "size=5")...); err != nil {
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

// releaseHead releases the committed tree with ci/release.sh to a new path of the local
// cluster's registry; the release's last step runs TestInstallFromRegistry against it.
func releaseHead(t *testing.T) {
	reg := os.Getenv("CLUSTER_REGISTRY")
	if reg == "" {
		t.Fatal("CLUSTER_REGISTRY is empty: start the local cluster (make cluster-up) and export CLUSTER_REGISTRY=NODE_IP:5000, the registry it prints (ci/cluster/lib.sh)")
	}
	clone := filepath.Join(t.TempDir(), "minicluster")
	runCmd(t, time.Minute, "git", "clone", "-q", repoRoot, clone)
	fluxDir := strings.TrimSpace(runCmd(t, time.Minute, "bash", "ci/flux/build.sh", "--print-dir"))
	registry := fmt.Sprintf("%s/e2e-release-%d", reg, time.Now().UnixNano())
	cmd := exec.Command("bash", "ci/release.sh")
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), "VERSION="+version, "REGISTRY="+registry, "INSECURE=1", "MINICLUSTER_FLUX_DIR="+fluxDir,
		"HELM="+helm3, "HELM4="+helm4, "RELEASE_DIR="+t.TempDir(), "E2E_RELEASE_REGISTRY=", "E2E_RELEASE_VERSION=")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	shown := indent
	if err != nil {
		shown = indentAll // the failure of its end-to-end step is in the middle
	}
	t.Logf("ci/release.sh VERSION=%s REGISTRY=%s (%.1fs): %v\n%s", version, registry, time.Since(start).Seconds(), err, shown(string(out)))
	if err != nil {
		t.Fatalf("ci/release.sh: %v", err)
	}
	for _, want := range []string{"released minicluster " + version, "--- PASS: TestInstallFromRegistry",
		registry + "/flux-view:" + version + "@sha256:", registry + "/app:" + version + "@sha256:",
		"tested end to end from " + registry} {
		if !strings.Contains(string(out), want) {
			t.Errorf("ci/release.sh's output lacks %q", want)
		}
	}
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
