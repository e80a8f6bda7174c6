//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

const wiringTimeout = 3 * time.Minute

// checkKeys: the keygen Job completed, and the certificate Secret, which Helm created with the
// release, holds a valid certificate.
func checkKeys(t *testing.T, r *release) {
	t.Helper()
	ctx := context.Background()
	name := r.name + "-keygen"
	eventually(t, time.Minute, "keygen Job complete", func() (bool, string) {
		job, err := kube.BatchV1().Jobs(r.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return job.Status.Succeeded == 1, "conditions " + jobConditions(job.Status.Conditions)
	})
	s := r.curveSecret()
	if s == nil {
		t.Fatalf("Secret %s-curve does not exist after install", r.name)
	}
	for k, want := range map[string]string{"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": r.name, "app.kubernetes.io/component": "curve"} {
		if s.Labels[k] != want {
			t.Errorf("Secret %s label %s=%q, want %q", s.Name, k, s.Labels[k], want)
		}
	}
	if got := s.Annotations["meta.helm.sh/release-name"]; got != r.name {
		t.Errorf("Secret %s is not owned by the release (meta.helm.sh/release-name=%q)", s.Name, got)
	}
	verifyCert(t, s.Data["curve.cert"])
}

// verifyCert runs `flux-keygen verify` on the certificate.
func verifyCert(t *testing.T, cert []byte) {
	t.Helper()
	if len(cert) == 0 {
		t.Fatal("the curve Secret has no curve.cert")
	}
	path := filepath.Join(t.TempDir(), "curve.cert")
	if err := os.WriteFile(path, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin("flux-keygen"), "verify", path).CombinedOutput()
	if err != nil {
		t.Errorf("flux-keygen verify rejects the certificate of the curve Secret: %v\n%s", err, out)
	}
}

// helmTest runs `helm test` and fails the test if it does not pass.
func helmTest(t *testing.T, r *release) {
	t.Helper()
	out, err := r.run("test", r.name, "--timeout", "2m") // no --logs: hook-succeeded deletes the pod first
	if err != nil {
		t.Errorf("helm test %s failed: %v\n%s", r.name, err, out)
	}
}

// up: the keygen Job made the key, and Flux in the lead shows size of maxSize brokers up.
func up(t *testing.T, r *release, size, maxSize int) map[int]corev1.Pod {
	t.Helper()
	checkKeys(t, r)
	return waitFluxUp(t, r.ns, r.name, size, maxSize, wiringTimeout)
}

// checkInteractive is everything an interactive MiniCluster of size of maxSize brokers must show.
func checkInteractive(t *testing.T, r *release, size, maxSize int) map[int]corev1.Pod {
	t.Helper()
	pods := up(t, r, size, maxSize)
	checkFluxRun(t, r.ns, r.name, pods)
	checkMounts(t, r, pods)
	helmTest(t, r)
	return pods
}

// checkMounts: in every broker pod the certificate Flux reads is the Secret's, mode 0400, and
// broker.toml is the ConfigMap's.
func checkMounts(t *testing.T, r *release, pods map[int]corev1.Pod) {
	t.Helper()
	cert := string(r.curveSecret().Data["curve.cert"])
	toml := r.brokerConfig()["broker.toml"]
	for i := range len(pods) {
		out, stderr, err := execIn(r.ns, pods[i].Name, "flux", "/bin/sh", "-c",
			"stat -c %a /etc/curve/curve.cert && cat /etc/curve/curve.cert && echo ---- && cat /minicluster/config/broker.toml && if [ -e /var/run/secrets/kubernetes.io/serviceaccount ]; then echo API token visible; fi")
		if err != nil {
			t.Errorf("pod %s: %v %s", pods[i].Name, err, stderr)
			continue
		}
		mode, rest, _ := strings.Cut(out, "\n")
		gotCert, gotToml, _ := strings.Cut(rest, "----\n")
		if mode != "400" || gotCert != cert || gotToml != toml {
			t.Errorf("pod %s (rank %d): /etc/curve/curve.cert mode %s (want 400), same as the Secret: %v; broker.toml same as the ConfigMap: %v (%q)",
				pods[i].Name, i, mode, gotCert == cert, gotToml == toml, gotToml)
		}
	}
}

// Install an interactive MiniCluster of 6 (Flux from the view image, the default) and check
// the whole of it with real Flux; every command NOTES prints works; uninstall leaves nothing
// and the same name installs again. With Helm 3 and with Helm 4.
func TestInstallUninstallReinstall(t *testing.T) {
	t.Parallel()
	eachHelm(t, func(t *testing.T, helm string) {
		ns := newNamespace(t, "install")
		r := newRelease(t, ns, "flux-sample", helm)
		r.install("--set", "size=6")
		checkInteractive(t, r, 6, 16)
		if hosts := r.brokerConfig()["hosts"]; hosts != "flux-sample-[0-15]" {
			t.Errorf("broker ConfigMap hosts = %q, want flux-sample-[0-15]", hosts)
		}
		checkNotes(t, r, 6) // its last command uninstalls
		waitNothingLeft(t, ns, r.name, time.Minute)

		r.install("--set", "size=6")
		up(t, r, 6, 16)
		r.uninstallToNothing()
	})
}

// The hello-world values: the lead runs `hostname` as 4 tasks on 4 brokers under Flux, prints
// every broker's hostname, and the Job completes.
func TestEphemeralHelloWorld(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "hello")
	r := newRelease(t, ns, "flux-sample", helm3)
	r.install("-f", filepath.Join(repoRoot, "values", "hello-world.yaml"))
	checkKeys(t, r)
	waitJobComplete(t, r, 3*time.Minute)
	checkLeadPrintedHostnames(t, r, 4)
	r.uninstallToNothing()
}

