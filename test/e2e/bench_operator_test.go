//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// BenchmarkOperator: the chart next to the Flux Operator, in one run on the same cluster with the
// same images: the application image without Flux and the flux-view image, Fluxion on every side
// (see operatorSide). Three sides: the operator (its flux-view init container copies the view into
// each pod, and its container copies the software once more), the chart's default
// (flux.view.mode=auto: the view image mounted on Kubernetes >= 1.35) and the chart copying the
// view as the operator does (flux.view.mode=copy, once; into memory with
// BENCH_COPY_MEDIUM=Memory). The operator is its pinned source snapshot (internal/sources), built
// by ci/operator/build.sh and run out of cluster by this benchmark (its manager process, the
// MiniCluster CRD applied first and deleted at the end). At each size of BENCH_OPERATOR_SIZES
// (default 6,16), every step runs on every side in turn, the side that goes first rotating from
// one iteration to the next, each in a new namespace; the floors (a bare indexed Job) run in the
// same iteration. The end prints the medians, the ratios to the operator and the chart's speed
// target for each step.
//
// Flux in the application image cannot be compared: the operator always mounts an emptyDir at
// /opt/software, which hides a Flux installed there (as the project's flux image has it, in the
// flux-view images' layout); with the operator Flux must sit elsewhere in the image.
func BenchmarkOperator(b *testing.B) {
	op := startOperator(b)
	helm := envOr("BENCH_HELM", helm4)
	// The operator, the chart's default (auto: the view image mounted on Kubernetes >= 1.35) and
	// the chart copying the view as the operator does.
	// BENCH_COPY_MEDIUM=Memory copies the view into memory instead (flux.view.medium).
	copyValues := "flux.view.mode=copy"
	if medium := os.Getenv("BENCH_COPY_MEDIUM"); medium != "" {
		copyValues += ",flux.view.medium=" + medium
	}
	sides := []benchSide{op, chartSide{helm: helm, label: "chart"},
		chartSide{helm: helm, label: "chart-copy", set: []string{"--set", copyValues}}}
	// BENCH_OPERATOR_SIDES: some of them only, by name.
	if only := os.Getenv("BENCH_OPERATOR_SIDES"); only != "" {
		sides = slices.DeleteFunc(sides, func(s benchSide) bool { return !slices.Contains(strings.Split(only, ","), s.name()) })
		if len(sides) == 0 {
			b.Fatalf("BENCH_OPERATOR_SIDES=%q: want some of operator,chart,chart-copy", only)
		}
	}
	sizes := benchSizes(b, "BENCH_OPERATOR_SIZES", "6,16")
	for _, s := range sides { // untimed: every node pulls the images once
		ns := newNamespace(b, "warm-"+s.name())
		s.create(b, ns, 6, 6, "hostname")
		waitLead(b, ns, corev1.PodSucceeded, 5*time.Minute)
		deleteNamespace(b, ns)
	}
	runs := map[int][]opRun{}
	iteration := 0
	for b.Loop() {
		for _, size := range sizes {
			run := opRun{floor: operatorFloor(b, size, helm), sides: map[string]sideTimes{}}
			// Each iteration starts with the next side.
			var order []string
			for i := range sides {
				s := sides[(i+iteration)%len(sides)]
				run.sides[s.name()] = timeSide(b, s, size)
				order = append(order, s.name())
			}
			fmt.Printf("%s: size %d, run %d (order %v): floor %s\n", b.Name(), size, len(runs[size])+1, order, run.floor)
			for _, s := range sides {
				fmt.Printf("  %s: %s\n", s.name(), run.sides[s.name()])
			}
			runs[size] = append(runs[size], run)
		}
		iteration++
	}
	var names []string
	for _, s := range sides {
		names = append(names, s.name())
	}
	for _, size := range sizes {
		fmt.Print(operatorTable(size, names, runs[size]))
		recordOperator(b, size, names, runs[size])
	}
}

