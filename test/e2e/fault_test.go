//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A deleted worker pod comes back with the same hostname and rejoins: Flux shows all 6 up again.
// Then the namespace is deleted with the MiniCluster running in it, and goes within a minute (or
// within 30 s of a plain Job's namespace deleted at the same moment, when that one itself takes
// longer), every broker's keys container ending with exit 79.
func TestWorkerPodDeleted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fault-worker")
	r := newRelease(t, ns, "flux-sample", helm3)
	r.install("--set", "size=6")
	floor := newFloorNamespace(t, 6)
	deleteAndRejoin(t, r, 6, 1)
	checkNamespaceDeleted(t, r, floor, time.Minute)
}

// A deleted lead of an interactive MiniCluster: a new lead comes up, every worker rejoins it,
// and the Job neither completes nor fails.
func TestLeadPodDeletedInteractive(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fault-lead")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=4")
	pods := deleteAndRejoin(t, r, 4, 0)
	for i := 1; i < 4; i++ {
		log, _ := podLogs(ns, pods[i].Name, "flux", 0)
		if !strings.Contains(log, "starting the broker again to rejoin the lead") {
			t.Errorf("worker %d did not log that it rejoined:\n%s", i, log)
		}
	}
}

// A deleted lead of an ephemeral MiniCluster never counts as success: a new lead runs the
// command again with every worker, and only then does the Job complete.
func TestLeadPodDeletedEphemeral(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fault-lead-eph")
	r := newRelease(t, ns, "flux-sample", helm3)
	r.install("--set", "size=3", "--set-string", "command=flux run -N 3 hostname && echo first-run-done-$(flux getattr broker.starttime) && sleep 30")
	pods := waitFluxUp(t, ns, r.name, 3, 16, wiringTimeout)
	old := pods[0]
	deletePod(t, ns, old)
	waitReplaced(t, ns, r.name, 0, old)
	checkJobRunning(t, r)
	waitJobComplete(t, r, 3*time.Minute)
	job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), r.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status.Failed < 1 {
		t.Errorf("Job status failed=%d: the deleted lead was not counted as a failure", job.Status.Failed)
	}
	checkLeadPrintedHostnames(t, r, 3)
}

// SIGTERM to a lead with a running job (what the kubelet sends on uninstall or a deleted lead):
// with flux.cleanupTimeout=0s, the default, Flux cuts its clean-up short and the broker ends at
// once; with none it stops the queue, cancels the job and waits for it, as Flux does by itself.
func TestLeadCleanupOnSIGTERM(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		timeout string
		want    []string // in the lead's log, in this order
		notWant string
	}{
		{"0s", []string{"SIGTERM: stopping the broker", "cleanup-fail: cleanup->shutdown", "rc3-success"}, "flux cancel"},
		{"none", []string{"SIGTERM: stopping the broker", "flux cancel --user=all", "cleanup-success: cleanup->shutdown", "rc3-success"}, "cleanup-fail"},
	} {
		t.Run(tc.timeout, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "cleanup")
			r := newRelease(t, ns, "flux-sample", helm4)
			r.install("--set", "size=2,flux.cleanupTimeout="+tc.timeout)
			lead := waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)[0]
			if out, stderr, err := fluxIn(ns, lead.Name, "getattr", "broker.cleanup-timeout"); err != nil || strings.TrimSpace(out) != tc.timeout {
				t.Errorf("flux getattr broker.cleanup-timeout = %q (%v %s), want %s", out, err, stderr, tc.timeout)
			}
			if _, stderr, err := fluxIn(ns, lead.Name, "submit", "-N", "2", "sleep", "300"); err != nil {
				t.Fatalf("flux submit: %v %s", err, stderr)
			}
			eventually(t, time.Minute, "the job running", func() (bool, string) {
				out, _, err := fluxIn(ns, lead.Name, "jobs", "--no-header", "--filter=running", "--format={id}")
				return err == nil && strings.TrimSpace(out) != "", out
			})
			// The entrypoint is the container's process 1, which the kubelet signals.
			if _, stderr, err := execIn(ns, lead.Name, "flux", "/bin/sh", "-c", "kill -TERM 1"); err != nil {
				t.Fatalf("kill -TERM 1: %v %s", err, stderr)
			}
			eventually(t, 2*time.Minute, "the lead's broker container ended", func() (bool, string) {
				p, err := kube.CoreV1().Pods(ns).Get(context.Background(), lead.Name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, c := range p.Status.ContainerStatuses {
					if c.Name == "flux" && c.State.Terminated != nil {
						return true, ""
					}
				}
				return false, containerStates(*p)
			})
			log, err := podLogs(ns, lead.Name, "flux", 0)
			if err != nil {
				t.Fatal(err)
			}
			rest := log
			for _, w := range tc.want {
				_, after, found := strings.Cut(rest, w)
				if !found {
					t.Fatalf("the lead's log has no %q after the ones before it:\n%s", w, log)
				}
				rest = after
			}
			if strings.Contains(log, tc.notWant) {
				t.Errorf("the lead's log has %q:\n%s", tc.notWant, log)
			}
		})
	}
}

