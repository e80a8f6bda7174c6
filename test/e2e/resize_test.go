//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resize 6 -> 8 -> 3 with helm upgrade --reuse-values: pods come and go, Flux shows the new
// count up (and the rest down), broker.toml and the certificate stay the same. Growing past maxSize and changing the image
// fail with the chart's message and leave the release deployed.
func TestResize(t *testing.T) {
	t.Parallel()
	eachHelm(t, testResize)
}

func testResize(t *testing.T, helm string) {
	ns := newNamespace(t, "resize")
	r := newRelease(t, ns, "flux-sample", helm)
	// A tree (the default is flat), so that workers are the parents of others: at size 8 ranks
	// 3-6 connect to ranks 1 and 2, rank 7 to rank 3; all of them leave when it shrinks to 3.
	r.install("--set", "size=6,flux.topology=kary:2")
	up(t, r, 6, 16)
	config := r.brokerConfig()
	cert := r.curveSecret().Data["curve.cert"]

	for _, size := range []int{8, 3} {
		if _, err := r.upgrade("--set", fmt.Sprintf("size=%d", size)); err != nil {
			t.Fatalf("resize to %d: %v", size, err)
		}
		pods := waitFluxUp(t, ns, r.name, size, 16, wiringTimeout)
		if size < 6 {
			// Scale-down stops brokers cleanly: Flux knows why they are gone.
			out, stderr, err := fluxIn(ns, pods[0].Name, "overlay", "status", "--no-pretty")
			for rank := size; rank < 6; rank++ {
				if want := fmt.Sprintf("%d flux-sample-%d: offline administrative shutdown", rank, rank); !strings.Contains(out, want) {
					t.Errorf("flux overlay status lacks %q (%v %s):\n%s", want, err, stderr, out)
				}
			}
		}
		now := r.brokerConfig()
		if now["broker.toml"] != config["broker.toml"] || now["hosts"] != config["hosts"] {
			t.Errorf("resize to %d changed broker.toml or hosts:\nbefore %q\nafter  %q", size, config["broker.toml"], now["broker.toml"])
		}
		if now["size"] != fmt.Sprint(size) {
			t.Errorf("broker ConfigMap size = %q after resize to %d", now["size"], size)
		}
		if got := r.curveSecret(); got == nil || !bytes.Equal(got.Data["curve.cert"], cert) {
			t.Errorf("resize to %d changed or removed the CURVE certificate", size)
		}
		job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), r.name, metav1.GetOptions{})
		if err != nil || *job.Spec.Parallelism != int32(size) || *job.Spec.Completions != int32(size) {
			t.Errorf("Job after resize to %d: parallelism/completions not %d (%v)", size, size, err)
		}
	}

	_, revision := r.status()
	// An image other than the running one (E2E_INSTALL_ARGS may have made fluxImage the running one).
	other := fluxImage
	if job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), r.name, metav1.GetOptions{}); err == nil && job.Spec.Template.Spec.Containers[0].Image == other {
		other = mpiImage
	}
	for _, tc := range []struct {
		set, want string
	}{
		{"size=17", "size=17 is larger than maxSize=16"},
		{"image=" + other, "differs from the running MiniCluster's image"},
	} {
		out, err := r.upgrade("--set", tc.set)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("helm upgrade --set %s: want an error with %q, got %v:\n%s", tc.set, tc.want, err, out)
		}
		if status, rev := r.status(); status != "deployed" || rev != revision {
			t.Errorf("after the refused upgrade --set %s the release is %s at revision %d, want deployed at %d", tc.set, status, rev, revision)
		}
	}
	waitFluxUp(t, ns, r.name, 3, 16, 30*time.Second) // still running as before
}

