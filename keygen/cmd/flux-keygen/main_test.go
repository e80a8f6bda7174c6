package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/minicluster/minicluster/keygen"
)

// testEnv runs commands in process with a fixed host and clock and, for kube, a fake clientset
// (the kube mode against a real API server is tested in test/e2e).
func testEnv(client kubernetes.Interface, vars map[string]string) env {
	return env{
		getenv:    func(k string) string { return vars[k] },
		hostname:  func() (string, error) { return "node-1", nil },
		now:       func() time.Time { return time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) },
		newClient: func(string) (kubernetes.Interface, error) { return client, nil },
	}
}

func runCLI(t *testing.T, e env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb, e)
	return code, out.String(), errb.String()
}

func TestGenerateAndVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "curve.cert")
	code, _, stderr := runCLI(t, testEnv(nil, nil), "--name", "cluster-a", "--meta", "site=lab 1,owner=ops", "--meta", "empty", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("certificate file: %v, mode %v", err, st.Mode())
	}
	c, err := keygen.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"name": "cluster-a", "site": "lab 1", "owner": "ops", "empty": "",
		"keygen.hostname": "node-1", "keygen.time": "2026-11-23T10:00:00"} {
		if got, ok := c.MetaValue(k); !ok || got != v {
			t.Errorf("metadata %s = %q (%v), want %q", k, got, ok, v)
		}
	}
	code, stdout, _ := runCLI(t, testEnv(nil, nil), "verify", path)
	if code != exitOK || !strings.Contains(stdout, "valid CURVE certificate, public key "+c.PublicText()+`, name "cluster-a"`) {
		t.Fatalf("verify: exit %d, %q", code, stdout)
	}
}

func TestVerifyFailures(t *testing.T) {
	dir := t.TempDir()
	good, _ := keygen.GenerateKeyPair()
	goodData, _ := good.Encode()
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other, _ := keygen.GenerateKeyPair()
	mismatch := strings.Replace(string(goodData), good.PublicText(), other.PublicText(), 1)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"verify", write("mismatch", mismatch, 0o600)}, exitFailure, "does not match secret-key"},
		{[]string{"verify", write("indented", " curve\n", 0o600)}, exitFailure, `line 1: section name "curve" must start the line`},
		{[]string{"verify", write("open", string(goodData), 0o644)}, exitFailure, "mode 0644 lets group or others read"},
		{[]string{"verify", filepath.Join(dir, "missing")}, exitFailure, "no such file"},
		{[]string{"verify"}, exitUsage, "accepts 1 arg"},
		{[]string{"--name", "a_b", filepath.Join(dir, "x")}, exitUsage, `character '_' is not allowed`},
		{[]string{"--meta", "k=a\"b", filepath.Join(dir, "x")}, exitUsage, `character '"' is not allowed`},
		{[]string{"--meta", "=v", filepath.Join(dir, "x")}, exitUsage, "empty key"},
		{[]string{"a", "b"}, exitUsage, "accepts at most 1 arg"},
		{[]string{"--nope"}, exitUsage, "unknown flag: --nope"},
		{[]string{filepath.Join(dir, "no-dir", "x")}, exitFailure, "writing certificate"},
	} {
		code, _, stderr := runCLI(t, testEnv(nil, nil), tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("flux-keygen %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "flux-keygen: ") {
			t.Errorf("flux-keygen %q: stderr is not one line: %q", tc.args, stderr)
		}
	}
	// --ignore-mode accepts the world-readable file (a mounted Secret).
	if code, _, stderr := runCLI(t, testEnv(nil, nil), "verify", "--ignore-mode", filepath.Join(dir, "open")); code != exitOK {
		t.Errorf("verify --ignore-mode: exit %d %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused command still wrote the certificate")
	}
}

