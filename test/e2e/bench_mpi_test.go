//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The melt input of values/lammps.yaml, and the OpenMPI settings both sides run with: ranks
// yield the core while they wait, as mpirun makes them when it sees more ranks than cores (it
// does on the bare side here; under Flux each rank sees a node of its own and would poll).
const (
	meltInput = "lmp -in /opt/lammps/examples/melt/in.melt -log none -nocite"
	bareMPI   = "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1; "
)

// mpiFigures prints, from a program's output in /tmp/NAME.out, LAMMPS's loop time and
// mpi-hello's ping-pong as "NAME loop SECONDS", "NAME rtt MICROSECONDS", "NAME bw MB/S".
const mpiFigures = `sed -n -e 's/^Loop time of \([0-9.e+-]*\) on.*/%[1]s loop \1/p' ` +
	`-e 's/^pingpong: .* round trip \([0-9.]*\) us; .* messages \([0-9.]*\) MB\/s$/%[1]s rtt \1\n%[1]s bw \2/p' /tmp/%[1]s.out; `

// timedMPI adds to script the run of command with its output in /tmp/NAME.out (printed, and the
// script ended, when it fails), its wall time as "NAME wall NANOSECONDS", then mpiFigures.
func timedMPI(script *strings.Builder, command, name string) {
	fmt.Fprintf(script, `s=$(date +%%s%%N); %s > /tmp/%s.out 2>&1 || { cat /tmp/%[2]s.out; exit 1; }; e=$(date +%%s%%N); echo "%[2]s wall $((e - s))"; `,
		command, name)
	fmt.Fprintf(script, mpiFigures, name)
}

// mpiRun is an MPI program BenchmarkMPI times: its ranks, the program, and the figures its
// output gives (wall always; LAMMPS its loop, mpi-hello its ping-pong).
type mpiRun struct {
	name    string
	ranks   int
	program string
	figures []string
}

// mpiRuns are the MPI programs BenchmarkMPI times on both sides.
var mpiRuns = []mpiRun{
	{"lammps-4", 4, meltInput, []string{"wall", "loop"}},
	{"lammps-8", 8, meltInput, []string{"wall", "loop"}},
	{"hello-8", 8, "mpi-hello-openmpi", []string{"wall", "rtt", "bw"}},
}

// tcpRun is mpi-hello in one container with TCP between its ranks (loopback), on the bare side
// alone: what the pod network is measured against besides shared memory (its ping-pong is
// reported, not its wall time).
var tcpRun = mpiRun{"hello-8-tcp", 8, "mpirun --oversubscribe --mca btl tcp,self -np 8 mpi-hello-openmpi", []string{"wall", "rtt", "bw"}}

// mpiKeys are the figures ("NAME-wall", ...) the runs' output must give, each once.
func mpiKeys(runs ...mpiRun) []string {
	var keys []string
	for _, run := range runs {
		for _, f := range run.figures {
			keys = append(keys, run.name+"-"+f)
		}
	}
	return keys
}

