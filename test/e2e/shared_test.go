//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every reason a Job of the release cannot make its pods, made for real by the API server's
// admission (PodSecurity, ResourceQuota, LimitRanger, a webhook this test serves), is named by
// `flux-keygen kube wait` within seconds with the fix: at once with exit 1 when only a change of
// values can fix it, said and waited for when a ResourceQuota is full. No broker pod is ever
// made, so only the keygen image is pulled.
func TestCreateRefusalsNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, ns string)
		set     string
		code    int      // kube wait's exit code
		want    []string // in its output
	}{
		{"pod-security", func(t *testing.T, ns string) {
			labelNamespace(t, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		}, "", 1, []string{`enforces the "restricted" Pod Security Standard`, `violates PodSecurity \"restricted:latest\"`, "-f values/restricted.yaml"}},
		{"quota-full", func(t *testing.T, ns string) {
			// Full from the start (others' pods hold it all): neither Job gets a pod, and no
			// broker pod exists to pull an image.
			create(t, ns, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}})
		}, "", 1, []string{"the Job flux-sample cannot create more pods: a ResourceQuota of namespace", "the Job flux-sample-keygen cannot create more pods",
			"is full", "exceeded quota: pods", "kubectl describe resourcequota", "context deadline exceeded"}},
		{"limit-range", func(t *testing.T, ns string) {
			create(t, ns, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "small"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}})
		}, ",resources.limits.cpu=1", 1, []string{"a LimitRange of namespace", "maximum cpu usage per Container is 500m, but limit is 1", "kubectl describe limitrange"}},
		{"quota-wants-limits", func(t *testing.T, ns string) {
			create(t, ns, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse("40"), corev1.ResourceLimitsMemory: resource.MustParse("40Gi")}}})
		}, ",resources.limits.cpu=1,resources.limits.memory=1Gi,keygen.resources.limits.cpu=100m,keygen.resources.limits.memory=64Mi", 1, []string{"a ResourceQuota of namespace", "must specify limits.cpu for: keys",
			"keygen.sidecarResources (keys)", "-f values/quota.yaml"}},
		{"webhook", func(t *testing.T, ns string) {
			denyingWebhook(t, ns, "the e2e webhook refuses broker pods")
		}, "", 1, []string{"an admission webhook of the cluster denies the pods", "the e2e webhook refuses broker pods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "refused")
			tc.prepare(t, ns)
			r := newRelease(t, ns, "flux-sample", helm4)
			r.install("--set", "size=3"+tc.set)
			timeout := "2m"
			if tc.name == "quota-full" {
				timeout = "20s" // waited for until then
			}
			out, code, took := runWaitCLI(t, ns, r.name, timeout)
			t.Logf("flux-keygen kube wait: exit %d after %s:\n%s", code, took, indentAll(out))
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if tc.name != "quota-full" && took > time.Minute {
				t.Errorf("named after %s, want within seconds", took)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output lacks %q", w)
				}
			}
			r.uninstallToNothing()
		})
	}
}

func labelNamespace(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if _, err := kube.CoreV1().Namespaces().Patch(context.Background(), ns, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("label namespace %s: %v", ns, err)
	}
}

// create makes a ResourceQuota or LimitRange in ns.
func create(t *testing.T, ns string, obj any) {
	t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.ResourceQuota:
		_, err = kube.CoreV1().ResourceQuotas(ns).Create(context.Background(), o, metav1.CreateOptions{})
	case *corev1.LimitRange:
		_, err = kube.CoreV1().LimitRanges(ns).Create(context.Background(), o, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("create %T in %s: %v", obj, ns, err)
	}
}

// denyingWebhook serves a validating admission webhook from this process that denies the broker
// pods of ns with message, and registers it for ns alone (failurePolicy Ignore: should this
// process die first, nothing else is refused).
func denyingWebhook(t *testing.T, ns, message string) {
	t.Helper()
	api, err := url.Parse(restConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	ln, ip := webhookListener(t, api.Hostname())
	t.Cleanup(func() { _ = ln.Close() })

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-webhook"},
		IPAddresses: []net.IP{ip}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(req.Body).Decode(&review); err != nil || review.Request == nil {
				http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
				return
			}
			review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
				Result: &metav1.Status{Code: http.StatusForbidden, Message: message}}
			review.Request = nil
			_ = json.NewEncoder(w).Encode(review)
		}),
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	endpoint := "https://" + ln.Addr().String() + "/deny"
	fail, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-deny"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "deny.e2e.minicluster.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &endpoint, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/component": "broker"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	hooks := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := hooks.Create(context.Background(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingWebhookConfiguration %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() { _ = hooks.Delete(context.Background(), cfg.Name, metav1.DeleteOptions{}) })
}

