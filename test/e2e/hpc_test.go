//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// modules is the set of broker modules `flux module list` shows in the lead.
func modules(t *testing.T, ns, lead string) map[string]bool {
	t.Helper()
	out, stderr, err := fluxIn(ns, lead, "module", "list")
	if err != nil {
		t.Fatalf("flux module list: %v %s", err, stderr)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "Module" {
			got[f[0]] = true
		}
	}
	return got
}

// jobState is `flux jobs` state of a job id (SCHED, RUN, INACTIVE...).
func jobState(ns, lead, id string) (string, error) {
	out, stderr, err := fluxIn(ns, lead, "jobs", "--no-header", "-o", "{state}", id)
	if err != nil {
		return "", fmt.Errorf("flux jobs %s: %v %s", id, err, stderr)
	}
	return strings.TrimSpace(out), nil
}

// Fluxion is the scheduler by default, with the queue policy of the values: a job asking for
// more cores than are free waits in the queue and starts when they free up; after a resize
// 2 -> 4 Fluxion schedules onto the new brokers, and after 4 -> 2 sees the others gone. Then
// jobs too large (checkTooLarge) under every scheduler and policy, and a resize 2 -> 3.
func TestFluxionQueueAndResize(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "fluxion")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=2,maxSize=4,flux.queuePolicy=easy,flux.coresPerBroker=2,sharedMemory=256Mi")
	pods := up(t, r, 2, 4)
	lead := pods[0].Name
	if out, stderr, err := execIn(ns, pods[1].Name, "flux", "df", "-m", "/dev/shm"); err != nil || !regexp.MustCompile(`(?m)^tmpfs\s+256\s.*/dev/shm$`).MatchString(out) {
		t.Errorf("sharedMemory=256Mi: df -m /dev/shm in a worker: %q %v %s", out, err, stderr)
	}
	mods := modules(t, ns, lead)
	for _, m := range []string{"sched-fluxion-resource", "sched-fluxion-qmanager"} {
		if !mods[m] {
			t.Errorf("flux module list in the lead lacks %s: %v", m, mods)
		}
	}
	if mods["sched-simple"] {
		t.Errorf("sched-simple is loaded beside Fluxion: %v", mods)
	}
	if log, err := podLogs(ns, lead, "flux", 0); err != nil || regexp.MustCompile(`sched-fluxion-\S+\.(warning|err)`).MatchString(log) {
		t.Errorf("Fluxion warned as it loaded (%v):\n%s", err, log)
	}
	if out, _, err := fluxIn(ns, lead, "config", "get", "sched-fluxion-qmanager.queue-policy"); err != nil || strings.TrimSpace(out) != "easy" {
		t.Errorf("[sched-fluxion-qmanager] queue-policy in the lead's config = %q (%v), want \"easy\"", out, err)
	}
	// Fluxion reports the policy it runs with.
	if out, stderr, err := execIn(ns, lead, "flux", "/minicluster/scripts/flux", "python", "-c",
		`import flux, json; print(json.dumps(flux.Flux().rpc("sched-fluxion-qmanager.params").get()))`); err != nil || !strings.Contains(out, `"queue-policy": "easy"`) {
		t.Errorf("sched-fluxion-qmanager.params: %q %v %s; want queue-policy easy", out, err, stderr)
	}
	if out, _, err := fluxIn(ns, lead, "resource", "list", "--no-header", "-o", "{state} {nnodes} {ncores}"); err != nil || !strings.Contains(out, "free 2 4") {
		t.Errorf("flux resource list: %q (%v), want 2 nodes with 4 cores free", out, err)
	}

	// Every core for 30 s (a loaded machine takes seconds per flux command), then a job that
	// needs 2 of them: it must wait.
	big, stderr, err := fluxIn(ns, lead, "submit", "-N", "2", "-n", "4", "sleep", "30")
	if err != nil {
		t.Fatalf("flux submit -n 4: %v %s", err, stderr)
	}
	big = strings.TrimSpace(big)
	eventually(t, 30*time.Second, "the 4-core job runs", func() (bool, string) {
		s, err := jobState(ns, lead, big)
		return s == "R" || s == "RUN", fmt.Sprint(s, err)
	})
	small, stderr, err := fluxIn(ns, lead, "submit", "-n", "2", "hostname")
	if err != nil {
		t.Fatalf("flux submit -n 2: %v %s", err, stderr)
	}
	small = strings.TrimSpace(small)
	time.Sleep(2 * time.Second)
	if s, err := jobState(ns, lead, small); err != nil || (s != "S" && s != "SCHED") {
		t.Errorf("a 2-core job while every core is taken: state %q (%v), want SCHED (waiting in the queue)", s, err)
	}
	if out, stderr, err := fluxIn(ns, lead, "job", "attach", small); err != nil || !strings.HasPrefix(strings.TrimSpace(out), "flux-sample-") {
		t.Errorf("the queued job did not run once the cores were free: %q %v %s", out, err, stderr)
	}
	times, _, err := fluxIn(ns, lead, "jobs", "--no-header", "-o", "{t_run:.3f} {t_inactive:.3f}", big, small)
	f := strings.Fields(times)
	if err != nil || len(f) != 4 {
		t.Fatalf("flux jobs times: %q %v", times, err)
	}
	bigEnd, errEnd := strconv.ParseFloat(f[1], 64)
	smallStart, errStart := strconv.ParseFloat(f[2], 64)
	if errEnd != nil || errStart != nil || bigEnd <= 0 || smallStart <= 0 {
		t.Fatalf("flux jobs times %q: want the 4-core job's end and the queued job's start as seconds since the epoch", times)
	}
	if smallStart < bigEnd-0.5 {
		t.Errorf("the queued job started at %.3f, before the 4-core job ended at %.3f", smallStart, bigEnd)
	}

	if _, err := r.upgrade("--reuse-values", "--set", "size=4"); err != nil {
		t.Fatal(err)
	}
	pods = waitFluxUp(t, ns, r.name, 4, 4, wiringTimeout)
	checkFluxRun(t, ns, r.name, pods)
	if _, err := r.upgrade("--reuse-values", "--set", "size=2"); err != nil {
		t.Fatal(err)
	}
	pods = waitFluxUp(t, ns, r.name, 2, 4, wiringTimeout)
	checkFluxRun(t, ns, r.name, pods)
	// Jobs too large for what is up, or for maxSize, under every scheduler and policy, refused
	// at submit; the one for 3 nodes runs once a resize brings a third broker up.
	checkTooLarge(t, ns, lead, 2, 4, 2)
	checkFeasibilityAskedPerShape(t, ns, lead, 4)
	if _, err := r.upgrade("--reuse-values", "--set", "size=3"); err != nil {
		t.Fatal(err)
	}
	waitFluxUp(t, ns, r.name, 3, 4, wiringTimeout)
	out, stderr, err := fluxIn(ns, lead, "run", "-N", "3", "hostname")
	if hosts := strings.Fields(out); err != nil || len(hosts) != 3 || len(slices.Compact(slices.Sorted(slices.Values(hosts)))) != 3 {
		t.Errorf("flux run -N 3 hostname after the resize to 3 brokers: %q %v %s; want it run on three", out, err, stderr)
	}
	r.uninstallToNothing()
}