func TestKube(t *testing.T) {
	client := fake.NewClientset()
	e := testEnv(client, map[string]string{"POD_NAMESPACE": "ns1"})
	args := []string{"kube", "--release=r1", "--curve-name=r1-curve", "--storage=Secret", "--munge", "--munge-name=r1-munge"}
	code, stdout, stderr := runCLI(t, e, args...)
	if code != exitOK || !strings.Contains(stdout, "created Secret ns1/r1-curve") || !strings.Contains(stdout, "created Secret ns1/r1-munge") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	s, err := client.CoreV1().Secrets("ns1").Get(context.Background(), "r1-curve", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := keygen.Parse(s.Data["curve.cert"])
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.MetaValue("keygen.hostname"); v != "node-1" {
		t.Errorf("keygen.hostname %q", v)
	}
	code, stdout, _ = runCLI(t, e, args...)
	if code != exitOK || strings.Count(stdout, "kept Secret") != 2 {
		t.Fatalf("re-run: exit %d, %s", code, stdout)
	}
	// An invalid existing object: exit 1, one line naming the way out.
	client2 := fake.NewClientset()
	e2 := testEnv(client2, map[string]string{"POD_NAMESPACE": "ns1"})
	s.Data["curve.cert"] = []byte("curve\n")
	s.ResourceVersion = ""
	if _, err := client2.CoreV1().Secrets("ns1").Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, e2, args[:3]...)
	if code != exitFailure || !strings.Contains(stderr, "helm uninstall r1 -n ns1") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("invalid existing: exit %d, %q", code, stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"kube", "--release=r1", "--skip-curve", "--storage=Secret", "--munge"}, "drop --curve-name and --storage"},
		{[]string{"kube", "--release=r1", "--storage=Vault"}, `--storage "Vault"`},
		{[]string{"kube"}, "--release is empty"},
		{[]string{"kube", "--release=r1", "--skip-curve"}, "nothing to do"},
		{[]string{"kube", "--release=r1", "extra"}, "unknown command"},
	} {
		code, _, stderr := runCLI(t, testEnv(fake.NewClientset(), map[string]string{"POD_NAMESPACE": "ns1"}), tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// Without POD_NAMESPACE and --namespace.
	if code, _, stderr := runCLI(t, testEnv(fake.NewClientset(), nil), "kube", "--release=r1"); code != exitUsage || !strings.Contains(stderr, "POD_NAMESPACE") {
		t.Errorf("no namespace: exit %d, %q", code, stderr)
	}
}

// TestBinary runs the built program, as the keygen Job and users do: exit codes, help text, a
// certificate with mode 0600, and the outside-a-cluster error of kube mode.
func TestBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "flux-keygen")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=9.9.9", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	exe := func(env []string, args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	cert := filepath.Join(dir, "curve.cert")
	if code, out := exe(nil, cert); code != 0 {
		t.Fatalf("flux-keygen PATH: exit %d %s", code, out)
	}
	if code, out := exe(nil, "verify", cert); code != 0 || !strings.Contains(out, "valid CURVE certificate") {
		t.Fatalf("verify: exit %d %s", code, out)
	}
	c, _ := keygen.ParseFile(cert)
	if v, _ := c.MetaValue("keygen.minicluster-version"); v != "9.9.9" {
		t.Errorf("keygen.minicluster-version %q, want the -X version", v)
	}
	if code, out := exe(nil, "--version"); code != 0 || !strings.Contains(out, "9.9.9") {
		t.Errorf("--version: exit %d %s", code, out)
	}
	if code, out := exe(nil, "--help"); code != 0 || !strings.Contains(out, "flux keygen") || !strings.Contains(out, "verify") {
		t.Errorf("--help: exit %d %s", code, out)
	}
	if code, out := exe(nil, "kube", "--help"); code != 0 || !strings.Contains(out, "A Secret is the default because") {
		t.Errorf("kube --help: exit %d %s", code, out)
	}
	if code, out := exe(nil, "verify", filepath.Join(dir, "missing")); code != 1 {
		t.Errorf("verify missing: exit %d %s", code, out)
	}
	if code, out := exe(nil, "--bogus"); code != 2 {
		t.Errorf("--bogus: exit %d %s", code, out)
	}
	if code, out := exe([]string{"POD_NAMESPACE=ns"}, "kube", "--release=r"); code != 2 || !strings.Contains(out, "not running in a pod") {
		t.Errorf("kube outside a cluster: exit %d %s", code, out)
	}
	if code, out := exe(nil); code != 0 || !strings.Contains(out, "WARNING: add PATH argument") {
		t.Errorf("no PATH: exit %d %s", code, out)
	}
}