// recordOperator records the medians of one size for the report, as BenchmarkOperator/size=N:
// s/<side>-<step>, the floor as the side "floor".
func recordOperator(b *testing.B, size int, sides []string, runs []opRun) {
	name := fmt.Sprintf("%s/size=%d", b.Name(), size)
	floors := map[string]func(opRun) time.Duration{
		"ephemeral":        func(r opRun) time.Duration { return r.floor.completed },
		"complete":         func(r opRun) time.Duration { return r.floor.complete },
		"cycle":            func(r opRun) time.Duration { return r.floor.cycle },
		"create-command":   func(r opRun) time.Duration { return r.floor.helmInstall },
		"remove-completed": func(r opRun) time.Duration { return r.floor.deletedCompleted },
		"remove-command":   func(r opRun) time.Duration { return r.floor.helmUninstall },
		"interactive":      func(r opRun) time.Duration { return r.floor.running },
		"resize":           func(r opRun) time.Duration { return r.floor.resize },
		"resize-command":   func(r opRun) time.Duration { return r.floor.helmUpgrade },
		"remove-running":   func(r opRun) time.Duration { return r.floor.deleted },
	}
	steps := map[string]func(sideTimes) time.Duration{
		"ephemeral":        func(t sideTimes) time.Duration { return t.ephemeral },
		"complete":         func(t sideTimes) time.Duration { return t.complete },
		"cycle":            func(t sideTimes) time.Duration { return t.cycle },
		"create-command":   func(t sideTimes) time.Duration { return t.createCmd },
		"remove-completed": func(t sideTimes) time.Duration { return t.removeCompleted },
		"remove-command":   func(t sideTimes) time.Duration { return t.removeCmd },
		"interactive":      func(t sideTimes) time.Duration { return t.interactive },
		"resize":           func(t sideTimes) time.Duration { return t.resize },
		"resize-command":   func(t sideTimes) time.Duration { return t.resizeCmd },
		"remove-running":   func(t sideTimes) time.Duration { return t.removeRunning },
	}
	for step, floor := range floors {
		record(b, name, len(runs), median(runs, floor).Seconds(), "s/floor-"+step)
		for _, side := range sides {
			pick := steps[step]
			record(b, name, len(runs), median(runs, func(r opRun) time.Duration { return pick(r.sides[side]) }).Seconds(), "s/"+side+"-"+step)
		}
	}
}

// benchSide is one way of running a MiniCluster: the chart with Helm, or the operator's
// MiniCluster with kubectl. Each call returns how long the user's command took.
type benchSide interface {
	name() string
	// create makes a MiniCluster flux-sample of size brokers (room for maxSize) in ns: ephemeral
	// with command run on size tasks, or interactive when command is empty.
	create(b *testing.B, ns string, size, maxSize int, command string) time.Duration
	resize(b *testing.B, ns string, size int) time.Duration
	remove(b *testing.B, ns string) time.Duration
	// up is how many brokers Flux in the lead counts up.
	up(ns, lead string) (int, error)
}

// sideTimes are one side's figures at one size.
type sideTimes struct {
	ephemeral, createCmd       time.Duration // create -> lead Succeeded; the command alone
	complete                   time.Duration // create -> Job Complete (every broker ended)
	removeCompleted, removeCmd time.Duration // completed (Job Complete) one removed -> nothing left; the command
	cycle                      time.Duration // create -> Job Complete -> removed -> nothing left
	interactive                time.Duration // create -> size brokers up in Flux
	resize, resizeCmd          time.Duration // size/2 -> size: the new brokers up in Flux
	removeRunning              time.Duration // running one removed -> nothing left
}

func (t sideTimes) String() string {
	return fmt.Sprintf("ephemeral %.2f (command %.2f), Job complete %.2f, completed removed %.2f (command %.2f), cycle %.2f, interactive %.2f, resize %.2f (command %.2f), running removed %.2f",
		t.ephemeral.Seconds(), t.createCmd.Seconds(), t.complete.Seconds(), t.removeCompleted.Seconds(), t.removeCmd.Seconds(), t.cycle.Seconds(),
		t.interactive.Seconds(), t.resize.Seconds(), t.resizeCmd.Seconds(), t.removeRunning.Seconds())
}

