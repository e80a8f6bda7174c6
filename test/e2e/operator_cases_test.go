//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minicluster/minicluster/internal/operatorsrc"
)

// operatorCase is one of the Flux Operator's test cases (examples/tests/NAME, or another
// example) as this test runs it on the chart.
type operatorCase struct {
	dir string // under the operator's examples/
	// images maps the case's images to the project's (ubuntu:noble and the operator's
	// views always map to the app and flux-view images).
	images map[string]string
	// refused: the converter refuses the MiniCluster; its error names this field.
	refused string
	// leftOut: why the case cannot run here; it is still converted, installed and its pods
	// created, then uninstalled.
	leftOut string
	// want: a regular expression of my own the lead's log must match, for cases without
	// test.out.correct.
	want string
	// interactive: no command; the check is that all brokers come up.
	interactive bool
	// setup prepares what the case's pre-run.sh and volumes.yaml do with minikube.
	setup func(t *testing.T, ns string)
}

// operatorCases are every case of examples/tests (a case missing from this table fails the
// test) and the four other examples the chart must run.
var operatorCases = map[string]operatorCase{
	"tests/hello-world":        {},
	"tests/post":               {},
	"tests/debug":              {want: "hello world"},
	"tests/timed":              {want: "FLUXTIME fluxsubmit wall time"},
	"tests/flux-resource-list": {want: "STATE NNODES"},
	"tests/emptydir":           {want: "/dev/shm"},
	// The batch (flux batch -n1, as the operator submits it) runs where Fluxion places it,
	// often on rank 1: its job-N.out files are then in that worker's emptyDir and post's cat
	// on the lead finds none, as with the operator. Either way post ran after the batch.
	"tests/batch":            {want: `(?m)^(hello world 1|cat: /tmp/fluxout/job-0.out: No such file or directory)$`},
	"tests/existing-volumes": {setup: pancakesClaim},
	"tests/volumes":          {setup: pancakesHostPath("/data")},
	"tests/minimal-service":  {refused: "spec.flux.minimalService"},
	"tests/custom-config":    {refused: "spec.flux.curveCert"},
	"tests/flux-sidecar":     {refused: "spec.containers[1]"},
	"tests/nginx-service":    {refused: "spec.services"},
	"tests/osu-benchmarks": {leftOut: "needs the OSU micro-benchmarks image (metric-osu-benchmark); the project's mpi image has none",
		images: map[string]string{"ghcr.io/converged-computing/flux-view-ubuntu:tag-focal": "@view"}},
	"tests/nginx-sidecar-service": {leftOut: "needs an nginx image; the project builds none",
		images: map[string]string{"nginx": "nginx-not-built-here"}},
	"tests/lammps": {leftOut: "its input deck (examples/reaxff/HNS) is not in the project's LAMMPS image (mpi: the melt example only)",
		images: map[string]string{"ghcr.io/converged-computing/metric-lammps:latest": "@mpi"}},
	"tests/disable-view": {leftOut: "needs LAMMPS with its reaxff/HNS input in an image with Flux; the project's flux image has no LAMMPS",
		images: map[string]string{"ghcr.io/rse-ops/lammps:flux-sched-focal": "@flux"}},
	"tests/pokemon":     {leftOut: "needs the pokemon application image; the project builds none", images: map[string]string{"ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy": "@view"}},
	"tests/singularity": {leftOut: "needs singularity and pulls docker://ubuntu at run time"},
	"tests/snakemake":   {leftOut: "needs the snakemake atacseq image and its workflow data"},
	"mpi/mpich": {leftOut: "runs ./hello_cxx from /opt/ompi of the rse-ops mpich image, which the project's mpi image does not have",
		images: map[string]string{"ghcr.io/rse-ops/mpich:tag-mamba": "@mpi"}},
	"scaling/basic":              {interactive: true, images: map[string]string{"rockylinux:9": "@app"}},
	"state/basic-job-completion": {refused: "spec.archive.path"},
	"services/single":            {leftOut: "not in this version of the operator's source"},
}