// Uninstall right after a resize: the lead, as it stops, tells the workers to stop too, and their
// own SIGTERM reaches them while they unload their modules (rc3). Every broker must still unload
// them: flux-core 0.88 aborts rc3 on a signal, and a broker that exits with modules loaded waits
// 10 s for each of them, which held the pods (and the uninstall) about 11 s in most runs.
func TestUninstallAfterResizeUnloadsEveryModule(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "uninstall-resized")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=2")
	up(t, r, 2, 16)
	if _, err := r.upgrade("--set", "size=4"); err != nil {
		t.Fatal(err)
	}
	pods := waitFluxUp(t, ns, r.name, 4, 16, wiringTimeout)
	for i, text := range uninstallFollowingLogs(t, r, pods, 4) {
		// Its own SIGTERM, or the lead's stop first (its own SIGTERM then kept from it), or the
		// lead's stop well before its SIGTERM: it ended, started again to rejoin the lead, and
		// its SIGTERM ended that broker before it had joined (nothing but the builtins loaded).
		stopped := strings.Contains(text, "SIGTERM: stopping the broker") || strings.Contains(text, "SIGTERM: the broker is already stopping") ||
			strings.Contains(text, "the instance ended: starting the broker again") && strings.Contains(text, "SIGTERM: the broker has not joined its parent yet: killing it")
		if !stopped || !strings.Contains(text, "builtins-done: unload-builtins->exit") {
			t.Errorf("broker %d did not stop on SIGTERM and exit:\n%s", i, text)
		}
		if strings.Contains(text, "was not properly shut down") {
			t.Errorf("broker %d exited with modules still loaded (its rc3 was cut short):\n%s", i, text)
		}
	}
}

// The same race made certain: every broker's rc3 first sleeps 8 s (time enough, under load, to
// see the mark and signal). The lead stops (its SIGTERM) and so stops the worker, whose own
// SIGTERM then comes while its rc3 runs. The worker's broker marked its stop (a clean-up command
// the chart's modprobe file gives every worker), so the entrypoint keeps the SIGTERM to itself
// and rc3 runs to its end. A nested instance's stop, before, marks only its own brokers.
func TestWorkerStoppedByTheLeadKeepsItsOwnSIGTERM(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "stopping")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=2", "--set-json", `flux.brokerOptions=["-Sbroker.rc3_path=sleep 8; flux modprobe rc3"]`)
	pods := waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
	lead, worker := pods[0].Name, pods[1].Name
	// A Flux instance that a job starts in the pods inherits the environment, the modprobe
	// file's directory with it: it marks its own rundir, not the pod's broker's.
	nested := "FLUX_MODPROBE_PATH_APPEND=/minicluster/modprobe /minicluster/scripts/flux run -N2 flux start -Slog-stderr-mode=local -Slog-stderr-level=6 true"
	if stdout, stderr, err := execIn(ns, lead, "flux", "/bin/sh", "-c", nested); err != nil || !strings.Contains(stderr, "cleanup.0: : > /tmp/") {
		t.Fatalf("a nested instance's worker marked no stop of its own: %v\n%s\n%s", err, stdout, stderr)
	}
	if _, _, err := execIn(ns, worker, "flux", "test", "-e", "/minicluster/run/flux/stopping"); err == nil {
		t.Fatal("a nested instance's stop marked the pod's broker as stopping")
	}
	log := followLogs(t, ns, worker, "flux")
	if _, stderr, err := execIn(ns, lead, "flux", "/bin/sh", "-c", "kill -TERM 1"); err != nil {
		t.Fatalf("kill -TERM 1 in the lead: %v %s", err, stderr)
	}
	eventually(t, time.Minute, "the worker marked its stop", func() (bool, string) {
		_, stderr, err := execIn(ns, worker, "flux", "test", "-e", "/minicluster/run/flux/stopping")
		return err == nil, stderr
	})
	if _, stderr, err := execIn(ns, worker, "flux", "/bin/sh", "-c", "kill -TERM 1"); err != nil {
		t.Fatalf("kill -TERM 1 in the worker: %v %s", err, stderr)
	}
	text := log()
	for _, want := range []string{"SIGTERM: the broker is already stopping", "rc3-success", "builtins-done: unload-builtins->exit"} {
		if !strings.Contains(text, want) {
			t.Errorf("the worker's log has no %q:\n%s", want, text)
		}
	}
	for _, notWant := range []string{"SIGTERM: stopping the broker", "rc3-fail", "was not properly shut down"} {
		if strings.Contains(text, notWant) {
			t.Errorf("the worker's log has %q:\n%s", notWant, text)
		}
	}
}