// Flux in the application image (flux.view.enabled=false) with flux-core's own scheduler
// (flux.scheduler=simple, although the image has Fluxion): `flux run -N 3 hostname` on every
// broker, the Job completes.
func TestFluxInImage(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "inimage")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=3,flux.view.enabled=false,flux.scheduler=simple,image="+fluxImage,
		"--set-string", "command=flux module list && flux run -N 3 hostname")
	waitJobComplete(t, r, 3*time.Minute)
	checkLeadPrintedHostnames(t, r, 3)
	log := leadLog(t, r)
	if !regexp.MustCompile(`(?m)^sched-simple\s.*\bsched\b`).MatchString(log) || strings.Contains(log, "sched-fluxion") {
		t.Errorf("flux.scheduler=simple: flux module list should show sched-simple as sched and no Fluxion:\n%s", log)
	}
	r.uninstallToNothing()
}

// flux.view.mode=image: the view image is mounted as an image volume (the runtime must support
// them: the local cluster's containerd 2), nothing is copied; Flux from it (its python module
// from the software at its build prefix) forms the instance, resizes and uninstalls to nothing.
func TestViewImageVolume(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "viewimage")
	r := newRelease(t, ns, "flux-sample", helm3)
	r.install("--set", "size=3,flux.view.mode=image")
	job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), r.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(job.Spec.Template.Spec.InitContainers, job.Spec.Template.Spec.Containers...) {
		if c.Name != "flux" && c.Name != "keys" {
			t.Errorf("container %s: the view image mode copies nothing", c.Name)
		}
	}
	pods := checkInteractive(t, r, 3, 16)
	if out, stderr, err := fluxIn(ns, pods[0].Name, "python", "-c", "import flux; print(flux.__file__)"); err != nil || !strings.Contains(out, "/opt/software/") {
		t.Errorf("Flux's python module from the view image's software: %q %v %s", out, err, stderr)
	}
	if _, err := r.upgrade("--reuse-values", "--set", "size=5"); err != nil {
		t.Fatal(err)
	}
	waitFluxUp(t, ns, r.name, 5, 16, wiringTimeout)
	r.uninstallToNothing()
}

func waitJobComplete(t testing.TB, r *release, within time.Duration) {
	t.Helper()
	if c := waitJobFinished(t, r, within); c.Type != batchv1.JobComplete {
		t.Fatalf("Job %s failed: %s %s", r.name, c.Reason, c.Message)
	}
}

// waitJobFinished waits until the release's Job has completed or failed and returns that condition.
func waitJobFinished(t testing.TB, r *release, within time.Duration) batchv1.JobCondition {
	t.Helper()
	var finished batchv1.JobCondition
	eventually(t, within, "Job "+r.name+" finished", func() (bool, string) {
		job, err := kube.BatchV1().Jobs(r.ns).Get(context.Background(), r.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var done bool
		finished, done = jobFinished(job)
		return done, "conditions " + jobConditions(job.Status.Conditions)
	})
	return finished
}

// jobFinished is the Job's Complete or Failed condition, when it has one that is true.
func jobFinished(job *batchv1.Job) (batchv1.JobCondition, bool) {
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobFailed || c.Type == batchv1.JobComplete) {
			return c, true
		}
	}
	return batchv1.JobCondition{}, false
}