// opRun is one iteration at one size: the floor and each side by name.
type opRun struct {
	floor floorTimes
	sides map[string]sideTimes
}

// floorTimes: a bare indexed Job with its headless Service, the same Kubernetes steps without
// Flux: pods that exit at once (index 0 Succeeded), pods that wait (all Running and listed),
// parallelism size/2 -> size (the new pods Running), and the waiting Job deleted (pods gone).
// The helm floor: the same helm CLI installing, upgrading and uninstalling a chart of one
// ConfigMap, what every Helm command costs before any chart's own objects.
type floorTimes struct {
	completed, running, resize, deleted     time.Duration
	complete, deletedCompleted, cycle       time.Duration // Job Complete; that Job deleted; the two
	helmInstall, helmUpgrade, helmUninstall time.Duration
}

func (f floorTimes) String() string {
	return fmt.Sprintf("completed %.2f, Job complete %.2f, completed deleted %.2f, cycle %.2f, running %.2f, resize %.2f, deleted %.2f; helm install %.2f, upgrade %.2f, uninstall %.2f",
		f.completed.Seconds(), f.complete.Seconds(), f.deletedCompleted.Seconds(), f.cycle.Seconds(), f.running.Seconds(), f.resize.Seconds(), f.deleted.Seconds(),
		f.helmInstall.Seconds(), f.helmUpgrade.Seconds(), f.helmUninstall.Seconds())
}

// timeSide runs the steps of one side at size, each MiniCluster in a new namespace.
func timeSide(b *testing.B, s benchSide, size int) sideTimes {
	var t sideTimes
	ns := newNamespace(b, "op-eph-"+s.name())
	settleDisk()
	trace := traceIfAsked(ns)
	start := time.Now()
	t.createCmd = s.create(b, ns, size, size, "hostname")
	trace.note("create command returned")
	waitLead(b, ns, corev1.PodSucceeded, 5*time.Minute)
	t.ephemeral = time.Since(start)
	// Completed: the Job is (its workers have ended too), what a user waits for.
	waitBenchJobComplete(b, ns)
	t.complete = time.Since(start)
	removing := time.Now()
	t.removeCmd = s.remove(b, ns)
	trace.note("remove command returned")
	waitEmpty(b, ns)
	t.removeCompleted = time.Since(removing)
	t.cycle = time.Since(start)
	if trace != nil {
		fmt.Printf("%s, size %d, ephemeral cycle:\n%s\n", s.name(), size, trace.end())
	}
	deleteNamespace(b, ns)

	ns = newNamespace(b, "op-"+s.name())
	settleDisk()
	start = time.Now()
	s.create(b, ns, size, size, "")
	lead := waitUp(b, s, ns, size)
	t.interactive = time.Since(start)
	s.resize(b, ns, size/2)
	eventually(b, 3*time.Minute, fmt.Sprintf("%d broker pods", size/2), func() (bool, string) {
		n, err := brokerCount(ns)
		return err == nil && n == size/2, fmt.Sprintf("%d (%v)", n, err)
	})
	waitUpFrom(b, s, ns, lead, size/2)
	start = time.Now()
	t.resizeCmd = s.resize(b, ns, size)
	waitUpFrom(b, s, ns, lead, size)
	t.resize = time.Since(start)
	start = time.Now()
	s.remove(b, ns)
	waitEmpty(b, ns)
	t.removeRunning = time.Since(start)
	deleteNamespace(b, ns)
	return t
}