// A worker that has not joined its parent holds nothing: on SIGTERM the entrypoint kills its
// broker rather than have it run rc3 with no parent (which fails) or ignore the signal while it
// loads its built-in modules (Flux does), which left it for the kubelet to kill 30 s later. Made
// certain here: the lead's broker is stopped (SIGSTOP), the MiniCluster grows by one worker,
// which cannot join, and shrinks back. Then the lead goes on and Flux shows 2 up.
func TestWorkerThatHasNotJoinedIsKilled(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "unjoined")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", "size=2")
	pods := waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
	lead := pods[0].Name
	signalBroker := func(sig string) {
		t.Helper()
		script := `for d in /proc/[0-9]*; do case $(cat "$d/comm" 2>/dev/null) in flux-broker*) kill -` + sig + ` "${d#/proc/}" && exit 0 ;; esac; done; exit 1`
		if _, stderr, err := execIn(ns, lead, "flux", "/bin/sh", "-c", script); err != nil {
			t.Fatalf("kill -%s the lead's broker: %v %s", sig, err, stderr)
		}
	}
	signalBroker("STOP")
	defer signalBroker("CONT")
	if _, err := r.upgrade("--set", "size=3"); err != nil {
		t.Fatal(err)
	}
	var worker string
	eventually(t, wiringTimeout, "worker 2 waits for its parent", func() (bool, string) {
		pods, _, err := brokerPods(ns, r.name)
		if err != nil || pods[2].Name == "" {
			return false, fmt.Sprintf("no pod 2 yet %v", err)
		}
		worker = pods[2].Name
		log, _ := podLogs(ns, worker, "flux", 0)
		return strings.Contains(log, "builtins-success: load-builtins->join"), log
	})
	log := followLogs(t, ns, worker, "flux")
	start := time.Now()
	if _, err := r.upgrade("--set", "size=2"); err != nil {
		t.Fatal(err)
	}
	text := log()
	took := time.Since(start)
	if !strings.Contains(text, "SIGTERM: the broker has not joined its parent yet: killing it") {
		t.Errorf("the unjoined worker's log does not say it was killed:\n%s", text)
	}
	for _, notWant := range []string{"rc3", "SIGTERM: stopping the broker"} {
		if strings.Contains(text, notWant) {
			t.Errorf("the unjoined worker's log has %q:\n%s", notWant, text)
		}
	}
	if took > 10*time.Second {
		t.Errorf("the unjoined worker's container ended %v after the shrink", took)
	}
	signalBroker("CONT")
	waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
	// A joined worker is marked so, and so gets its SIGTERM.
	if _, stderr, err := execIn(ns, pods[1].Name, "flux", "test", "-e", "/minicluster/run/flux/joined"); err != nil {
		t.Errorf("worker 1 has joined but its rundir has no joined mark: %v %s", err, stderr)
	}
}

// Every broker's rc3 takes the steps Flux's Python rc3 (`flux modprobe rc3`) would take, from
// the plan its rc1 wrote (modprobe-rc1.py), without Python: the same modules and commands, in
// an order that keeps what matters (the finish event before kvs goes, the content flush after
// it and before the backing store goes, content last); the brokers stop with every module
// unloaded. A module the plan does not know (one loaded by hand after rc1) is left over after
// it: Flux's rc3 then runs for it.
// Both with the view and with Flux in the image, whose flux-module rc3.sh finds apart.
func TestRc3Plan(t *testing.T) {
	t.Parallel()
	t.Run("view", func(t *testing.T) { testRc3Plan(t, "size=3") })
	t.Run("flux-in-image", func(t *testing.T) { testRc3Plan(t, "size=3,flux.view.enabled=false,image="+fluxImage) })
}

