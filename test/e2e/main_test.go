//go:build e2e

// Package e2e installs the minicluster chart on a real cluster (the one KUBECONFIG names) with
// the helm CLI and checks the result with client-go and with real Flux (flux-core built from
// source by ci/flux, in the images ci/images makes): Flux from the view image in an
// application image without Flux (the default), and Flux in the image. Run with `make e2e`;
// `make bench-e2e` prints the timings.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minicluster/minicluster/internal/kubeclient"
	"github.com/minicluster/minicluster/internal/repo"
)

var (
	kube       kubernetes.Interface
	restConfig *rest.Config
	kubeconfig string
	repoRoot   string
	helm3      string // helm v3 CLI
	helm4      string // helm v4 CLI
	chartDir   string
)

// The images `make images` builds (ci/images). With CLUSTER_REGISTRY (the local cluster's
// registry, which `make e2e` fills with ci/push) every pod pulls them from there, as on a real
// cluster; without it they must be on the nodes already (kind load) under their local names.
// Not both at once: a kubelet (1.35, ensure-secret-pulled-images) that pulled an image under
// one name verifies, by pulling, every other name of the same image, unless told not to as
// cluster-up's are (TestImportedImageAfterPull).
// Each is tagged with ./VERSION, as `make images` tags them.
var (
	version     string // ./VERSION
	imagePrefix string
	appImage    string   // Debian, no Flux
	viewImage   string   // the real flux-view layout
	fluxImage   string   // Flux installed in the image
	mpiImage    string   // Debian with MPICH, OpenMPI, LAMMPS and mpi-hello; no Flux
	fluxMPI     string   // mpiImage with Flux installed
	testsImage  string   // busybox, for helm test
	testImages  []string // --set arguments that point the chart at them
)

func useImages(prefix string) {
	imagePrefix = prefix
	appImage, viewImage, fluxImage, testsImage = prefix+"app:"+version, prefix+"flux-view:"+version, prefix+"flux:"+version, prefix+"busybox:"+version
	mpiImage, fluxMPI = prefix+"mpi:"+version, prefix+"flux-mpi:"+version
	values := "image=" + appImage + ",imagePullPolicy=IfNotPresent,flux.view.image=" + viewImage + ",flux.view.imagePullPolicy=IfNotPresent," +
		"keygen.image.pullPolicy=IfNotPresent,tests.image=" + testsImage + ",tests.imagePullPolicy=IfNotPresent"
	if prefix != "localhost/minicluster/" {
		values += ",imageRegistry=" + strings.TrimSuffix(prefix, "/") // the keygen image too
	}
	testImages = []string{"--set", values}
}

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func setup() error {
	var err error
	if repoRoot, err = repo.Root(); err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		return err
	}
	version = strings.TrimSpace(string(raw))
	// E2E_CHART and E2E_INSTALL_ARGS run the suite against another build of the chart.
	chartDir = envOr("E2E_CHART", filepath.Join(repoRoot, "charts", "minicluster"))
	if reg := os.Getenv("CLUSTER_REGISTRY"); reg != "" {
		useImages(reg + "/minicluster/")
	} else {
		useImages("localhost/minicluster/")
	}
	testImages = append(testImages, strings.Fields(os.Getenv("E2E_INSTALL_ARGS"))...)
	kubeconfig = os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(repoRoot, ".cluster", "kubeconfig")
		os.Setenv("KUBECONFIG", kubeconfig)
	}
	helm3 = envOr("HELM3", filepath.Join(repoRoot, "bin", "tools", "helm3", "helm"))
	helm4 = envOr("HELM4", filepath.Join(repoRoot, "bin", "tools", "helm4", "helm"))
	for _, f := range []string{helm3, helm4, bin("minicluster"), bin("flux-keygen"), bin("minicluster-postrender"), bin("minicluster-convert"), bin("helm-plugin/minicluster/plugin.yaml")} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s is missing: run `make tools build` first (or set HELM3/HELM4)", f)
		}
	}
	if restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return fmt.Errorf("KUBECONFIG=%s: %w; start a cluster with `make cluster-up` (or `make kind-up`)", kubeconfig, err)
	}
	restConfig.QPS, restConfig.Burst = 50, 100
	// The typed client in protobuf, as the chart's programs talk (the dynamic ones stay JSON).
	typed := rest.CopyConfig(restConfig)
	kubeclient.Protobuf(typed)
	if kube, err = kubernetes.NewForConfig(typed); err != nil {
		return err
	}
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("the cluster in KUBECONFIG=%s does not answer: %w; start one with `make cluster-up`", kubeconfig, err)
	}
	fmt.Printf("e2e: Kubernetes %s at %s (KUBECONFIG=%s)\n", v.GitVersion, restConfig.Host, kubeconfig)
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// bin is a path under the repository's bin directory (made by `make build`).
func bin(name string) string { return filepath.Join(repoRoot, "bin", name) }

// requiredEnv is what .ci/run sets (E2E_REQUIRED=1 make test): every end-to-end test must then
// run, so a test that would skip for want of something fails instead.
const requiredEnv = "E2E_REQUIRED"

// skipUnlessRequired ends the test for want of what msg names: a skip, or a failure under
// E2E_REQUIRED=1.
func skipUnlessRequired(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(requiredEnv) == "1" {
		t.Fatalf("%s (%s=1: nothing may skip)", msg, requiredEnv)
	}
	t.Skipf("%s (skipped; %s=1 makes it a failure)", msg, requiredEnv)
}
