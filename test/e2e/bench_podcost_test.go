//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// podCostStep is one pod shape of BenchmarkPodCost: the bare floor pod with the broker pod's
// parts added one at a time, in the order below, each keeping those before it.
type podCostStep struct {
	name string
	add  func(spec *corev1.PodSpec)
}

// The parts of a broker pod, as the chart renders it with its default values (docs/
// architecture.md, "A broker pod"), without Flux: every container only waits.
var podCostSteps = []podCostStep{
	// a bare pod: one container, the default service account token
	{"floor", func(spec *corev1.PodSpec) {}},
	// + a second container (the keys sidecar's place)
	{"container", func(spec *corev1.PodSpec) {
		spec.Containers = append(spec.Containers, corev1.Container{
			Name: "keys", Image: testsImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"/bin/sh", "-c", waitForTERM},
		})
	}},
	// + the chart's two ConfigMap volumes (scripts, broker-config), mounted as the chart mounts
	// them, without subPath
	{"configmaps", func(spec *corev1.PodSpec) {
		addConfigMaps(spec)
		spec.Containers[1].VolumeMounts = append(spec.Containers[1].VolumeMounts,
			corev1.VolumeMount{Name: "broker-config", MountPath: "/minicluster/config", ReadOnly: true})
	}},
	// + the two files of the scripts volume the chart mounts by subPath
	{"subpaths", addSubPaths},
	// + the chart's emptyDirs: keys and curve-installed in memory, run on disk
	{"emptydirs", func(spec *corev1.PodSpec) {
		addEmptyDirs(spec)
		spec.Containers[1].VolumeMounts = append(spec.Containers[1].VolumeMounts,
			corev1.VolumeMount{Name: "keys", MountPath: "/minicluster/keys"})
	}},
	// + the view's image volume (flux.view.mode=image)
	{"image", addImageVolume},
	// + the startup (every 1 s) and readiness (every 5 s) probes, on the second container,
	// which answers them
	{"probes", func(spec *corev1.PodSpec) {
		// The keys sidecar serves the pod's probes; here busybox's httpd does.
		spec.Containers[1].Command = []string{"/bin/sh", "-c", readyzPage + "exec httpd -f -p 8051 -h /tmp/www"}
		addProbes(&spec.Containers[1])
	}},
	// The same pod with one container (the last column but the chart's): the volumes, the
	// image volume and the probes, answered by the broker's container itself. What a broker
	// pod would cost with the keys container's work done in the broker's.
	{"single", func(spec *corev1.PodSpec) {
		addConfigMaps(spec)
		addSubPaths(spec)
		addEmptyDirs(spec)
		addImageVolume(spec)
		spec.Containers[0].Command = []string{"/bin/sh", "-c", readyzPage + "httpd -p 8051 -h /tmp/www && " + waitForTERM}
		addProbes(&spec.Containers[0])
	}},
}

// The shapes' containers: waitForTERM only waits, and exits at once on SIGTERM; readyzPage
// writes the page busybox's httpd serves for the probes (the command's first part).
const (
	waitForTERM = "trap 'exit 0' TERM; sleep 3600 & wait"
	readyzPage  = "mkdir -p /tmp/www && echo ok >/tmp/www/readyz && "
)

// singleStep is the index of the one-container shape: it starts again from the bare pod.
var singleStep = slices.IndexFunc(podCostSteps, func(s podCostStep) bool { return s.name == "single" })

// addConfigMaps adds the chart's ConfigMap volumes, mounted in the broker's container as the
// chart mounts them (but for its subPath mounts: addSubPaths).
func addConfigMaps(spec *corev1.PodSpec) {
	cm := func(name string) corev1.VolumeSource {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
	}
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: "scripts", VolumeSource: cm("podcost-scripts")},
		corev1.Volume{Name: "broker-config", VolumeSource: cm("podcost-config")})
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "scripts", MountPath: "/minicluster/scripts", ReadOnly: true},
		corev1.VolumeMount{Name: "broker-config", MountPath: "/minicluster/config", ReadOnly: true})
}

// addSubPaths adds the broker container's two subPath mounts of the scripts volume.
func addSubPaths(spec *corev1.PodSpec) {
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "scripts", MountPath: "/minicluster/modprobe/rc1.d/minicluster.py", SubPath: "modprobe-rc1.py", ReadOnly: true},
		corev1.VolumeMount{Name: "scripts", MountPath: "/usr/local/sbin/flux", SubPath: "flux", ReadOnly: true})
}