// A broker that can never start (here: an invalid certificate the user brought) fails the Job
// at once with the reason, instead of retrying forever.
func TestInvalidCertificateFailsTheJob(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fault-badcert")
	if _, err := kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cert"}, Data: map[string][]byte{"curve.cert": []byte("not a certificate\n")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=3,curve.existingSecret=my-cert")
	checkJobFailed(t, r, "exit code 78", "curve.cert is not a valid certificate")
	r.uninstallToNothing()
}

// A broker option Flux refuses makes every broker fail at start: the Job fails at once, and
// the pod's status carries Flux's message.
func TestBrokerThatCannotStartFailsTheJob(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fault-badopt")
	r := newRelease(t, ns, "flux-sample", helm3)
	r.install("--set", "size=3", "--set-json", `flux.brokerOptions=["-Sbroker.no-such-attribute=1"]`)
	checkJobFailed(t, r, "exit code 78", "flux broker failed 3 times in a row")
	r.uninstallToNothing()
}

// deleteAndRejoin deletes the broker pod of index in an interactive MiniCluster of size and
// waits until a new one is there and Flux shows all size brokers up again, with the Job running.
func deleteAndRejoin(t *testing.T, r *release, size, index int) map[int]corev1.Pod {
	t.Helper()
	old := waitFluxUp(t, r.ns, r.name, size, 16, wiringTimeout)[index]
	deletePod(t, r.ns, old)
	waitReplaced(t, r.ns, r.name, index, old)
	pods := waitFluxUp(t, r.ns, r.name, size, 16, wiringTimeout)
	checkFluxRun(t, r.ns, r.name, pods)
	checkJobRunning(t, r)
	return pods
}

func deletePod(t *testing.T, ns string, p corev1.Pod) {
	t.Helper()
	if err := kube.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitReplaced waits for a new pod of the index.
func waitReplaced(t *testing.T, ns, release string, index int, old corev1.Pod) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("a new pod with index %d", index), func() (bool, string) {
		pods, _, err := brokerPods(ns, release)
		if err != nil {
			return false, err.Error()
		}
		p, ok := pods[index]
		return ok && p.UID != old.UID, "only the deleted pod " + old.Name
	})
}

// checkJobRunning: the MiniCluster's Job has neither completed nor failed.
func checkJobRunning(t *testing.T, r *release) {
	t.Helper()
	job, err := kube.BatchV1().Jobs(r.ns).Get(context.Background(), r.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed || c.Type == batchv1.JobSuccessCriteriaMet) {
			t.Errorf("Job %s is %s (%s: %s), want it running", r.name, c.Type, c.Reason, c.Message)
		}
	}
}

// checkJobFailed waits for the Job to fail by its pod failure policy, with a message that has
// jobWant, and a failed pod whose termination message has podWant.
func checkJobFailed(t *testing.T, r *release, jobWant, podWant string) {
	t.Helper()
	ctx := context.Background()
	c := waitJobFinished(t, r, 3*time.Minute)
	if c.Type != batchv1.JobFailed || c.Reason != batchv1.JobReasonPodFailurePolicy || !strings.Contains(c.Message, jobWant) {
		t.Errorf("Job %s is %s with %s: %s; want Failed with reason PodFailurePolicy and %q", r.name, c.Type, c.Reason, c.Message, jobWant)
	}
	list, err := kube.CoreV1().Pods(r.ns).List(ctx, brokerSelector(r.name))
	if err != nil {
		t.Fatal(err)
	}
	var messages []string
	for _, p := range list.Items {
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if term := cs.State.Terminated; term != nil && term.ExitCode != 0 {
				if strings.Contains(term.Message, podWant) {
					return
				}
				messages = append(messages, fmt.Sprintf("%s/%s exit %d: %s", p.Name, cs.Name, term.ExitCode, term.Message))
			}
		}
	}
	t.Errorf("no failed container says %q: %v", podWant, messages)
}