// checkLeadPrintedHostnames: the lead's log has the output of `hostname` from every broker.
func checkLeadPrintedHostnames(t *testing.T, r *release, size int) {
	t.Helper()
	log := leadLog(t, r)
	lines := map[string]bool{}
	for _, l := range strings.Split(log, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for i := range size {
		if host := fmt.Sprintf("%s-%d", r.name, i); !lines[host] {
			t.Errorf("the lead's log has no line %q (hostname on rank %d):\n%s", host, i, log)
		}
	}
}

// The same MiniCluster through the post-renderer: Helm 3 runs the binary.
func TestPostRendererHelm3(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "postrender3")
	r := newRelease(t, ns, "flux-sample", helm3, "--post-renderer", bin("minicluster-postrender"),
		"--post-renderer-args=--kustomize="+kustomization(t))
	r.install("--set", "size=6")
	checkInteractive(t, r, 6, 16)
	checkPostRendered(t, r)
	r.uninstallToNothing()
}

// Helm 4 takes a post-renderer plugin, installed here into an isolated Helm home.
func TestPostRendererHelm4Plugin(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "postrender4")
	r := newRelease(t, ns, "flux-sample", helm4, "--post-renderer", "minicluster", "--post-renderer-args=--kustomize="+kustomization(t))
	installPlugin(t, r)
	if out, _ := r.run("plugin", "list"); !strings.Contains(out, "minicluster") {
		t.Fatalf("helm 4 plugin list does not show minicluster:\n%s", out)
	}
	r.install("--set", "size=6")
	checkInteractive(t, r, 6, 16)
	checkPostRendered(t, r)
	// The ephemeral run through Helm 4 as well, in the same namespace under another name.
	hello := newRelease(t, ns, "hello", helm4, "--post-renderer", "minicluster")
	hello.env = r.env
	hello.install("-f", filepath.Join(repoRoot, "values", "hello-world.yaml"))
	waitJobComplete(t, hello, 3*time.Minute)
	checkLeadPrintedHostnames(t, hello, 4)
	r.uninstall()
	hello.uninstall()
	waitNothingLeft(t, ns, r.name, time.Minute)
	waitNothingLeft(t, ns, hello.name, time.Minute)
}