func testRc3Plan(t *testing.T, set string) {
	t.Parallel()
	ns := newNamespace(t, "rc3-plan")
	r := newRelease(t, ns, "flux-sample", helm4)
	r.install("--set", set)
	pods := up(t, r, 3, 16)
	for rank := range 2 {
		pod := pods[rank].Name
		plan, stderr, err := execIn(ns, pod, "flux", "cat", "/minicluster/run/flux/rc3-plan")
		if err != nil {
			t.Fatalf("broker %d has no rc3 plan: %v %s", rank, err, stderr)
		}
		// Flux's own rc3, dry, with the broker's modprobe path (Fluxion's files, the chart's).
		dry, stderr, err := execIn(ns, pod, "flux", "/bin/sh", "-c",
			`env "$(tr '\0' '\n' < /proc/$(flux getattr broker.pid)/environ | grep ^FLUX_MODPROBE_PATH_APPEND=)" flux modprobe rc3 --dry-run`)
		if err != nil {
			t.Fatalf("flux modprobe rc3 --dry-run on rank %d: %v %s", rank, err, stderr)
		}
		want, got := dryRunSteps(dry), planSteps(plan)
		sort.Strings(want)
		gotNames := slices.Sorted(maps.Keys(got))
		if !slices.Equal(gotNames, want) {
			t.Errorf("broker %d: the plan's steps %v, Flux's rc3 %v\nplan:\n%s\ndry run:\n%s", rank, gotNames, want, plan, dry)
		}
		// The orders that matter, each between two steps the broker's plan must have: all of
		// them on the lead, those of modules every rank loads on a worker (flux-core loads
		// job-manager and content-sqlite, and runs the finish event and the flush, on rank 0).
		orders := []struct {
			a, b     string
			leadOnly bool
		}{
			{"kvs", "content", false},
			{"resource", "kvs", false},
			{"post-finish-event", "kvs", true},
			{"kvs", "content-flush", true},
			{"content-flush", "content-sqlite", true},
			{"job-manager", "resource", true},
		}
		for _, o := range orders {
			if o.leadOnly && rank != 0 {
				continue
			}
			roundA, hasA := got[o.a]
			roundB, hasB := got[o.b]
			switch {
			case !hasA || !hasB:
				t.Errorf("broker %d: the plan lacks %s or %s, whose order it must keep:\n%s", rank, o.a, o.b, plan)
			case roundA >= roundB:
				t.Errorf("broker %d: the plan does %s in round %d, not before %s (round %d):\n%s", rank, o.a, roundA, o.b, roundB, plan)
			}
		}
	}
	// Broker 2's plan loses a module (as if loaded by hand after rc1): rc3.sh sees it left
	// over and runs Flux's rc3 for it.
	if _, stderr, err := execIn(ns, pods[2].Name, "flux", "sed", "-i", "/^remove job-info$/d", "/minicluster/run/flux/rc3-plan"); err != nil {
		t.Fatalf("edit broker 2's plan: %v %s", err, stderr)
	}
	for i, text := range uninstallFollowingLogs(t, r, pods, 3) {
		if !strings.Contains(text, "/minicluster/scripts/rc3.sh") || !strings.Contains(text, "rc3-success") {
			t.Errorf("broker %d: no rc3.sh that succeeded:\n%s", i, text)
		}
		if strings.Contains(text, "was not properly shut down") {
			t.Errorf("broker %d exited with modules still loaded:\n%s", i, text)
		}
		if strings.Contains(text, "no flux-module on FLUX_EXEC_PATH") {
			t.Errorf("broker %d: rc3.sh did not find flux-module where the flux front-end finds it:\n%s", i, text)
		}
		leftOver := strings.Contains(text, "rc3.sh: module job-info is still loaded")
		if leftOver != (i == 2) {
			t.Errorf("broker %d: Flux's rc3 ran for a module left over: %v, want %v:\n%s", i, leftOver, i == 2, text)
		}
	}
}

// uninstallFollowingLogs uninstalls r to nothing and returns what brokers 0..n-1 logged (their
// flux container) from just before the uninstall to their end.
func uninstallFollowingLogs(t *testing.T, r *release, pods map[int]corev1.Pod, n int) []string {
	t.Helper()
	logs := make([]func() string, n)
	for i := range n {
		logs[i] = followLogs(t, r.ns, pods[i].Name, "flux")
	}
	r.uninstallToNothing()
	texts := make([]string, n)
	for i, log := range logs {
		texts[i] = log()
	}
	return texts
}

// planSteps reads an rc3 plan: each module removed and command run, with its round.
func planSteps(plan string) map[string]int {
	commands := map[string]string{"flux startlog --post-finish-event": "post-finish-event", "flux content flush": "content-flush"}
	steps, round := map[string]int{}, 0
	for _, line := range strings.Split(plan, "\n") {
		action, arg, _ := strings.Cut(line, " ")
		switch action {
		case "remove":
			steps[arg] = round
		case "exec":
			steps[commands[arg]] = round
		case "wait":
			round++
		}
	}
	return steps
}

// dryRunSteps reads `flux modprobe rc3 --dry-run`: the modules it removes and the tasks it
// runs, but its rc3.d scripts' task (run-all-rc3), which the plan lists as scripts.
func dryRunSteps(out string) []string {
	var steps []string
	for _, line := range strings.Split(out, "\n") {
		action, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		if (action == "remove" || action == "run") && arg != "run-all-rc3" {
			steps = append(steps, arg)
		}
	}
	return steps
}