// Deleting the certificate Secret of a running MiniCluster and then upgrading fails with the
// chart's message, and no new key appears.
func TestCertificateDeletedBeforeUpgrade(t *testing.T) {
	t.Parallel()
	eachHelm(t, testCertificateDeletedBeforeUpgrade)
}

func testCertificateDeletedBeforeUpgrade(t *testing.T, helm string) {
	ns := newNamespace(t, "fault-cert")
	r := newRelease(t, ns, "flux-sample", helm)
	r.install("--set", "size=4")
	up(t, r, 4, 16)
	if err := kube.CoreV1().Secrets(ns).Delete(context.Background(), r.name+"-curve", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := r.upgrade("--set", "size=5")
	want := "with the CURVE certificate is missing or empty"
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("upgrade without the certificate: want an error with %q, got %v:\n%s", want, err, out)
	}
	if r.curveSecret() != nil {
		t.Errorf("a new curve Secret appeared: a silent new key for a running MiniCluster")
	}
	if status, rev := r.status(); status != "deployed" || rev != 1 {
		t.Errorf("release is %s at revision %d after the refused upgrade, want deployed at 1", status, rev)
	}
	r.uninstallToNothing()
}

// A failed install (an image that does not exist, --wait with a short timeout) and then
// uninstall leaves nothing, the certificate Secret the keygen Job filled included.
func TestFailedInstallLeavesNothing(t *testing.T) {
	t.Parallel()
	eachHelm(t, testFailedInstallLeavesNothing)
}

func testFailedInstallLeavesNothing(t *testing.T, helm string) {
	ns := newNamespace(t, "fault-image")
	r := newRelease(t, ns, "flux-sample", helm)
	out, err := r.tryInstall("-f", filepath.Join(repoRoot, "values", "hello-world.yaml"),
		"--set", "image=localhost/minicluster/no-such-image:none", "--wait", "--wait-for-jobs", "--timeout", "30s")
	if err == nil {
		t.Fatalf("install with a missing image succeeded:\n%s", out)
	}
	if status, _ := r.status(); status != "failed" {
		t.Errorf("release status %q after the failed install, want failed", status)
	}
	if r.curveSecret() == nil {
		t.Errorf("no curve Secret after the failed install: the test would not show that uninstall removes it")
	}
	if !strings.Contains(out, "timed out") && !strings.Contains(out, "deadline exceeded") {
		t.Errorf("the install failed for another reason than the --wait timeout on the missing image:\n%s", out)
	}
	r.uninstallToNothing()
}

// An image that cannot be pulled is reported by `flux-keygen kube wait` at once, naming the
// pod, the container, the image and the fix; uninstall then leaves nothing. A missing tag of
// the application image (Helm 4) and a registry nobody answers at, for the chart's own image
// through imageRegistry (Helm 3).
func TestPullFailureReported(t *testing.T) {
	t.Parallel()
	missing := imagePrefix + "app:no-such-tag"
	for _, tc := range []struct {
		name, helm, set string
		image           string   // the image the report must name
		want            []string // and these
	}{
		{"missing-tag", helm4, "image=" + missing + ",imagePullPolicy=Always", missing, []string{"container flux", "set image to"}},
		{"wrong-registry", helm3, "imageRegistry=127.0.0.1:1,keygen.image.pullPolicy=Always", "127.0.0.1:1/flux-keygen:" + version,
			[]string{"the cluster cannot reach that registry", "set imageRegistry"}},
		// The kubelet reports an image volume's failure on the container, under its own image.
		{"missing-view-image-volume", helm4, "flux.view.mode=image,flux.view.imagePullPolicy=Always,flux.view.image=" + imagePrefix + "flux-view:no-such-tag",
			imagePrefix + "flux-view:no-such-tag", []string{"image volume flux-view (of container flux)", "set flux.view.image to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "fault-pull")
			r := newRelease(t, ns, "flux-sample", tc.helm)
			r.install("--set", "size=2,"+tc.set)
			if tc.name != "wrong-registry" && os.Getenv("CLUSTER_REGISTRY") != "" {
				tc.want = append(tc.want, "that registry has no such image or tag")
			}
			out, code, took := runWaitCLI(t, ns, r.name, "3m")
			if code != 1 || !strings.Contains(out, "cannot pull image \""+tc.image+"\"") {
				t.Errorf("flux-keygen kube wait: exit %d after %s, want 1 and a report on image %s:\n%s", code, took, tc.image, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the report lacks %q:\n%s", w, out)
				}
			}
			t.Logf("reported after %s: %s", took, strings.TrimSpace(out))
			r.uninstallToNothing()
		})
	}
}

