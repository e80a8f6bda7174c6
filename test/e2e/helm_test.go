//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// release is one Helm release of the chart in a test namespace, driven by a helm CLI.
type release struct {
	t    testing.TB
	name string
	ns   string
	helm string   // path of the helm binary
	env  []string // extra environment (HELM_DATA_HOME... for plugins)
	args []string // extra arguments of install and upgrade (e.g. --post-renderer)
}

func newRelease(t testing.TB, ns, name, helm string, args ...string) *release {
	r := &release{t: t, name: name, ns: ns, helm: helm, args: args}
	t.Cleanup(func() { // best effort: the namespace goes anyway
		if t.Failed() && !dumped(ns) { // before the uninstall takes the failed pods with it
			dumpNamespace(t, ns)
		}
		_, _ = r.run("uninstall", r.name, "--ignore-not-found")
	})
	return r
}

// run runs helm with the release's namespace and returns its combined output.
func (r *release) run(args ...string) (string, error) {
	args = append(args, "--namespace", r.ns)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.helm, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), r.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	r.t.Logf("helm %s (%.1fs): %v\n%s", strings.Join(args, " "), time.Since(start).Seconds(), err, indent(out.String()))
	return out.String(), err
}

// indent indents s for a test log, keeping its first and last 2,000 bytes.
func indent(s string) string {
	if len(s) > 4000 {
		s = s[:2000] + "\n[...]\n" + s[len(s)-2000:]
	}
	return indentAll(s)
}

// indentAll indents all of s: for output whose middle says why something failed.
func indentAll(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// install runs helm install with the test images and args, failing the test on error.
func (r *release) install(args ...string) {
	r.t.Helper()
	if _, err := r.tryInstall(args...); err != nil {
		r.t.Fatalf("helm install %s: %v", r.name, err)
	}
}

func (r *release) tryInstall(args ...string) (string, error) {
	all := append(append([]string{"install", r.name, chartDir}, testImages...), r.args...)
	return r.run(append(all, args...)...)
}

func (r *release) upgrade(args ...string) (string, error) {
	all := append([]string{"upgrade", r.name, chartDir, "--reuse-values"}, r.args...)
	return r.run(append(all, args...)...)
}

func (r *release) uninstall() {
	r.t.Helper()
	if _, err := r.run("uninstall", r.name); err != nil {
		r.t.Fatalf("helm uninstall %s: %v", r.name, err)
	}
}

// uninstallToNothing uninstalls and waits until none of the release's objects is left.
func (r *release) uninstallToNothing() {
	r.t.Helper()
	r.uninstall()
	waitNothingLeft(r.t, r.ns, r.name, time.Minute)
}

// status returns the release's status and revision from helm status.
func (r *release) status() (string, int) {
	r.t.Helper()
	out, err := r.run("status", r.name, "-o", "json")
	if err != nil {
		r.t.Fatalf("helm status %s: %v", r.name, err)
	}
	var st struct {
		Version int
		Info    struct{ Status string }
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &st); err != nil {
		r.t.Fatalf("helm status output: %v", err)
	}
	return st.Info.Status, st.Version
}

// brokerConfig returns the broker ConfigMap's data.
func (r *release) brokerConfig() map[string]string {
	r.t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(r.ns).Get(context.Background(), r.name+"-broker", metav1.GetOptions{})
	if err != nil {
		r.t.Fatalf("broker ConfigMap: %v", err)
	}
	return cm.Data
}

// curveSecret returns the certificate Secret (nil when it does not exist).
func (r *release) curveSecret() *corev1.Secret {
	r.t.Helper()
	s, err := kube.CoreV1().Secrets(r.ns).Get(context.Background(), r.name+"-curve", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return s
}

// eachHelm runs f as parallel subtests "helm3" and "helm4" with that helm CLI.
func eachHelm(t *testing.T, f func(t *testing.T, helm string)) {
	for _, h := range []struct{ name, bin string }{{"helm3", helm3}, {"helm4", helm4}} {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			f(t, h.bin)
		})
	}
}

// Helm's client-side schema check (skipped by --disable-openapi-validation, as the benchmarks'
// resizes do) changes nothing the API server decides: a manifest with an unknown field
// gets the same verdict with and without it (Helm 4: refused by the server's strict field
// validation on apply; Helm 3: created, the field dropped by the server).
func TestClientSideCheckChangesNothing(t *testing.T) {
	t.Parallel()
	eachHelm(t, func(t *testing.T, helm string) {
		ns := newNamespace(t, "client-check")
		var verdicts []string
		for _, flags := range [][]string{nil, {resizeFlag}} {
			r := newRelease(t, ns, "bogus", helm)
			out, err := r.tryInstall(append([]string{"--set", "size=1,securityContext.bogusField=1"}, flags...)...)
			verdict := "created"
			if err != nil {
				verdict = "refused"
				if !strings.Contains(out, "bogusField") {
					t.Errorf("helm install %v refused the install, not for the unknown field:\n%s", flags, out)
				}
			}
			verdicts = append(verdicts, verdict)
			r.uninstallToNothing()
		}
		t.Logf("an unknown field, with and without the client-side check: %v", verdicts)
		if verdicts[0] != verdicts[1] {
			t.Errorf("with Helm's client-side check the install was %s, without it %s", verdicts[0], verdicts[1])
		}
		if strings.Contains(helm, "helm4") && verdicts[1] != "refused" {
			t.Errorf("Helm 4 without the client-side check: an unknown field was %s, want refused by the API server", verdicts[1])
		}
	})
}