// webhookListener listens where the API server at host can connect: on the API server's own
// address in the network namespace that has it (the local cluster runs in one and refuses new
// connections towards the host), else on the address this host uses towards it.
func webhookListener(t *testing.T, host string) (net.Listener, net.IP) {
	t.Helper()
	namespaces, _ := filepath.Glob("/var/run/netns/*")
	for _, ns := range namespaces {
		if ln, err := listenInNetns(ns, net.JoinHostPort(host, "0")); err == nil {
			return ln, net.ParseIP(host)
		}
	}
	probe, err := net.Dial("udp", net.JoinHostPort(host, "443"))
	if err != nil {
		t.Fatalf("finding this host's address towards the API server %s: %v", host, err)
	}
	ip := probe.LocalAddr().(*net.UDPAddr).IP
	probe.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	return ln, ip
}

// listenInNetns opens a listener inside the network namespace at path (a socket stays in the
// namespace it was made in); it fails where that namespace has no such address.
func listenInNetns(path, addr string) (net.Listener, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, err
	}
	defer self.Close()
	target, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, err
	}
	ln, listenErr := net.Listen("tcp", addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		panic(fmt.Sprintf("returning to this process's network namespace: %v", err)) // the thread would serve the wrong network
	}
	return ln, listenErr
}