// leadLog is the whole log of the release's lead broker.
func leadLog(t testing.TB, r *release) string {
	t.Helper()
	pods, err := kube.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: fmt.Sprintf("app.kubernetes.io/instance=%s,%s=0", r.name, indexLabel)})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("no lead pod: %v", err)
	}
	log, err := podLogs(r.ns, pods.Items[0].Name, "flux", 0)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

var helloLine = regexp.MustCompile(`(?m)^hello from rank (\d+) of (\d+) on (\S+) \((.*)\)$`)

// checkMPIHello: the log has ranks hello lines, from every rank once, on nodes distinct pods,
// from the MPI library want, and mpi-hello's ring and allreduce passed.
func checkMPIHello(t *testing.T, log string, ranks, nodes int, want string) {
	t.Helper()
	seen, hosts := map[string]bool{}, map[string]bool{}
	for _, m := range helloLine.FindAllStringSubmatch(log, -1) {
		if m[2] != strconv.Itoa(ranks) || !strings.Contains(m[4], want) {
			t.Errorf("hello line %q: want %d ranks of %s", m[0], ranks, want)
		}
		seen[m[1]] = true
		hosts[m[3]] = true
	}
	if len(seen) != ranks || len(hosts) != nodes {
		t.Errorf("%d ranks on %d hosts said hello (%v), want %d ranks on %d pods:\n%s", len(seen), len(hosts), slices.Sorted(maps.Keys(hosts)), ranks, nodes, log)
	}
	if !strings.Contains(log, "mpi-hello: ok") {
		t.Errorf("mpi-hello's ring and allreduce did not pass:\n%s", log)
	}
}

// installValues installs a file of values/ with the MPI image, waits until the Job completes
// and returns the lead's log.
func installValues(t *testing.T, file string, within time.Duration, args ...string) string {
	t.Helper()
	ns := newNamespace(t, strings.TrimSuffix(file, ".yaml"))
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install(append([]string{"-f", filepath.Join(repoRoot, "values", file), "--set", "image=" + mpiImage}, args...)...)
	waitJobComplete(t, r, within)
	log := leadLog(t, r)
	r.uninstallToNothing()
	return log
}

// values/mpich.yaml: MPICH (Debian's 4.0.2) through Flux's own PMI: 8 ranks on 4 pods pass a
// ring, a 1 MiB ring and an allreduce over the pod network.
func TestMPICH(t *testing.T) {
	t.Parallel()
	checkMPIHello(t, installValues(t, "mpich.yaml", 4*time.Minute), 8, 4, "MPICH Version:")
}