// operatorFloor times the floor's steps at size, and the helm floor with helm.
func operatorFloor(b *testing.B, size int, helm string) floorTimes {
	var f floorTimes
	ns := newNamespace(b, "op-floor")
	chart := writeChart(b, "floor", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  size: {{ .Values.size | quote }}\n")
	f.helmInstall = timed(b, "", helm, "install", "floor", chart, "--namespace", ns, "--set", "size=2")
	f.helmUpgrade = timed(b, "", helm, "upgrade", "floor", chart, "--namespace", ns, "--reuse-values", resizeFlag, "--set", "size=3")
	f.helmUninstall = timed(b, "", helm, "uninstall", "floor", "--namespace", ns)
	deleteNamespace(b, ns)

	ns = newNamespace(b, "op-floor")
	start := time.Now()
	createCompletingFloor(b, ns, benchJob, size)
	waitLead(b, ns, corev1.PodSucceeded, 3*time.Minute)
	f.completed = time.Since(start)
	waitBenchJobComplete(b, ns)
	f.complete = time.Since(start)
	f.deletedCompleted = deleteFloor(b, ns, benchJob, 2*time.Minute)
	f.cycle = time.Since(start)
	deleteNamespace(b, ns)

	ns = newNamespace(b, "op-floor")
	start = time.Now()
	createFloor(b, ns, "floor", size)
	ready := func(n int) {
		waitFloorReady(b, ns, "floor", n, 3*time.Minute)
	}
	ready(size)
	f.running = time.Since(start)
	scale := func(n int) {
		patch := fmt.Sprintf(`{"spec":{"parallelism":%d,"completions":%d}}`, n, n)
		if _, err := kube.BatchV1().Jobs(ns).Patch(context.Background(), "floor", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	scale(size / 2)
	ready(size / 2)
	start = time.Now()
	scale(size)
	ready(size)
	f.resize = time.Since(start)
	f.deleted = deleteFloor(b, ns, "floor", 2*time.Minute)
	deleteNamespace(b, ns)
	return f
}

// Both sides name their broker Job flux-sample; so does the completing floor.
const benchJob = "flux-sample"

// waitBenchJobComplete waits until the Job flux-sample in ns is Complete.
func waitBenchJobComplete(b *testing.B, ns string) {
	eventuallyFast(b, 2*time.Minute, "Job complete", func() (bool, string) {
		job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), benchJob, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c, done := jobFinished(job)
		return done && c.Type == batchv1.JobComplete, jobConditions(job.Status.Conditions)
	})
}

// leadPod is the newest pod of index 0 of the Job flux-sample in ns, if any.
func leadPod(ns string) (*corev1.Pod, error) {
	list, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: "job-name=" + benchJob + "," + indexLabel + "=0"})
	if err != nil {
		return nil, err
	}
	var lead *corev1.Pod
	for i, p := range list.Items {
		if p.DeletionTimestamp == nil && (lead == nil || lead.CreationTimestamp.Before(&p.CreationTimestamp)) {
			lead = &list.Items[i]
		}
	}
	return lead, nil
}

// waitLead waits until the lead pod is in phase and returns its name.
func waitLead(b *testing.B, ns string, phase corev1.PodPhase, within time.Duration) string {
	var name string
	eventuallyFast(b, within, "lead "+string(phase), func() (bool, string) {
		lead, err := leadPod(ns)
		if err != nil || lead == nil {
			return false, fmt.Sprintf("no lead yet (%v)", err)
		}
		if lead.Status.Phase == corev1.PodFailed {
			b.Fatalf("lead %s failed: %s", lead.Name, containerStates(*lead))
		}
		name = lead.Name
		return lead.Status.Phase == phase, string(lead.Status.Phase)
	})
	return name
}

// waitUp waits for the lead to run and Flux in it to count size brokers up; it returns the lead.
func waitUp(b *testing.B, s benchSide, ns string, size int) string {
	return waitUpFrom(b, s, ns, waitLead(b, ns, corev1.PodRunning, sizedWait(size)), size)
}

// sizedWait is how long a MiniCluster of size may take to start or to go: 3 minutes, and more
// above 18 brokers (at 64 on two cores the pods wait minutes for their sandboxes and volumes).
func sizedWait(size int) time.Duration { return time.Duration(max(3, size/6)) * time.Minute }