// TestOperatorCases runs the Flux Operator's own test cases on the chart: each MiniCluster
// converted by minicluster-convert (the project's images in place of ubuntu:noble and the
// operator's views), installed with real Flux, and checked as the operator's CI checks it
// (script/check-output.sh): the lead's log equals test.out.correct (trailing CRs stripped)
// and every container that ended exited 0. The chart's workers are stopped by the Job once the
// lead succeeds (successPolicy): pods being deleted are not counted.
func TestOperatorCases(t *testing.T) {
	tarball, err := operatorsrc.Tarball(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	src, err := operatorsrc.Unpack(tarball, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(src, "examples", "tests", "*", "minicluster.yaml"))
	for _, f := range dirs {
		name := "tests/" + filepath.Base(filepath.Dir(f))
		if _, ok := operatorCases[name]; !ok {
			t.Errorf("the operator's case %s is not in operatorCases: add it (run, refused or left out with its reason)", name)
		}
	}
	// At most three MiniClusters at once: the cluster is small and shared.
	slots := make(chan struct{}, 3)
	var report sync.Map
	t.Cleanup(func() {
		var lines []string
		report.Range(func(k, v any) bool { lines = append(lines, fmt.Sprintf("  %-30s %s", k, v)); return true })
		t.Logf("operator cases:\n%s", strings.Join(sortedStrings(lines), "\n"))
	})
	for name, tc := range operatorCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(src, "examples", name, "minicluster.yaml")
			if _, err := os.Stat(file); err != nil {
				if tc.leftOut == "" {
					t.Fatalf("%s: %v", name, err)
				}
				report.Store(name, "left out: "+tc.leftOut)
				return
			}
			values, convErr := convertCase(t, file, tc)
			if tc.refused != "" {
				if convErr == nil {
					t.Fatalf("minicluster-convert converted %s, which it should refuse for %s", name, tc.refused)
				}
				if !strings.Contains(convErr.Error(), tc.refused) {
					t.Fatalf("minicluster-convert refused %s without naming %s: %v", name, tc.refused, convErr)
				}
				report.Store(name, "refused: "+tc.refused)
				return
			}
			if convErr != nil {
				t.Fatal(convErr)
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			ns := newNamespace(t, filepath.Base(name))
			if tc.setup != nil {
				tc.setup(t, ns)
			}
			r := newRelease(t, ns, releaseName(t, file), helm3)
			set := "keygen.image.pullPolicy=IfNotPresent"
			if imagePrefix != "localhost/minicluster/" {
				set += ",imageRegistry=" + strings.TrimSuffix(imagePrefix, "/")
			}
			if _, err := r.run("install", r.name, chartDir, "-f", values, "--set", set); err != nil {
				t.Fatalf("helm install %s: %v", name, err)
			}
			switch {
			case tc.leftOut != "":
				eventually(t, 2*time.Minute, "the Job's pods created", func() (bool, string) {
					pods, err := kube.CoreV1().Pods(ns).List(context.Background(), brokerSelector(r.name))
					if err != nil {
						return false, err.Error()
					}
					return len(pods.Items) > 0, fmt.Sprintf("%d pods", len(pods.Items))
				})
				report.Store(name, "left out: "+tc.leftOut+" (converted, installed, pods created)")
			case tc.interactive:
				// The chart's maxSize: the converted one, or the larger of size and 16.
				size, maxSize := caseSize(t, values, "size"), caseSize(t, values, "maxSize")
				maxSize = max(maxSize, size, 16)
				pods := waitFluxUp(t, ns, r.name, size, maxSize, 5*time.Minute)
				checkFluxRun(t, ns, r.name, pods)
				report.Store(name, fmt.Sprintf("passed: %d brokers up, flux run on all", size))
			default:
				finished := waitJobFinished(t, r, 6*time.Minute)
				checkOperatorOutput(t, r, filepath.Join(filepath.Dir(file), "test.out.correct"), tc.want)
				if finished.Type != batchv1.JobComplete {
					t.Errorf("Job %s failed: %s %s", r.name, finished.Reason, finished.Message)
				}
				if !t.Failed() {
					report.Store(name, "passed")
				}
			}
			r.uninstall()
		})
	}
}