// installPlugin installs the Helm 4 post-renderer plugin into a Helm home of the release's own.
func installPlugin(t *testing.T, r *release) {
	t.Helper()
	home := t.TempDir()
	r.env = []string{"HELM_DATA_HOME=" + filepath.Join(home, "data"), "HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "HELM_PLUGINS=" + filepath.Join(home, "data", "plugins")}
	if _, err := r.run("plugin", "install", bin("helm-plugin/minicluster")); err != nil {
		t.Fatalf("helm 4 plugin install: %v", err)
	}
}

// kustomization is one that marks every object, so a test can see the post-renderer ran.
func kustomization(t *testing.T) string {
	dir := t.TempDir()
	k := "resources:\n  - rendered.yaml\ncommonAnnotations:\n  e2e.minicluster.dev/post-rendered: \"true\"\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkPostRendered: the live Job, Service and broker ConfigMap carry the kustomization's annotation.
func checkPostRendered(t *testing.T, r *release) {
	t.Helper()
	ctx := context.Background()
	const key = "e2e.minicluster.dev/post-rendered"
	job, err := kube.BatchV1().Jobs(r.ns).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil || job.Annotations[key] != "true" {
		t.Errorf("Job %s lacks the post-renderer kustomization's annotation (%v)", r.name, err)
	}
	svc, err := kube.CoreV1().Services(r.ns).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil || svc.Annotations[key] != "true" {
		t.Errorf("Service %s lacks the post-renderer kustomization's annotation (%v)", r.name, err)
	}
	cm, err := kube.CoreV1().ConfigMaps(r.ns).Get(ctx, r.name+"-broker", metav1.GetOptions{})
	if err != nil || cm.Annotations[key] != "true" {
		t.Errorf("ConfigMap %s-broker lacks the post-renderer kustomization's annotation (%v)", r.name, err)
	}
}

// A kustomization that renames everything (namePrefix) through the Helm 4 plugin: the post-renderer
// recomputes broker.toml and the host list for the new Job and Service names, the brokers form
// one Flux instance under them, and `helm test` (which reads the broker ConfigMap) passes.
func TestPostRendererRenameHelm4(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "rename")
	dir := t.TempDir()
	k := "resources:\n  - rendered.yaml\nnamePrefix: team-\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRelease(t, ns, "flux-sample", helm4, "--post-renderer", "minicluster", "--post-renderer-args=--kustomize="+dir)
	installPlugin(t, r)
	r.install("--set", "size=3")
	const job = "team-flux-sample"
	pods := waitFluxUp(t, ns, r.name, 3, 16, wiringTimeout)
	checkFluxRun(t, ns, r.name, pods)
	for i, p := range pods {
		if want := fmt.Sprintf("%s-%d", job, i); p.Spec.Hostname != want {
			t.Errorf("pod %s has hostname %q, want %q", p.Name, p.Spec.Hostname, want)
		}
	}
	checkDNS(t, ns, job, pods)
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(context.Background(), job+"-broker", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("renamed broker ConfigMap: %v", err)
	}
	if cm.Data["hosts"] != job+"-[0-15]" || !strings.Contains(cm.Data["broker.toml"], `"tcp://%h.`+job+`.`+ns+`.svc.cluster.local:%p"`) {
		t.Errorf("broker ConfigMap not recomputed for the renamed Job:\nhosts=%s\n%s", cm.Data["hosts"], cm.Data["broker.toml"])
	}
	helmTest(t, r)
	r.uninstallToNothing()
}

// flux.ephemeralExit: fast (the default) ends the lead's pod as soon as the command has ended,
// with its status, and the workers follow within seconds (none waits out Flux's 60 s goodbye
// for a lead that is gone); full runs Flux's whole shutdown first (children, rc3). A command
// that fails fails the Job with its exit code, either way.
func TestEphemeralExit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		exit      string
		command   string
		succeeds  bool
		leadLines []string // in the lead's log
		notLines  []string // not in it
	}{
		{"fast", "flux run -N 3 hostname", true, []string{"flux.ephemeralExit=fast"}, []string{"rc3-success"}},
		{"full", "flux run -N 3 hostname", true, []string{"children-complete", "rc3-success", "the command ended with status 0"}, []string{"ephemeralExit=fast"}},
		{"fast", "flux run -N 3 hostname; exit 3", false, []string{"the command ended with status 3"}, nil},
	} {
		t.Run(fmt.Sprintf("%s/succeeds=%t", c.exit, c.succeeds), func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "exit-"+c.exit)
			r := newRelease(t, ns, "flux-sample", helm4)
			workers := watchWorkerEnds(t, ns, r.name)
			r.install("--set", "size=3,job.backoffLimit=0,flux.ephemeralExit="+c.exit, "--set-string", "command="+c.command)
			lead := waitLeadEnded(t, r, 3*time.Minute)
			ended := time.Now()
			finished := waitJobFinished(t, r, time.Minute)
			t.Logf("%s: lead %s, Job %s %.1fs later", c.command, lead.Status.Phase, finished.Type, time.Since(ended).Seconds())
			if c.succeeds != (finished.Type == batchv1.JobComplete) {
				t.Errorf("Job %s (%s), want it to succeed: %t", finished.Type, finished.Message, c.succeeds)
			}
			if since := time.Since(ended); since > 30*time.Second {
				t.Errorf("the Job finished %.1fs after its lead: the workers did not follow it", since.Seconds())
			}
			if !c.succeeds {
				for _, cs := range lead.Status.ContainerStatuses {
					if cs.Name == "flux" && (cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3) {
						t.Errorf("the lead's flux container: %+v, want it terminated with the command's exit code 3", cs.State)
					}
				}
			}
			if c.exit == "fast" && c.succeeds {
				checkWorkersSucceeded(t, r, workers, 3)
			}
			checkLeadPrintedHostnames(t, r, 3)
			log := leadLog(t, r)
			for _, l := range c.leadLines {
				if !strings.Contains(log, l) {
					t.Errorf("the lead's log has no %q:\n%s", l, log)
				}
			}
			for _, l := range c.notLines {
				if strings.Contains(log, l) {
					t.Errorf("the lead's log has %q:\n%s", l, log)
				}
			}
			r.uninstallToNothing()
		})
	}
}

