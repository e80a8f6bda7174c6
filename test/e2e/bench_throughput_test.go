//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// throughputJobs is how many `true` jobs each way of submitting runs (BENCH_THROUGHPUT_JOBS);
// `flux run` one at a time runs a tenth of them.
func throughputJobs(b *testing.B) int {
	n, err := strconv.Atoi(envOr("BENCH_THROUGHPUT_JOBS", "500"))
	if err != nil || n < 10 {
		b.Fatalf("BENCH_THROUGHPUT_JOBS=%q: want a number of jobs, 10 or more", envOr("BENCH_THROUGHPUT_JOBS", ""))
	}
	return n
}

// throughputScript names the scheduler's modules loaded, then runs the jobs three ways with the
// flux given and prints, one line each, the way, the nanoseconds from the first submit to the
// last completion and the time it started (nanoseconds since the epoch: to match a way with the
// machine's own records).
func throughputScript(flux string, jobs int) string {
	return fmt.Sprintf(`set -e; t() { date +%%s%%N; }
flux=%s; n=%d
echo "schedulers $($flux module list | awk '/^sched/ {print $1}' | tr '\n' ' ')"
s=$(t); $flux submit --cc=1-$n --quiet --wait true; e=$(t); echo "cc $((e - s)) $s"
s=$(t); seq $n | $flux bulksubmit --quiet --wait true {}; e=$(t); echo "bulksubmit $((e - s)) $s"
s=$(t); i=0; while [ $i -lt $((n / 10)) ]; do $flux run true; i=$((i + 1)); done; e=$(t); echo "run $((e - s)) $s"
`, flux, jobs)
}

// parseRates reads the lines "NAME NANOSECONDS [...]" a benchmark's script prints: "up" in seconds,
// "run" (flux run one at a time, a tenth of the jobs) and any other name in jobs per second.
// It fails unless every name in want is there.
// throughputWays are the ways throughputScript times, by the names it prints.
var throughputWays = []string{"cc", "bulksubmit", "run"}

// chartThroughput runs throughputScript in the chart's lead pod, with the Flux its brokers run.
func chartThroughput(ns, lead string, jobs int) (string, string, error) {
	return execInWithin(20*time.Minute, ns, lead, "flux", "sh", "-c",
		`. /minicluster/scripts/env.sh && `+throughputScript("$(real_flux)", jobs))
}

func parseRates(b *testing.B, out string, jobs int, want ...string) map[string]float64 {
	b.Helper()
	rates := map[string]float64{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || ns <= 0 {
			continue
		}
		s := time.Duration(ns).Seconds()
		switch f[0] {
		case "up":
			rates["up"] = s
		case "run":
			rates["run"] = float64(jobs/10) / s
		default:
			rates[f[0]] = float64(jobs) / s
		}
	}
	for _, name := range want {
		if _, ok := rates[name]; !ok {
			b.Fatalf("the benchmark's script printed no %s time (want %s, each with nanoseconds):\n%s", name, strings.Join(want, ", "), out)
		}
	}
	return rates
}