// values/restricted.yaml and values/quota.yaml in a namespace that enforces Pod Security
// "restricted" and whose ResourceQuota wants every container's requests and limits (no LimitRange
// to give defaults): one install of the MPI image (no Flux; the view mounted) with flux.state,
// and in it Flux up, jobs as uid 1000, MPICH, OpenMPI (flux-pmix), LAMMPS, the state volume
// writable, helm test, a resize 2 -> 3; beside it one with the view copied and the REST API, a
// job on both brokers through the API.
func TestRestricted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "restricted")
	labelNamespace(t, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	create(t, ns, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourceLimitsCPU: resource.MustParse("40"), corev1.ResourceLimitsMemory: resource.MustParse("40Gi"),
		corev1.ResourceRequestsCPU: resource.MustParse("40"), corev1.ResourceRequestsMemory: resource.MustParse("40Gi")}}})
	restricted := filepath.Join(repoRoot, "values", "restricted.yaml")
	quota := filepath.Join(repoRoot, "values", "quota.yaml")
	// Two cores a broker (limits.cpu): MPI runs 4 ranks on 2 brokers.
	brokers := "resources.requests.cpu=100m,resources.requests.memory=256Mi,resources.limits.cpu=2,resources.limits.memory=2Gi"
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("-f", restricted, "-f", quota, "--set", "image="+mpiImage+",size=2,maxSize=3,sharedMemory=256Mi,"+
		"flux.state.enabled=true,flux.state.storageClassName="+envOr("E2E_STORAGE_CLASS", "local-path")+","+brokers)
	// Beside it, the view copied (the first mounts it) and the REST API with credentials from
	// a Secret of the user's (api.existingSecret), with Helm 3.
	creds := map[string]string{"user": "restricted-user", "token": strings.Repeat("t0ken", 8), "secret-key": strings.Repeat("s3cret", 8)}
	if _, err := kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "my-api-creds"},
		StringData: creds}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	copied := newRelease(t, ns, "flux-copy", helm3)
	// With a postStart hook on the broker's container (lifecycle).
	hooks := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(hooks, []byte("lifecycle: {postStart: {exec: {command: [/bin/sh, -c, 'id -u > /tmp/post-start']}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	copied.install("-f", restricted, "-f", quota, "-f", hooks, "--set", "size=2,maxSize=2,flux.view.mode=copy,api.enabled=true,api.existingSecret=my-api-creds,"+brokers)
	if out, code, took := runWaitCLI(t, ns, r.name, "4m"); code != 0 {
		t.Fatalf("flux-keygen kube wait: exit %d after %s:\n%s", code, took, out)
	}
	pods := up(t, r, 2, 3)
	lead := pods[0].Name
	run := func(what string, args ...string) string {
		t.Helper()
		out, stderr, err := fluxIn(ns, lead, append([]string{"run"}, args...)...)
		if err != nil {
			t.Errorf("%s: flux run %s: %v\n%s%s", what, strings.Join(args, " "), err, out, stderr)
		}
		return out
	}
	if out := run("uid", "-N", "2", "id", "-u"); strings.Fields(out) == nil || strings.Count(out, "1000") != 2 {
		t.Errorf("flux run -N 2 id -u: %q, want 1000 from both brokers", out)
	}
	checkMPIHello(t, run("MPICH", "-N", "2", "-n", "4", "--env=LD_PRELOAD=/usr/local/lib/mpich-ucx-finalize.so", "mpi-hello-mpich"), 4, 2, "MPICH Version:")
	checkMPIHello(t, run("OpenMPI", "-N", "2", "-n", "4", "-o", "pmi=pmix", "--env=OMPI_MCA_btl_vader_single_copy_mechanism=none", "mpi-hello-openmpi"), 4, 2, "Open MPI v4.1.4")
	// The job shells of the jobs that do not ask for PMIx go without flux-pmix's plugin (the
	// entrypoint's initrc); those that do have it, and flux-core's lua.d still applies.
	maps := `grep -c 'flux/shell/plugins/pmix.so' /proc/$PPID/maps; printenv OMPI_MCA_btl_vader_backing_directory || echo unset`
	out := run("no PMIx", "-N", "2", "sh", "-c", maps)
	none := 0
	for _, f := range strings.Fields(out) {
		if f == "0" {
			none++
		}
	}
	if none != 2 || strings.Count(out, "/jobtmp-") != 2 {
		t.Errorf("a job on 2 brokers without -o pmi=pmix: each shell's maps of pmix.so, then openmpi.lua's setting: %q, want 0 and a jobtmp from each", out)
	}
	if out := run("PMIx", "-o", "pmi=pmix", "sh", "-c", maps); strings.HasPrefix(out, "0\n") || !strings.Contains(out, "/jobtmp-") {
		t.Errorf("a job with -o pmi=pmix: its shell's maps of pmix.so, then openmpi.lua's setting: %q, want some and a jobtmp", out)
	}
	if out := run("LAMMPS", "-N", "2", "-n", "2", "-o", "pmi=pmix", "--env=OMPI_MCA_btl_vader_single_copy_mechanism=none",
		"lmp", "-in", "/opt/lammps/examples/melt/in.melt", "-log", "none", "-nocite"); !strings.Contains(out, "Total wall time") {
		t.Errorf("LAMMPS did not finish:\n%s", out)
	}
	if out, stderr, err := execIn(ns, lead, "flux", "/bin/sh", "-c", "touch /minicluster/state/.w && rm /minicluster/state/.w && id -u"); err != nil || strings.TrimSpace(out) != "1000" {
		t.Errorf("the state volume is not writable by uid 1000: %q %v %s", out, err, stderr)
	}
	helmTest(t, r)
	if _, err := r.upgrade("--set", "size=3"); err != nil {
		t.Fatal(err)
	}
	waitFluxUp(t, ns, r.name, 3, 3, wiringTimeout)
	if out := run("resized", "-N", "3", "id", "-u"); strings.Count(out, "1000") != 3 {
		t.Errorf("after the resize, flux run -N 3 id -u: %q", out)
	}
	r.uninstallToNothing()
	_ = kube.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), r.name+"-state", metav1.DeleteOptions{})

	cpods := up(t, copied, 2, 2)
	for _, p := range cpods {
		if out, stderr, err := execIn(ns, p.Name, "flux", "cat", "/tmp/post-start"); err != nil || strings.TrimSpace(out) != "1000" {
			t.Errorf("%s: the postStart hook's file: %q %v %s", p.Name, out, err, stderr)
		}
	}
	if out, stderr, err := fluxIn(ns, cpods[0].Name, "run", "-N", "2", "id", "-u"); err != nil || strings.Count(out, "1000") != 2 {
		t.Errorf("view copied: flux run -N 2 id -u: %q %v %s", out, err, stderr)
	}
	c := forwardAPI(t, copied, 5000, "http")
	if c.user != "" {
		t.Errorf("with api.existingSecret the chart made a Secret %s-api of its own", copied.name)
	}
	c.user, c.token, c.secretKey = creds["user"], creds["token"], creds["secret-key"]
	c.waitAnswers()
	c.runsHostname(copied, 2)
	copied.uninstallToNothing()
}