// waitUpFrom waits until Flux in lead counts size brokers up. Each poll is a kubectl exec of
// flux resource list (on both sides alike), about 0.2 s here.
func waitUpFrom(b *testing.B, s benchSide, ns, lead string, size int) string {
	eventuallyFast(b, sizedWait(size), fmt.Sprintf("%d brokers up in Flux (%s)", size, s.name()), func() (bool, string) {
		n, err := s.up(ns, lead)
		return err == nil && n == size, fmt.Sprintf("%d up (%v)", n, err)
	})
	return lead
}

// brokerCount counts the Job's pods that are not being deleted.
func brokerCount(ns string) (int, error) {
	list, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + benchJob})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

var miniClusters = schema.GroupVersionResource{Group: "flux-framework.org", Version: "v1alpha2", Resource: "miniclusters"}

// waitEmpty waits until ns holds nothing of either side: nothing of the release (leftovers),
// no pod, no ConfigMap but kube-root-ca.crt, no Service, no MiniCluster.
func waitEmpty(b *testing.B, ns string) { waitEmptyWithin(b, ns, 3*time.Minute) }

func waitEmptyWithin(b *testing.B, ns string, within time.Duration) {
	dyn := dynamic.NewForConfigOrDie(restConfig)
	eventuallyFast(b, within, "nothing left in "+ns, func() (bool, string) {
		left, err := namespaceObjects(ns, func(kind string, o metav1.Object) bool {
			return ofRelease(o, benchJob) || kind == "Pod" || kind == "Service" ||
				(kind == "ConfigMap" && o.GetName() != "kube-root-ca.crt")
		})
		if err != nil {
			return false, err.Error()
		}
		mcs, err := dyn.Resource(miniClusters).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, m := range mcs.Items {
				left = append(left, "MiniCluster/"+m.GetName())
			}
		}
		return len(left) == 0, fmt.Sprintf("still there: %v", left)
	})
}

// settleDisk writes back what the steps before left in the page cache before a create is timed:
// a view copied into every pod is about 205 MB, and on the local cluster every node shares this
// machine's disk, so without it a side paid for the writeback of the side before it.
func settleDisk() { syscall.Sync() }

// timed runs a command and returns how long it took, failing the benchmark when it fails.
func timed(b *testing.B, stdin string, name string, args ...string) time.Duration {
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return took
}

// chartSide: the chart, installed with helm (Helm 4 unless BENCH_HELM names another CLI).
type chartSide struct {
	helm  string
	label string   // its name in the table
	set   []string // its values beside the images and sizes
}

func (c chartSide) name() string { return c.label }

func (c chartSide) create(b *testing.B, ns string, size, maxSize int, command string) time.Duration {
	args := slices.Concat([]string{"install", benchJob, chartDir, "--namespace", ns}, testImages, c.set,
		[]string{"--set", fmt.Sprintf("size=%d,maxSize=%d", size, maxSize)})
	if command != "" {
		args = append(args, "--set", fmt.Sprintf("tasks=%d", size), "--set-string", "command="+command)
	}
	return timed(b, "", c.helm, args...)
}

func (c chartSide) resize(b *testing.B, ns string, size int) time.Duration {
	return timed(b, "", c.helm, "upgrade", benchJob, chartDir, "--namespace", ns, "--reuse-values", resizeFlag, "--set", fmt.Sprintf("size=%d", size))
}

func (c chartSide) remove(b *testing.B, ns string) time.Duration {
	return timed(b, "", c.helm, "uninstall", benchJob, "--namespace", ns)
}

func (chartSide) up(ns, lead string) (int, error) {
	up, _, err := nodeStates(ns, lead)
	return up, err
}