// BenchmarkThroughput: many small jobs on a MiniCluster of each size (BENCH_THROUGHPUT_SIZES),
// next to the same flux-core with the same number of brokers and the same overlay shape
// without Kubernetes between them (alone: `flux start --test-size=N` in one container of the
// flux image on the lead's node; its brokers talk over local sockets, Kubernetes only starts
// the container), and next to the Flux Operator's interactive MiniCluster of the same size
// (BENCH_THROUGHPUT_SIDES picks sides: chart, alone, operator). Each way is timed inside the
// instance from the first submit to the last completion: `flux submit --cc`, `flux
// bulksubmit`, and `flux run` one at a time. Each iteration starts with the next side, so that
// -benchtime 3x runs every side first, second and last once.
func BenchmarkThroughput(b *testing.B) {
	jobs := throughputJobs(b)
	sides := strings.Split(envOr("BENCH_THROUGHPUT_SIDES", "chart,alone,operator"), ",")
	var op operatorSide
	for _, s := range sides {
		switch s {
		case "operator":
			op = startOperator(b)
		case "chart", "alone":
		default:
			b.Fatalf("BENCH_THROUGHPUT_SIDES=%q: want some of chart,alone,operator", os.Getenv("BENCH_THROUGHPUT_SIDES"))
		}
	}
	// Every side schedules with the chart side's scheduler: Fluxion unless BENCH_THROUGHPUT_SET
	// says flux.scheduler=simple.
	scheduler := "sched-fluxion-qmanager"
	if strings.Contains(envOr("BENCH_THROUGHPUT_SET", ""), "flux.scheduler=simple") {
		scheduler = "sched-simple"
		if slices.Contains(sides, "alone") {
			b.Fatal("BENCH_THROUGHPUT_SET=flux.scheduler=simple: Flux alone schedules with Fluxion; leave alone out of BENCH_THROUGHPUT_SIDES")
		}
	}
	op.simple = scheduler == "sched-simple"
	scheduled := regexp.MustCompile(`(?m)^schedulers .*\b` + scheduler + `\b`)
	for _, size := range benchSizes(b, "BENCH_THROUGHPUT_SIZES", "6,16") {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			rates, cpu := map[string]map[string]float64{}, map[string]map[string]float64{}
			iteration := 0
			for b.Loop() {
				for i := range sides {
					side := sides[(i+iteration)%len(sides)]
					out, perJob := throughputOf(b, side, op, size, jobs)
					cpu[side] = addSums(cpu[side], perJob)
					if !scheduled.MatchString(out) {
						b.Fatalf("%s at size %d did not schedule with %s:\n%s", side, size, scheduler, out)
					}
					rates[side] = addSums(rates[side], parseRates(b, out, jobs, throughputWays...))
				}
				iteration++
			}
			n := float64(b.N)
			for _, way := range throughputWays {
				line := fmt.Sprintf("size %d, %s, jobs/s:", size, way)
				for _, side := range sides {
					metric(b, rates[side][way]/n, sideUnit("jobs/s-"+way, side))
					line += fmt.Sprintf(" %s %.1f", side, rates[side][way]/n)
				}
				if alone := rates["alone"][way]; alone > 0 && rates["chart"] != nil {
					line += fmt.Sprintf(" (chart / alone %.2fx)", rates["chart"][way]/alone)
				}
				if oper := rates["operator"][way]; oper > 0 && rates["chart"] != nil {
					line += fmt.Sprintf(" (chart / operator %.2fx)", rates["chart"][way]/oper)
				}
				fmt.Println(line)
			}
			for _, side := range sides {
				if cpu[side] == nil {
					continue
				}
				metric(b, cpu[side]["all"]/n, sideUnit("cpu-ms/job", side))
				metric(b, cpu[side][cpuKubernetes]/n, sideUnit("cpu-ms/job-kubernetes", side))
				fmt.Printf("size %d, %s, CPU ms per job: %.1f, Kubernetes' part %.1f (kubelets %.1f)\n", size, side,
					cpu[side]["all"]/n, cpu[side][cpuKubernetes]/n, cpu[side][kubeKubelet]/n)
			}
		})
	}
}

// sideUnit is a metric's unit for a side: the chart's as it is, another side's with its name
// after it (jobs/s-cc, jobs/s-cc-operator).
func sideUnit(unit, side string) string {
	if side == "chart" {
		return unit
	}
	return unit + "-" + side
}