// BenchmarkMPI: the same OpenMPI programs (LAMMPS's melt at 4 and 8 ranks, mpi-hello's ring,
// 1 MiB ring and allreduce at 8) run by `flux run -N 4 -o pmi=pmix` across a MiniCluster of 4
// (the project's mpi image, the view mounted: ranks in four pods talk over the pod network), next
// to `mpirun` of the same binaries in one container of the same image (ranks on one host talk
// through shared memory). Wall times are taken inside each container; LAMMPS also reports its
// own loop time. Every rank shares the machine's cores on both sides.
func BenchmarkMPI(b *testing.B) {
	chart, bare := map[string]float64{}, map[string]float64{}
	for b.Loop() {
		ns := newNamespace(b, "bench-mpi-bare")
		r := newRelease(b, ns, "flux-sample", helm4)
		r.install("--set", "size=4,maxSize=4,sharedMemory=1Gi,flux.view.mode=image,image="+mpiImage)
		pods := waitFluxUp(b, ns, r.name, 4, 4, wiringTimeout)
		var script, bareScript strings.Builder
		for _, run := range mpiRuns {
			timedMPI(&script, fmt.Sprintf("$flux run -N 4 -n %d -o pmi=pmix %s", run.ranks, run.program), run.name)
			timedMPI(&bareScript, fmt.Sprintf("mpirun --oversubscribe -np %d %s", run.ranks, run.program), run.name)
		}
		timedMPI(&bareScript, tcpRun.program, tcpRun.name)
		out, stderr, err := execInWithin(20*time.Minute, ns, pods[0].Name, "flux", "sh", "-c",
			// flux-core's own flux, as a batch script in the pod would run it.
			". /minicluster/scripts/env.sh && flux=$(real_flux) && "+bareMPI+script.String())
		if err != nil {
			b.Fatalf("in the lead: %v\n%s%s", err, out, stderr)
		}
		b.Logf("MiniCluster of 4:\n%s", out)
		addMPI(b, chart, out, mpiKeys(mpiRuns...))
		node := pods[0].Spec.NodeName
		r.uninstall()
		out = runBare(b, ns, node, bareMPI+bareScript.String())
		b.Logf("mpirun in one container:\n%s", out)
		addMPI(b, bare, out, append(mpiKeys(mpiRuns...), mpiKeys(tcpRun)...))
		deleteNamespace(b, ns)
	}
	n := float64(b.N)
	units := map[string]string{"wall": "s", "loop": "s", "rtt": "us", "bw": "MBps"}
	for _, run := range mpiRuns {
		for _, what := range run.figures {
			key := run.name + "-" + what
			metric(b, chart[key]/n, units[what]+"/"+key)
			metric(b, bare[key]/n, units[what]+"/"+key+"-bare")
			fmt.Printf("%s %s: %.2f %s, bare %.2f (%+.1f%%)\n", run.name, what, chart[key]/n, units[what], bare[key]/n, 100*(chart[key]/bare[key]-1))
		}
	}
	for _, what := range []string{"rtt", "bw"} {
		key := tcpRun.name + "-" + what
		metric(b, bare[key]/n, units[what]+"/"+key+"-bare")
		fmt.Printf("hello-8 %s, one container over TCP: %.2f %s\n", what, bare[key]/n, units[what])
	}
}

// addMPI adds the "NAME wall NANOSECONDS" lines of out, and those of mpiFigures, to sums: each
// of want exactly once, and nothing else, or the benchmark fails (a figure not printed would
// otherwise count as 0).
func addMPI(b *testing.B, sums map[string]float64, out string, want []string) {
	got := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^(\S+) (wall|loop|rtt|bw) (\S+)$`).FindAllStringSubmatch(out, -1) {
		key := m[1] + "-" + m[2]
		if !slices.Contains(want, key) {
			b.Fatalf("the MPI script printed %q, not one of %v:\n%s", m[0], want, out)
		}
		if _, twice := got[key]; twice {
			b.Fatalf("the MPI script printed %s twice:\n%s", key, out)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil || v <= 0 {
			b.Fatalf("%q: not a positive number", m[0])
		}
		if m[2] == "wall" {
			v /= 1e9
		}
		got[key] = v
	}
	for _, key := range want {
		if _, ok := got[key]; !ok {
			b.Fatalf("the MPI script printed no %s (want each of %v):\n%s", key, want, out)
		}
		sums[key] += got[key]
	}
}

// runBare runs script in one container of the mpi image on node, and returns its output.
func runBare(b *testing.B, ns, node, script string) string {
	b.Helper()
	pod := oneShotPod("mpi-bare", node, corev1.Container{
		Name: "mpi", Image: mpiImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:      []string{"sh", "-c", script},
		VolumeMounts: []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}},
	})
	// The same /dev/shm as the chart's sharedMemory=1Gi.
	pod.Spec.Volumes = []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Gi"))}}}}
	out, err := runPodToEnd(b, ns, pod)
	if err != nil {
		b.Fatalf("mpirun in one container: %v\n%s", err, out)
	}
	return out
}