// runWaitCLI runs `flux-keygen kube wait` for a release, as a user would after helm install.
func runWaitCLI(t *testing.T, ns, release, timeout string, env ...string) (out string, code int, took time.Duration) {
	t.Helper()
	cmd := exec.Command(bin("flux-keygen"), "kube", "wait", "--release", release, "--namespace", ns, "--timeout", timeout)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), env...)
	start := time.Now()
	raw, err := cmd.CombinedOutput()
	took = time.Since(start).Round(100 * time.Millisecond)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("flux-keygen kube wait: %v", err)
	}
	return string(raw), code, took
}

// A pull secret that does not work: the application image is only in the local cluster's login
// registry. With a Secret holding a wrong password, `flux-keygen kube wait` reports at once
// that the registry refuses the credentials and names imagePullSecrets; with the right
// password the same install comes up (so it was the credentials). Both uninstall to nothing.
func TestPullSecretRefused(t *testing.T) {
	t.Parallel()
	auth := os.Getenv("CLUSTER_AUTH_REGISTRY")
	if auth == "" {
		skipUnlessRequired(t, "CLUSTER_AUTH_REGISTRY is empty: this test needs a registry that wants a login, the local cluster's (make cluster-up; make e2e exports CLUSTER_AUTH_REGISTRY)")
	}
	raw, err := os.ReadFile(filepath.Join(os.Getenv("CLUSTER_AUTH_DIR"), "password"))
	if err != nil {
		t.Fatalf("the login registry's password (CLUSTER_AUTH_DIR=%s): %v", os.Getenv("CLUSTER_AUTH_DIR"), err)
	}
	password := strings.TrimSpace(string(raw))
	dockerConfig := func(pw string) []byte {
		login := base64.StdEncoding.EncodeToString([]byte("minicluster:" + pw))
		return []byte(`{"auths":{"` + auth + `":{"auth":"` + login + `"}}}`)
	}

	// Push the application image there, logged in (ci/push reads $DOCKER_CONFIG/config.json).
	home, images := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), dockerConfig(password), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin("images/app.tar"), filepath.Join(images, "app.tar")); err != nil {
		t.Fatal(err)
	}
	push := exec.Command("go", "run", "./ci/push", "--registry", auth+"/minicluster", "--version", version, "--insecure", images)
	push.Dir, push.Env = repoRoot, append(os.Environ(), "DOCKER_CONFIG="+home)
	if out, err := push.CombinedOutput(); err != nil {
		t.Fatalf("push app.tar to the login registry %s: %v\n%s", auth, err, out)
	}
	image := auth + "/minicluster/app:" + version

	for _, tc := range []struct {
		name, password string
		ok             bool
	}{{"wrong-password", "not-" + password, false}, {"right-password", password, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "fault-secret")
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
				Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig(tc.password)}}
			if _, err := kube.CoreV1().Secrets(ns).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			r := newRelease(t, ns, "flux-sample", helm4)
			r.install("--set", "size=2,image="+image+",imagePullPolicy=Always,imagePullSecrets[0].name=regcred")
			out, code, took := runWaitCLI(t, ns, r.name, "3m")
			t.Logf("flux-keygen kube wait: exit %d after %s: %s", code, took, strings.TrimSpace(out))
			switch {
			case tc.ok && (code != 0 || !strings.Contains(out, "2 of 2 broker pods ready")):
				t.Errorf("with the right password: exit %d, want 0 and every broker ready:\n%s", code, out)
			case !tc.ok && (code != 1 || !strings.Contains(out, "cannot pull image \""+image+"\"") ||
				!strings.Contains(out, "the registry refuses the credentials") || !strings.Contains(out, "imagePullSecrets")):
				t.Errorf("with a wrong password: exit %d, want 1 and a report that names %s and imagePullSecrets:\n%s", code, image, out)
			}
			r.uninstallToNothing()
		})
	}
}