// throughputOf runs throughputScript on one side at size, each in a namespace of its own, and
// returns what it printed and, on the chart's and the operator's side, the machine's CPU
// milliseconds per job (jobsCPU).
func throughputOf(b *testing.B, side string, op operatorSide, size, jobs int) (out string, perJob map[string]float64) {
	ns := newNamespace(b, "throughput-"+side)
	defer deleteNamespace(b, ns)
	var stderr string
	var err error
	switch side {
	case "chart":
		r := newRelease(b, ns, "flux-sample", helm4)
		// BENCH_THROUGHPUT_SET: values of the chart's side other than the view mounted.
		r.install("--set", fmt.Sprintf("size=%d,maxSize=%d,%s", size, size, envOr("BENCH_THROUGHPUT_SET", "flux.view.mode=image")))
		pods := waitFluxUp(b, ns, r.name, size, size, 10*time.Minute)
		settle(b, time.Minute)
		cpu := startCPU(b)
		out, stderr, err = chartThroughput(ns, pods[0].Name, jobs)
		var line string
		perJob, line = jobsCPU(b, cpu, jobs)
		b.Logf("size %d, chart, in the lead:\n%s%s", size, out, line)
		r.uninstall()
	case "alone":
		// On a node of the cluster's, as the chart's lead would be.
		nodes := schedulableNodes(b)
		if len(nodes) == 0 {
			b.Fatal("no schedulable node for flux start")
		}
		settle(b, time.Minute)
		out = fluxAlone(b, ns, nodes[0], size, jobs)
		b.Logf("size %d, Flux alone:\n%s", size, out)
		return out, nil
	case "operator":
		op.create(b, ns, size, size, "")
		lead := waitUp(b, op, ns, size)
		settle(b, time.Minute)
		cpu := startCPU(b)
		// With the environment the operator writes for its users (flux-view.sh).
		out, stderr, err = execInWithin(20*time.Minute, ns, lead, benchJob, "/bin/bash", "-c",
			`. /mnt/flux/flux-view.sh && export FLUX_URI=$fluxsocket && `+throughputScript("flux", jobs))
		var line string
		perJob, line = jobsCPU(b, cpu, jobs)
		b.Logf("size %d, operator, in the lead:\n%s%s", size, out, line)
		op.remove(b, ns)
		waitEmptyWithin(b, ns, sizedWait(size))
	}
	if err != nil {
		b.Fatalf("%s, in the lead: %v\n%s%s", side, err, out, stderr)
	}
	return out, perJob
}

// jobsCPU ends cpu's measure and returns the milliseconds of CPU per job of throughputScript:
// of the MiniCluster's parts together ("all": Kubernetes, the brokers and what they start, and
// the rest of its pods, which is where the submitting commands run), of each part and of
// Kubernetes' components, with a line that says so (nil and "" without a meter). The rest of
// the machine ("other") is left out of "all": it is whatever else ran meanwhile.
func jobsCPU(b *testing.B, cpu *cpuMeter, jobs int) (map[string]float64, string) {
	used := cpu.stop(b)
	if used == nil {
		return nil, ""
	}
	all := float64(2*jobs + jobs/10) // throughputScript's jobs: --cc, bulksubmit, a tenth by run
	perJob := map[string]float64{}
	line := "CPU ms per job:"
	for _, part := range cpuParts {
		perJob[part] = 1000 * used[part] / all
		if part == cpuKubernetes || part == cpuFlux || part == cpuChart {
			perJob["all"] += perJob[part]
		}
		line += fmt.Sprintf(" %s %.1f", part, perJob[part])
	}
	line += "; Kubernetes':"
	for _, c := range kubeComponents {
		perJob[c] = 1000 * cpu.kubernetes()[c] / all
		line += fmt.Sprintf(" %s %.1f", c, perJob[c])
	}
	return perJob, line + "\n"
}

// aloneConfig writes the parts of the chart's broker.toml that bear on jobs (the validators
// $PLUGINS, the chart's own from $VALIDATOR and $FEASIBLE, and Fluxion's queue policy) for
// `flux start`; its bootstrap and R are test-size's own.
const aloneConfig = `printf '%s\n' "$VALIDATOR" > /tmp/validate-brokers-up.py && printf '%s\n' "$FEASIBLE" > /tmp/validate-feasible.py && ` +
	`printf '%s\n' '[ingest.validator]' "plugins = [$PLUGINS]" '[sched-fluxion-qmanager]' 'queue-policy = "fcfs"' > /tmp/alone.toml && `