// checkWorkersSucceeded: after a fast exit of a command that succeeded, every worker's pod
// has succeeded on its own (the lead ended their brokers), not been stopped by the Job (Failed,
// 143). A worker's pod that the kubelet reported after the Job had seen the lead's is deleted
// by the Job even when it had ended on its own: such a worker is judged by what the watch saw
// of it last.
func checkWorkersSucceeded(t *testing.T, r *release, ends func() map[int]workerEnd, size int) {
	t.Helper()
	seen := ends()
	pods, _, err := brokerPods(r.ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < size; i++ {
		end, ok := seen[i]
		if p, left := pods[i]; left && p.Name == end.pod.Name {
			end.pod = p
		} else if !ok {
			t.Errorf("worker %d: no pod of it seen", i)
			continue
		}
		if end.pod.Status.Phase != corev1.PodSucceeded || !strings.Contains(end.log, "the worker is complete") {
			t.Errorf("worker %d (%s): %s, %s; want it Succeeded, ended by the lead after the command:\n%s", i, end.pod.Name, end.pod.Status.Phase, containerStates(end.pod), end.log)
		}
	}
}

// workerEnd is the last a watch saw of a worker's pod, and its broker's log.
type workerEnd struct {
	pod corev1.Pod
	log string
}

// watchWorkerEnds follows the release's worker pods (index > 0) until the test ends, and each
// one's broker log from the moment its container runs (the Job may delete a pod as soon as it
// has ended); it returns a function that gives, by index, the last state seen of each and its
// log up to its end. An informer: it lists and watches again by itself where a watch breaks (under
// load the API server's watch cache can lag behind etcd: "Too large resource version").
func watchWorkerEnds(t *testing.T, ns, release string) func() map[int]workerEnd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	type followed struct {
		done chan struct{}
		log  *bytes.Buffer
	}
	var mu sync.Mutex
	last := map[int]corev1.Pod{}
	logs := map[string]followed{}
	seen := func(obj any) {
		if gone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = gone.Obj
		}
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		i, err := strconv.Atoi(p.Labels[indexLabel])
		if err != nil || i == 0 {
			return
		}
		started := false
		for _, cs := range p.Status.ContainerStatuses {
			started = started || (cs.Name == "flux" && (cs.State.Running != nil || cs.State.Terminated != nil))
		}
		mu.Lock()
		defer mu.Unlock()
		last[i] = *p
		if _, ok := logs[p.Name]; !started || ok {
			return
		}
		f := followed{done: make(chan struct{}), log: &bytes.Buffer{}}
		logs[p.Name] = f
		go func() {
			defer close(f.done)
			stream, err := kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "flux", Follow: true}).Stream(ctx)
			if err != nil {
				fmt.Fprintf(f.log, "(no log: %v)", err)
				return
			}
			defer stream.Close()
			_, _ = io.Copy(f.log, stream)
		}()
	}
	pods := kube.CoreV1().Pods(ns)
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: selected(brokerSelector(release).LabelSelector, pods.List, pods.Watch),
		ObjectType:    &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    seen,
			UpdateFunc: func(_, obj any) { seen(obj) },
			DeleteFunc: seen,
		},
	})
	go informer.RunWithContext(ctx)
	return func() map[int]workerEnd {
		mu.Lock()
		lastSeen, follows := maps.Clone(last), maps.Clone(logs)
		mu.Unlock()
		ends := map[int]workerEnd{}
		for i, p := range lastSeen {
			end := workerEnd{pod: p}
			if f, ok := follows[p.Name]; ok {
				select {
				case <-f.done:
					end.log = f.log.String()
				case <-time.After(10 * time.Second):
					end.log = "(its log had not ended 10 s later)"
				}
			}
			ends[i] = end
		}
		return ends
	}
}

// waitLeadEnded waits until the lead's pod has ended (Succeeded or Failed) and returns it.
func waitLeadEnded(t testing.TB, r *release, within time.Duration) corev1.Pod {
	t.Helper()
	var lead corev1.Pod
	eventually(t, within, "the lead's pod ended", func() (bool, string) {
		pods, _, err := brokerPods(r.ns, r.name)
		if err != nil {
			return false, err.Error()
		}
		lead = pods[0]
		return lead.Status.Phase == corev1.PodSucceeded || lead.Status.Phase == corev1.PodFailed, string(lead.Status.Phase)
	})
	return lead
}

// flux.view.mode=auto keeps a running MiniCluster's mode: one installed with the view copied
// resizes with auto (which would mount it on this cluster) and its new brokers copy it too;
// its REST API (api.enabled) runs a job on all of them.
func TestViewModeAutoKeepsTheRunningMode(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "automode")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=2,flux.view.mode=copy,api.enabled=true")
	waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
	if out, err := r.upgrade("--reuse-values", "--set", "size=3,flux.view.mode=auto"); err != nil {
		t.Fatalf("resize with flux.view.mode=auto: %v\n%s", err, out)
	}
	pods := waitFluxUp(t, ns, r.name, 3, 16, wiringTimeout)
	for i, p := range pods {
		var copies bool
		for _, c := range p.Spec.Containers {
			copies = copies || c.Name == "flux-view"
		}
		if !copies {
			t.Errorf("broker %d (%s) has no flux-view container: auto switched the running MiniCluster's mode", i, p.Name)
		}
	}
	// The REST API with the view copied: a job on the 3 brokers through it.
	forwardAPI(t, r, 5000, "http").runsHostname(r, 3)
	r.uninstallToNothing()
}