// convertCase runs minicluster-convert on the case and returns the values file it wrote.
func convertCase(t *testing.T, file string, tc operatorCase) (string, error) {
	t.Helper()
	args := []string{file, "--image", "ubuntu:noble=" + appImage, "--view-image", viewImage}
	for from, to := range tc.images {
		switch to {
		case "@mpi":
			to = mpiImage
		case "@flux":
			to = fluxImage
		case "@app":
			to = appImage
		case "@view":
			to = viewImage
		}
		args = append(args, "--image", from+"="+to)
	}
	cmd := exec.Command(bin("minicluster-convert"), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if len(out) > 0 {
			t.Errorf("minicluster-convert failed but wrote output:\n%s", out)
		}
		return "", fmt.Errorf("%v: %s", err, stderr.String())
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("minicluster-convert %s:\n%s", strings.Join(args, " "), indentAll(string(out)))
	return values, nil
}

// releaseName is the MiniCluster's metadata.name.
func releaseName(t *testing.T, file string) string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && k == "name" {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no metadata.name", file)
	return ""
}

// caseSize is the top-level integer key of the values file (0 when absent).
func caseSize(t *testing.T, values, key string) int {
	t.Helper()
	raw, err := os.ReadFile(values)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		var n int
		if _, err := fmt.Sscanf(l, key+": %d", &n); err == nil {
			return n
		}
	}
	return 0
}

// checkOperatorOutput is script/check-output.sh: the lead's log against test.out.correct
// (when the case has one), then the exit codes of every container that ended.
func checkOperatorOutput(t *testing.T, r *release, expected, want string) {
	t.Helper()
	log := leadLog(t, r)
	if raw, err := os.ReadFile(expected); err == nil {
		strip := func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
		if strip(string(raw)) != strip(log) {
			t.Errorf("the lead's log differs from %s:\nwant:\n%s\ngot:\n%s", filepath.Base(expected), indentAll(string(raw)), indentAll(log))
		}
	} else if want == "" {
		t.Fatalf("%s: %v (give the case a want line)", expected, err)
	}
	if want != "" && !regexp.MustCompile(want).MatchString(log) {
		t.Errorf("the lead's log does not match %q:\n%s", want, indentAll(log))
	}
	pods, err := kube.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue // a worker the Job stops once the lead has succeeded
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Terminated != nil && s.State.Terminated.ExitCode != 0 {
				t.Errorf("container %s of pod %s exited %d (%s)", s.Name, p.Name, s.State.Terminated.ExitCode, s.State.Terminated.Reason)
			}
		}
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// pancakesHostPath puts examples/tests/data/pancakes.txt at dir on every node, as the case's
// pre-run.sh does with minikube, by a pod per node with that hostPath.
func pancakesHostPath(dir string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		t.Helper()
		nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range nodes.Items {
			runOnNode(t, ns, fmt.Sprintf("pancakes-%d", i), n.Name, dir, "echo pancakes > /host/pancakes.txt")
		}
		t.Cleanup(func() {
			for i, n := range nodes.Items {
				runOnNode(t, ns, fmt.Sprintf("pancakes-clean-%d", i), n.Name, dir, "rm -f /host/pancakes.txt")
			}
		})
	}
}

// pancakesClaim is the existing-volumes case's pv.yaml and pvc.yaml: a claim "data" bound to
// a hostPath volume that holds pancakes.txt.
func pancakesClaim(t *testing.T, ns string) {
	t.Helper()
	dir := "/tmp/" + ns
	pancakesHostPath(dir)(t, ns)
	ctx := context.Background()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: "data"},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().PersistentVolumes().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To(""),
			VolumeName:       ns,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runOnNode runs a shell command in the busybox image on a node, with dir of the node at /host.
func runOnNode(t *testing.T, ns, name, node, dir, script string) {
	t.Helper()
	ctx := context.Background()
	create := corev1.HostPathDirectoryOrCreate
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "run", Image: testsImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"/bin/sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host"}},
			}},
			Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &create}}}},
		},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Errorf("pod %s on %s: %v", name, node, err)
		return
	}
	eventually(t, 2*time.Minute, "pod "+name+" succeeded", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase)
	})
	_ = kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
}