// aloneValidators are the job validators of Flux alone by name (an option validators=NAME of
// alonePod): the chart's (its broker.toml's), flux-core's feasibility alone, or none but the
// jobspec's own check (flux-core's default, and the Flux Operator's).
var aloneValidators = map[string]string{
	"chart":   `"jobspec", "/tmp/validate-feasible.py", "/tmp/validate-brokers-up.py"`,
	"flux":    `"jobspec", "feasibility"`,
	"jobspec": `"jobspec"`,
}

// fluxAlone runs throughputScript in `flux start --test-size=size` (the chart's overlay shape,
// flat, with Fluxion and the chart's validators) in one pod of the flux image on node, and
// returns what it printed.
func fluxAlone(b *testing.B, ns, node string, size, jobs int) string {
	b.Helper()
	out, err := runPodToEnd(b, ns, alonePod(b, node, size, throughputScript("flux", jobs)))
	if err != nil {
		b.Fatalf("flux start --test-size=%d: %v\n%s", size, err, out)
	}
	return out
}

// alonePod is a pod of the flux image on node that runs script as the initial program of
// `flux start --test-size=size` with Fluxion, the chart's validators and the broker options
// given (none: the chart's default overlay shape, flat; validators=NAME: other validators,
// one of aloneValidators). The script sees START, the nanoseconds just before flux start. The
// brokers get 5 minutes to end once the first has (flux start's 20 s is too short for 64
// brokers on two busy cores).
func alonePod(b *testing.B, node string, size int, script string, options ...string) *corev1.Pod {
	b.Helper()
	plugins := aloneValidators["chart"]
	options = slices.DeleteFunc(slices.Clone(options), func(o string) bool {
		name, ok := strings.CutPrefix(o, "validators=")
		if ok {
			if plugins = aloneValidators[name]; plugins == "" {
				b.Fatalf("validators=%s: want chart, flux or jobspec", name)
			}
		}
		return ok
	})
	if len(options) == 0 {
		options = []string{"-Stbon.topo=kary:0"}
	}
	validator, err := os.ReadFile(filepath.Join(chartDir, "files", "validate-brokers-up.py"))
	if err != nil {
		b.Fatal(err)
	}
	feasible, err := os.ReadFile(filepath.Join(chartDir, "files", "validate-feasible.py"))
	if err != nil {
		b.Fatal(err)
	}
	return oneShotPod("flux-alone", node, corev1.Container{
		Name: "flux", Image: fluxImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", aloneConfig + "export START=$(date +%s%N); exec flux start -o,--config-path=/tmp/alone.toml --test-exit-timeout=5m --test-size=" + strconv.Itoa(size) +
			" " + strings.Join(options, " ") + ` sh -c "$0"`, script},
		// Fluxion from the image's view, as the chart's entrypoint finds it.
		Env: []corev1.EnvVar{{Name: "FLUX_MODPROBE_PATH_APPEND", Value: "/opt/view/etc/flux/modprobe"},
			{Name: "FLUX_MODULE_PATH_PREPEND", Value: "/opt/view/lib/flux/modules"},
			{Name: "FLUX_EXEC_PATH_PREPEND", Value: "/opt/view/libexec/flux/cmd"},
			{Name: "VALIDATOR", Value: string(validator)}, {Name: "FEASIBLE", Value: string(feasible)},
			{Name: "PLUGINS", Value: plugins}},
	})
}

// oneShotPod is a pod of one container c on node that runs once.
func oneShotPod(name, node string, c corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c},
			TerminationGracePeriodSeconds: ptr.To[int64](1)},
	}
}

// runPodToEnd creates pod (restartPolicy Never, one container) in ns, waits until it ends and
// returns its container's log, and an error unless it succeeded.
func runPodToEnd(b *testing.B, ns string, pod *corev1.Pod) (string, error) {
	b.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var phase corev1.PodPhase
	eventually(b, 20*time.Minute, "pod "+pod.Name+" ends", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, string(phase)
	})
	out, err := podLogs(ns, pod.Name, pod.Spec.Containers[0].Name, 0)
	if err == nil && phase != corev1.PodSucceeded {
		err = fmt.Errorf("pod %s %s", pod.Name, phase)
	}
	return out, err
}