// TestSidecarOnce is the broker pods' sidecar without the files for an entrypoint: it writes
// the certificate the keygen Job made, finds its parent from the pod (index, hostname,
// /etc/hosts, the ConfigMap's host list) and waits for it; an invalid key exits 78, which fails
// the chart's Job at once.
func TestSidecarOnce(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	e := testEnv(client, map[string]string{"POD_NAMESPACE": "ns1"})
	if code, out, errs := runCLI(t, e, "kube", "--release=r1"); code != exitOK {
		t.Fatalf("keygen: exit %d %s %s", code, out, errs)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "r1-x", Namespace: "ns1", Labels: map[string]string{discoveryv1.LabelServiceName: "r1"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Hostname: ptr.To("r1-2"), Addresses: []string{"10.0.0.3"}}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("ns1").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hostsFile := filepath.Join(dir, "hosts")
	etcHosts := filepath.Join(dir, "etc-hosts")
	must(t, os.WriteFile(hostsFile, []byte("r1-[0-15]\n"), 0o644))
	must(t, os.WriteFile(etcHosts, []byte("10.0.0.6\tr1-5.r1.ns1.svc.cluster.local\tr1-5\n"), 0o644))
	out := filepath.Join(dir, "keys")
	must(t, os.Mkdir(out, 0o755))
	e = testEnv(client, map[string]string{"POD_NAMESPACE": "ns1", "JOB_COMPLETION_INDEX": "5"})
	e.hostname = func() (string, error) { return "r1-5", nil }
	e.etcHosts = etcHosts
	args := []string{"sidecar", "--once", "--out=" + out, "--curve-name=r1-curve", "--wait-parent", "--hosts-file=" + hostsFile, "--topology=kary:2", "--timeout=5s"}
	code, stdout, stderr := runCLI(t, e, args...)
	if code != exitOK || !strings.Contains(stdout, "r1-2 is listed by Service ns1/r1") {
		t.Fatalf("sidecar --once: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := keygen.ParseFile(filepath.Join(out, "curve.cert")); err != nil {
		t.Errorf("fetched certificate: %v", err)
	}

	s, err := client.CoreV1().Secrets("ns1").Get(ctx, "r1-curve", metav1.GetOptions{})
	must(t, err)
	s.Data["curve.cert"] = []byte("curve\n")
	_, err = client.CoreV1().Secrets("ns1").Update(ctx, s, metav1.UpdateOptions{})
	must(t, err)
	code, _, stderr = runCLI(t, e, args...)
	if code != exitConfig || !strings.Contains(stderr, "Secret ns1/r1-curve its curve.cert is not a valid certificate") {
		t.Errorf("invalid key: exit %d, %q; want 78 naming the Secret", code, stderr)
	}
	// The lead waits for no parent; a pod outside an indexed Job is a usage error.
	e.getenv = func(k string) string {
		return map[string]string{"POD_NAMESPACE": "ns1", "JOB_COMPLETION_INDEX": "0"}[k]
	}
	if code, _, stderr := runCLI(t, e, "sidecar", "--once", "--out="+out, "--wait-parent", "--hosts-file="+hostsFile); code != exitOK {
		t.Errorf("lead: exit %d %s", code, stderr)
	}
	e.getenv = func(k string) string { return map[string]string{"POD_NAMESPACE": "ns1"}[k] }
	if code, _, stderr := runCLI(t, e, args...); code != exitUsage || !strings.Contains(stderr, "JOB_COMPLETION_INDEX") {
		t.Errorf("no index: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, e, "sidecar", "--once"); code != exitUsage || !strings.Contains(stderr, "--out is required") {
		t.Errorf("no --out: exit %d, %q", code, stderr)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestKubeWait: the CLI of kube wait (the logic is tested in keygen/wait): a MiniCluster with
// every broker ready exits 0 and says so, one whose broker cannot pull its image exits 1 with
// the report, and --release is required.
func TestKubeWait(t *testing.T) {
	labels := map[string]string{"app.kubernetes.io/instance": "mc", "batch.kubernetes.io/job-name": "mc"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "mc", Namespace: "hpc", Labels: map[string]string{
		"app.kubernetes.io/instance": "mc", "app.kubernetes.io/component": "broker"}}, Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](1)}}
	ready := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mc-0", Namespace: "hpc", Labels: labels},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	code, stdout, stderr := runCLI(t, testEnv(fake.NewClientset(job, ready), nil), "kube", "wait", "--release", "mc", "--namespace", "hpc", "--timeout", "5s")
	if code != exitOK || !strings.Contains(stdout, "1 of 1 broker pods ready") {
		t.Errorf("ready: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// The old name of minicluster wait says so, on stderr alone.
	if !strings.Contains(stderr, "flux-keygen kube wait is deprecated and goes in the next release: use minicluster wait") || strings.Contains(stdout, "deprecated") {
		t.Errorf("ready: no deprecation notice on stderr: stdout %q, stderr %q", stdout, stderr)
	}

	pulling := ready.DeepCopy()
	pulling.Status = corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "flux", Image: "reg/app:x",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "manifest unknown"}}}}}
	code, _, stderr = runCLI(t, testEnv(fake.NewClientset(job, pulling), nil), "kube", "wait", "--release", "mc", "--namespace", "hpc", "--timeout", "5s")
	if code != exitFailure || !strings.Contains(stderr, `cannot pull image "reg/app:x"`) || !strings.Contains(stderr, "set image to") {
		t.Errorf("pull failure: exit %d, stderr %q", code, stderr)
	}

	if code, _, stderr = runCLI(t, testEnv(fake.NewClientset(), nil), "kube", "wait", "--namespace", "hpc"); code != exitUsage || !strings.Contains(stderr, "no release to wait for") {
		t.Errorf("no --release: exit %d, stderr %q", code, stderr)
	}
}