// operatorSide: the Flux Operator's MiniCluster, applied, patched and deleted with kubectl, as
// its documentation does. Its brokers load Fluxion, as the operator means them to (its
// broker.toml sets Fluxion's queue policy) and as the chart's do, through the environment of
// its spec: the view's modprobe and module paths. Its own start leaves flux-core 0.88 on
// sched-simple: it points FLUX_RC_EXTRA at the view's etc/flux/rc1.d, one level too deep for
// flux-core to find Fluxion's rc1 script, and Fluxion's modules are not on flux-core's module
// path. simple: left on sched-simple.
type operatorSide struct {
	kubectl string
	simple  bool
}

func (operatorSide) name() string { return "operator" }

func (o operatorSide) create(b *testing.B, ns string, size, maxSize int, command string) time.Duration {
	mode, container := "  interactive: true\n", ""
	if command != "" {
		mode, container = fmt.Sprintf("  tasks: %d\n", size), "    command: "+command+"\n"
	}
	if !o.simple {
		container += "    environment:\n      FLUX_MODPROBE_PATH_APPEND: /mnt/flux/view/etc/flux/modprobe\n" +
			"      FLUX_MODULE_PATH_PREPEND: /mnt/flux/view/lib/flux/modules\n"
	}
	// quiet: the chart's brokers log as little by default.
	spec := fmt.Sprintf(`apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: %s
  namespace: %s
spec:
  size: %d
  maxSize: %d
%s  logging:
    quiet: true
  flux:
    container:
      image: %s
  containers:
  - image: %s
%s`, benchJob, ns, size, maxSize, mode, viewImage, appImage, container)
	return timed(b, spec, o.kubectl, "apply", "-f", "-")
}

func (o operatorSide) resize(b *testing.B, ns string, size int) time.Duration {
	return timed(b, "", o.kubectl, "patch", "minicluster", benchJob, "--namespace", ns, "--type", "merge",
		"-p", fmt.Sprintf(`{"spec":{"size":%d}}`, size))
}

func (o operatorSide) remove(b *testing.B, ns string) time.Duration {
	return timed(b, "", o.kubectl, "delete", "minicluster", benchJob, "--namespace", ns)
}

// up: flux resource list in the lead's application container, with the environment the
// operator writes for its users (flux-view.sh: PATH and PYTHONPATH of the copied view, the
// lead's socket).
func (operatorSide) up(ns, lead string) (int, error) {
	out, stderr, err := execIn(ns, lead, benchJob, "/bin/bash", "-c",
		`. /mnt/flux/flux-view.sh && FLUX_URI=$fluxsocket flux resource list --no-header --format '{state} {ranks}'`)
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, stderr)
	}
	up, _, err := countStates(out)
	return up, err
}