// addEmptyDirs adds the chart's emptyDirs, mounted in the broker's container.
func addEmptyDirs(spec *corev1.PodSpec) {
	memory := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: "keys", VolumeSource: memory},
		corev1.Volume{Name: "curve-installed", VolumeSource: memory},
		corev1.Volume{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "keys", MountPath: "/minicluster/keys"},
		corev1.VolumeMount{Name: "curve-installed", MountPath: "/etc/curve"},
		corev1.VolumeMount{Name: "run", MountPath: "/minicluster/run"})
}

// addImageVolume adds the view's image volume (flux.view.mode=image).
func addImageVolume(spec *corev1.PodSpec) {
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "flux-view", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: viewImage, PullPolicy: corev1.PullIfNotPresent}}})
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "flux-view", MountPath: "/mnt/flux", ReadOnly: true},
		corev1.VolumeMount{Name: "flux-view", MountPath: "/opt/software", SubPath: "opt/software", ReadOnly: true})
}

// addProbes adds the pod's startup (every 1 s) and readiness (every 5 s) probes to c.
func addProbes(c *corev1.Container) {
	get := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8051)}}
	c.StartupProbe = &corev1.Probe{ProbeHandler: get, InitialDelaySeconds: 1, PeriodSeconds: 1, FailureThreshold: 600}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: get, PeriodSeconds: 5}
}

// podCostIdle is how long each shape is left running once all its pods are up, to measure
// what its pods cost Kubernetes while nothing changes (a MiniCluster's pods wait for Flux).
const podCostIdle = 20 * time.Second

// BenchmarkPodCost: what a broker pod costs Kubernetes, part by part, at 16 and 64 pods
// (BENCH_POD_COST_SIZES). For each shape of podCostSteps, an indexed Job of size pods and its
// headless Service are created; measured are the time until every pod is Running and Ready
// and listed by the Service, the CPU seconds Kubernetes' processes (kubelets, containerd, the
// shims, runc, the control plane) used in that time, and their CPU seconds a second while the
// pods then only wait (podCostIdle). Last, the chart itself with real Flux: helm install ->
// Flux counts every broker up, and the same idle measure after.
//
// CPU is counted where the cluster's nodes are processes of this machine (the local cluster).
func BenchmarkPodCost(b *testing.B) {
	// BENCH_POD_COST_COLUMNS: some of the columns (step names and chart), e.g. floor,chart.
	all := append(podCostNames(), "chart")
	columns := strings.Split(envOr("BENCH_POD_COST_COLUMNS", strings.Join(all, ",")), ",")
	for _, c := range columns {
		if !slices.Contains(all, c) {
			b.Fatalf("BENCH_POD_COST_COLUMNS=%q: want some of %s", os.Getenv("BENCH_POD_COST_COLUMNS"), strings.Join(all, ","))
		}
	}
	measured := func(name string) bool { return slices.Contains(columns, name) }
	for _, size := range benchSizes(b, "BENCH_POD_COST_SIZES", "16,64") {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			sums := map[string]podCost{}
			for b.Loop() {
				for i := range podCostSteps {
					if measured(podCostSteps[i].name) {
						sums[podCostSteps[i].name] = sums[podCostSteps[i].name].plus(podCostShape(b, size, i))
					}
				}
				if measured("chart") {
					sums["chart"] = sums["chart"].plus(podCostChart(b, size))
				}
			}
			n := float64(b.N)
			var line []string
			for _, name := range all {
				if !measured(name) {
					continue
				}
				c := sums[name]
				metric(b, c.up.Seconds()/n, "s/"+name+"-up")
				metric(b, c.cpu/n, "s/"+name+"-cpu")
				metric(b, c.idle/n, "s/"+name+"-idle")
				metric(b, requestTotal(c.requests)/n, "s/"+name+"-requests") // the report's unit scheme: s/<side>-<row>
				for _, k := range kubeComponents {
					metric(b, c.parts[k]/n, "s/"+name+"-cpu-"+k)
				}
				line = append(line, fmt.Sprintf("%s %.1f s up, %.1f CPU-s, idle %.3f CPU-s/s", name, c.up.Seconds()/n, c.cpu/n, c.idle/n))
			}
			if floor := sums["floor"].cpu; floor > 0 {
				metric(b, sums["chart"].cpu/floor, "x/chart-cpu")
			}
			fmt.Printf("size %d, Kubernetes: %s\n", size, strings.Join(line, "; "))
		})
	}
}

func podCostNames() []string {
	var names []string
	for _, s := range podCostSteps {
		names = append(names, s.name)
	}
	return names
}