// values/openmpi.yaml: OpenMPI (Debian's 4.1.4, PMIx 4.2.2) through flux-pmix from the view: 8
// ranks on 4 pods, the same checks, with the environment the values file sets.
func TestOpenMPI(t *testing.T) {
	t.Parallel()
	checkMPIHello(t, installValues(t, "openmpi.yaml", 4*time.Minute), 8, 4, "Open MPI v4.1.4")
}

// values/lammps.yaml: LAMMPS across 4 brokers, one rank each, with OpenMPI through flux-pmix;
// the Job completes with LAMMPS's thermo output and its own wall time in the lead's log, and
// the job ran on all 4 brokers.
func TestLAMMPS(t *testing.T) {
	t.Parallel()
	log := installValues(t, "lammps.yaml", 6*time.Minute)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*Step\s+Temp\s+E_pair`),                         // thermo header
		regexp.MustCompile(`(?m)^\s*250\s+\S+\s+\S+`),                              // the last thermo step
		regexp.MustCompile(`Loop time of \S+ on 4 procs`),                          // 4 MPI ranks
		regexp.MustCompile(`(?m)^Total wall time: \d+:\d\d:\d\d$`),                 // LAMMPS's own end
		regexp.MustCompile(`(?m)^lammps: 4 nodes, 4 tasks on flux-sample-\[0-3\]`), // every broker
	} {
		if !want.MatchString(log) {
			t.Errorf("the lead's log lacks %s:\n%s", want, log)
		}
	}
}

// values/gpu.yaml as written, but for its CUDA image and nvidia-smi, which this cluster cannot
// run: the node advertises nvidia.com/gpu (an extended resource with no device behind it) and
// the label the file selects, each broker pod gets one, and Flux describes one GPU per broker
// that a `-g 1` job is scheduled onto.
func TestGPUValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v", err)
	}
	for _, n := range nodes.Items {
		patch := `{"status":{"capacity":{"nvidia.com/gpu":"2"}}}`
		if _, err := kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("advertise nvidia.com/gpu on node %s: %v", n.Name, err)
		}
		if _, err := kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"nvidia.com/gpu.present":"true"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			kube.CoreV1().Nodes().Patch(ctx, n.Name, types.JSONPatchType, []byte(`[{"op":"remove","path":"/status/capacity/nvidia.com~1gpu"}]`), metav1.PatchOptions{}, "status")
			kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"nvidia.com/gpu.present":null}}}`), metav1.PatchOptions{})
		})
	}
	ns := newNamespace(t, "gpu")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("-f", filepath.Join(repoRoot, "values", "gpu.yaml"), "--set", "image="+appImage,
		"--set-string", `command=flux resource list -s up -no "{ngpus} gpus on {nnodes} nodes"; flux run -N 2 -n 2 -g 1 sh -c 'echo "$(hostname) CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"'`)
	waitJobComplete(t, r, 4*time.Minute)
	pods, err := kube.CoreV1().Pods(ns).List(ctx, brokerSelector(r.name))
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("broker pods: %v", err)
	}
	if got := pods.Items[0].Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("broker pod's nvidia.com/gpu limit %s, want 1", got.String())
	}
	log := leadLog(t, r)
	for _, want := range []string{"2 gpus on 2 nodes", "flux-sample-0 CUDA_VISIBLE_DEVICES=0", "flux-sample-1 CUDA_VISIBLE_DEVICES=0"} {
		if !strings.Contains(log, want) {
			t.Errorf("the lead's log lacks %q:\n%s", want, log)
		}
	}
	r.uninstallToNothing()
}

// values/interactive.yaml stays up with 4 brokers for `flux` by hand in the lead; values/elastic.yaml
// starts with 2 of at most 10 and grows to 10 and shrinks to 1 without restarting the instance.
func TestInteractiveAndElasticValues(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "interactive")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("-f", filepath.Join(repoRoot, "values", "interactive.yaml"))
	pods := up(t, r, 4, 16)
	checkFluxRun(t, ns, r.name, pods)
	r.uninstallToNothing()

	ns = newNamespace(t, "elastic")
	r = newRelease(t, ns, "flux-sample", helm4)
	r.install("-f", filepath.Join(repoRoot, "values", "elastic.yaml"))
	lead := up(t, r, 2, 10)[0]
	for _, size := range []int{10, 1} {
		if _, err := r.upgrade("--set", fmt.Sprintf("size=%d", size)); err != nil {
			t.Fatalf("resize to %d: %v", size, err)
		}
		pods := waitFluxUp(t, ns, r.name, size, 10, wiringTimeout)
		if pods[0].UID != lead.UID {
			t.Errorf("resize to %d replaced the lead: the instance restarted", size)
		}
		checkFluxRun(t, ns, r.name, pods)
	}
	r.uninstallToNothing()
}