// startOperator applies the operator's CRD and starts its manager out of cluster, as its
// README says to run it; both are removed when the benchmark ends.
func startOperator(b *testing.B) operatorSide {
	dir := os.Getenv("MINICLUSTER_OPERATOR_DIR")
	if dir == "" {
		out, err := exec.Command("bash", filepath.Join(repoRoot, "ci", "operator", "build.sh"), "--print-dir").Output()
		if err != nil {
			b.Fatalf("ci/operator/build.sh --print-dir: %v", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	manager, crd := filepath.Join(dir, "manager"), filepath.Join(dir, "crd.yaml")
	if _, err := os.Stat(manager); err != nil {
		b.Fatalf("the Flux Operator is not built (%v): run `bash ci/operator/build.sh` (make bench-e2e does)", err)
	}
	kubectl := envOr("KUBECTL", filepath.Join(clusterDir(), "bin", "kubectl"))
	if _, err := os.Stat(kubectl); err != nil {
		if kubectl, err = exec.LookPath("kubectl"); err != nil {
			b.Fatal("no kubectl: set KUBECTL")
		}
	}
	timed(b, "", kubectl, "apply", "--server-side", "-f", crd)
	const probe = "127.0.0.1:18081"
	cmd := exec.Command(manager, "--kubeconfig="+kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address="+probe)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// A manager that ends at once (another one holds its probe port) must not pass for ready.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	b.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if out, err := exec.Command(kubectl, "delete", "--ignore-not-found", "-f", crd).CombinedOutput(); err != nil {
			b.Errorf("delete the operator's CRD: %v\n%s", err, out)
		}
	})
	eventually(b, time.Minute, "the operator's manager ready", func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			b.Fatalf("the operator's manager ended: %v\n%s", err, log.String())
		default:
		}
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return false, err.Error() + "\n" + log.String()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return operatorSide{kubectl: kubectl}
}

// median of the figures picked from each run.
func median[R any](runs []R, pick func(R) time.Duration) time.Duration {
	var d []time.Duration
	for _, r := range runs {
		d = append(d, pick(r))
	}
	slices.Sort(d)
	if len(d) == 0 {
		return 0
	}
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

// operatorTable prints the medians at one size: the floor, each side (the first is the
// operator), and each other side's ratio to the operator.
func operatorTable(size int, sides []string, runs []opRun) string {
	var s strings.Builder
	fmt.Fprintf(&s, "\nsize %d, medians of %d runs, seconds | floor | %s", size, len(runs), strings.Join(sides, " | "))
	for _, n := range sides[1:] {
		fmt.Fprintf(&s, " | %s/%s", n, sides[0])
	}
	fmt.Fprintln(&s)
	row := func(what string, floor func(opRun) time.Duration, pick func(sideTimes) time.Duration) {
		f := "-"
		if floor != nil {
			f = fmt.Sprintf("%.2f", median(runs, floor).Seconds())
		}
		fmt.Fprintf(&s, "%s | %s", what, f)
		var m []time.Duration
		for _, n := range sides {
			m = append(m, median(runs, func(r opRun) time.Duration { return pick(r.sides[n]) }))
			fmt.Fprintf(&s, " | %.2f", m[len(m)-1].Seconds())
		}
		for _, d := range m[1:] {
			ratio := "-"
			if m[0] > 0 {
				ratio = strconv.FormatFloat(d.Seconds()/m[0].Seconds(), 'f', 2, 64)
			}
			fmt.Fprintf(&s, " | %s", ratio)
		}
		fmt.Fprintln(&s)
	}
	row("ephemeral create -> lead Succeeded", func(r opRun) time.Duration { return r.floor.completed },
		func(t sideTimes) time.Duration { return t.ephemeral })
	row("  the create command alone (floor: helm, a one-ConfigMap chart)", func(r opRun) time.Duration { return r.floor.helmInstall },
		func(t sideTimes) time.Duration { return t.createCmd })
	row("ephemeral create -> Job Complete", func(r opRun) time.Duration { return r.floor.complete },
		func(t sideTimes) time.Duration { return t.complete })
	row("completed one removed -> nothing left", func(r opRun) time.Duration { return r.floor.deletedCompleted },
		func(t sideTimes) time.Duration { return t.removeCompleted })
	row("whole cycle: create -> Complete -> removed -> nothing left", func(r opRun) time.Duration { return r.floor.cycle },
		func(t sideTimes) time.Duration { return t.cycle })
	row("  the remove command alone (floor: helm)", func(r opRun) time.Duration { return r.floor.helmUninstall },
		func(t sideTimes) time.Duration { return t.removeCmd })
	row("interactive create -> all up in Flux", func(r opRun) time.Duration { return r.floor.running },
		func(t sideTimes) time.Duration { return t.interactive })
	row(fmt.Sprintf("resize %d -> %d -> new brokers up in Flux", size/2, size), func(r opRun) time.Duration { return r.floor.resize },
		func(t sideTimes) time.Duration { return t.resize })
	row("  the resize command alone (floor: helm)", func(r opRun) time.Duration { return r.floor.helmUpgrade },
		func(t sideTimes) time.Duration { return t.resizeCmd })
	row("running one removed -> nothing left", func(r opRun) time.Duration { return r.floor.deleted },
		func(t sideTimes) time.Duration { return t.removeRunning })
	return s.String()
}