// podCost: until all up, and Kubernetes' CPU seconds then and a second while idle.
type podCost struct {
	up        time.Duration
	cpu, idle float64
	parts     map[string]float64 // cpu by component (kubeComponent)
	requests  map[string]float64 // requests to the API server by apiRequests' key
}

func (c podCost) plus(o podCost) podCost {
	return podCost{c.up + o.up, c.cpu + o.cpu, c.idle + o.idle, addSums(addSums(nil, c.parts), o.parts),
		addSums(addSums(nil, c.requests), o.requests)}
}

// kubeComponents are the components of Kubernetes' CPU, in the report's order.
var kubeComponents = []string{kubeKubelet, kubeRuntime, kubeAPI, kubeController, kubeNetwork}

// podCostShape creates the pods of podCostSteps[0..last] (of the bare pod and the one-container
// shape, for that) and measures them.
func podCostShape(b *testing.B, size, last int) podCost {
	ctx := context.Background()
	ns := newNamespace(b, "podcost-"+podCostSteps[last].name)
	for _, name := range []string{"podcost-scripts", "podcost-config"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"modprobe-rc1.py": "#\n", "flux": "#!/bin/sh\n", "broker.toml": "#\n"}}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	spec := corev1.PodSpec{
		Subdomain:                     "podcost",
		TerminationGracePeriodSeconds: ptr.To(int64(1)),
		Containers: []corev1.Container{{
			Name: "flux", Image: testsImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"/bin/sh", "-c", waitForTERM},
		}},
	}
	steps := podCostSteps[:last+1]
	if last == singleStep {
		steps = []podCostStep{podCostSteps[0], podCostSteps[singleStep]}
	}
	for _, s := range steps {
		s.add(&spec)
	}
	createFloorService(b, ns, "podcost")
	c := measurePodCost(b, func() {
		if _, err := kube.BatchV1().Jobs(ns).Create(ctx, indexedJob("podcost", size, spec), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		// Listed by the Service is not Ready: the Service publishes not-ready addresses.
		waitPodsReady(b, ns, "job-name=podcost", size, 10*time.Minute)
		waitListed(b, ns, "podcost", size, 10*time.Minute)
	})
	deleteFloor(b, ns, "podcost", 5*time.Minute)
	deleteNamespace(b, ns)
	return c
}

// podCostChart installs the chart (the view mounted as an image, as BenchmarkScale does) and
// measures install -> Flux counts every broker up, and the idle after.
func podCostChart(b *testing.B, size int) podCost {
	ns := newNamespace(b, "podcost-chart")
	r := newRelease(b, ns, "flux-sample", helm4)
	c := measurePodCost(b, func() {
		r.install("--set", fmt.Sprintf("size=%d,maxSize=%d,flux.view.mode=image", size, size))
		waitReadyThenFluxUp(b, ns, r.name, size, size, 10*time.Minute)
	})
	r.uninstall()
	deleteNamespace(b, ns)
	return c
}

// measurePodCost measures up (until every pod is up) and Kubernetes' CPU in that time, then
// its CPU a second while the pods only wait.
func measurePodCost(b *testing.B, up func()) podCost {
	requests := apiRequests(b)
	cpu := startCPU(b)
	start := time.Now()
	up()
	c := podCost{up: time.Since(start)}
	c.cpu = cpu.stop(b)[cpuKubernetes]
	c.parts = cpu.kubernetes()
	c.requests = requestsSince(requests, apiRequests(b))
	b.Logf("requests to the API server until up: %s", topRequests(c.requests, 12))
	c.idle = podCostIdleCPU(b)
	return c
}

// podCostIdleCPU is Kubernetes' CPU seconds a second over podCostIdle.
func podCostIdleCPU(b *testing.B) float64 {
	cpu := startCPU(b)
	time.Sleep(podCostIdle)
	return cpu.stop(b)[cpuKubernetes] / podCostIdle.Seconds()
}

// requestsSince is after's counts less before's, those that grew.
func requestsSince(before, after map[string]float64) map[string]float64 {
	grew := map[string]float64{}
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			grew[k] = d
		}
	}
	return grew
}

// topRequests: the total, then the most frequent requests, most first.
func topRequests(counts map[string]float64, most int) string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b)) })
	line := []string{fmt.Sprintf("%.0f in all", requestTotal(counts))}
	for _, k := range keys[:min(most, len(keys))] {
		line = append(line, fmt.Sprintf("%s %.0f", k, counts[k]))
	}
	return strings.Join(line, ", ")
}

// requestTotal is the number of requests in counts.
func requestTotal(counts map[string]float64) float64 {
	total := 0.0
	for _, n := range counts {
		total += n
	}
	return total
}
