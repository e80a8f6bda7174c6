//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkHPC: real HPC work on the local cluster, each figure next to a floor of the same run.
//   - LAMMPS (values/lammps.yaml, 4 brokers): helm install to the Job Complete, next to LAMMPS's
//     own loop time and to the completion floor: an indexed Job of 4 pods that exit at once,
//     from create to Complete.
//   - MPI launch in a running MiniCluster of 4 (the MPI image): `flux run -N 4 -n 8` of
//     mpi-hello with MPICH (Flux's PMI) and with OpenMPI (flux-pmix), next to `flux run -N 4
//     -n 8 true`, each timed from the lead (kubectl exec adds the same to all three).
//   - Start-up with Fluxion and with sched-simple, alternating, at size 6: interactive install
//     to Flux counting 6 online (the lead's quorum-full line), and the lead's rc1 (where the
//     scheduler loads).
//
// Every MiniCluster mounts the view image (flux.view.mode=image), as the timings of
// BenchmarkMiniCluster in the README do: a copy of the view adds what the README says of it.
func BenchmarkHPC(b *testing.B) {
	const view = "flux.view.mode=image"
	var floor, lammps, loop, hello, mpich, openmpi, fluxion, simple, rc1Fluxion, rc1Simple time.Duration
	// Untimed: the first install pulls the MPI image.
	warmUp(b, helm4, "--set", "size=1,"+view+",image="+mpiImage, "--set-string", "command=true")
	for b.Loop() {
		ns := newNamespace(b, "floor-complete")
		start := time.Now()
		createCompletingFloor(b, ns, "floor", 4)
		eventuallyFast(b, 3*time.Minute, "floor Job complete", func() (bool, string) {
			job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), "floor", metav1.GetOptions{})
			return err == nil && job.Status.Succeeded == 4, fmt.Sprint(err)
		})
		runFloor := time.Since(start)
		floor += runFloor
		deleteNamespace(b, ns)

		ns = newNamespace(b, "bench-lammps")
		r := newRelease(b, ns, "flux-sample", helm4)
		start = time.Now()
		r.install("-f", filepath.Join(repoRoot, "values", "lammps.yaml"), "--set", view+",image="+mpiImage)
		eventuallyFast(b, 6*time.Minute, "LAMMPS Job complete", func() (bool, string) {
			job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), r.name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c, done := jobFinished(job)
			if done && c.Type != batchv1.JobComplete {
				b.Fatalf("the LAMMPS Job failed: %s %s", c.Reason, c.Message)
			}
			return done, "conditions " + jobConditions(job.Status.Conditions)
		})
		runLAMMPS := time.Since(start)
		lammps += runLAMMPS
		m := regexp.MustCompile(`Loop time of (\S+) on 4 procs`).FindStringSubmatch(leadLog(b, r))
		if m == nil {
			b.Fatalf("no LAMMPS loop time in the lead's log")
		}
		secs, err := strconv.ParseFloat(m[1], 64)
		if err != nil || secs <= 0 {
			b.Fatalf("LAMMPS's loop time %q is not a positive number of seconds", m[1])
		}
		loop += time.Duration(secs * float64(time.Second))
		fmt.Printf("%s: LAMMPS: install -> Job complete %.2f s (floor %.2f, +%.2f), LAMMPS loop %.2f s\n",
			b.Name(), runLAMMPS.Seconds(), runFloor.Seconds(), (runLAMMPS - runFloor).Seconds(), secs)
		r.uninstall()
		deleteNamespace(b, ns)

		ns = newNamespace(b, "bench-mpi")
		r = newRelease(b, ns, "flux-sample", helm4)
		r.install("--set", "size=4,sharedMemory=1Gi,"+view+",image="+mpiImage)
		pods := waitFluxUp(b, ns, r.name, 4, 16, wiringTimeout)
		for _, c := range []struct {
			total *time.Duration
			args  []string
		}{
			{&hello, []string{"true"}},
			{&mpich, append(mpichEnv, "mpi-hello-mpich")},
			{&openmpi, append(openmpiEnv, "mpi-hello-openmpi")},
		} {
			start := time.Now()
			out, stderr, err := fluxIn(ns, pods[0].Name, append([]string{"run", "-N", "4", "-n", "8"}, c.args...)...)
			took := time.Since(start)
			if err != nil {
				b.Fatalf("flux run %v: %v\n%s%s", c.args, err, out, stderr)
			}
			*c.total += took
			fmt.Printf("%s: flux run -N 4 -n 8 %s: %.2f s\n", b.Name(), c.args[len(c.args)-1], took.Seconds())
		}
		r.uninstall()
		deleteNamespace(b, ns)

		for _, sched := range []struct {
			name       string
			total, rc1 *time.Duration
		}{{"fluxion", &fluxion, &rc1Fluxion}, {"simple", &simple, &rc1Simple}} {
			ns = newNamespace(b, "bench-"+sched.name)
			r = newRelease(b, ns, "flux-sample", helm4)
			start = time.Now()
			r.install("--set", fmt.Sprintf("size=%d,flux.scheduler=%s,%s", benchSize, sched.name, view))
			pods := waitFluxUp(b, ns, r.name, benchSize, 16, wiringTimeout)
			at, err := markTimes(ns, pods[0].Name, "quorum-full: quorum->run", "rc1-success", "builtins-success")
			if err != nil || at[0].IsZero() || at[1].IsZero() || at[2].IsZero() {
				b.Fatalf("lead %s: no quorum-full, rc1-success or builtins-success line: %v", pods[0].Name, err)
			}
			*sched.total += at[0].Sub(start)
			*sched.rc1 += at[1].Sub(at[2])
			fmt.Printf("%s: %s: interactive install -> %d up %.2f s, lead's rc1 %.2f s\n", b.Name(), sched.name,
				benchSize, at[0].Sub(start).Seconds(), at[1].Sub(at[2]).Seconds())
			r.uninstall()
			deleteNamespace(b, ns)
		}
	}
	report(b, "s/floor-complete-4", floor)
	report(b, "s/lammps-install-to-complete", lammps)
	report(b, "s/lammps-loop", loop)
	report(b, "s/flux-run-8-true", hello)
	report(b, "s/flux-run-8-mpich-hello", mpich)
	report(b, "s/flux-run-8-openmpi-hello", openmpi)
	report(b, "s/fluxion-install-to-6-up", fluxion)
	report(b, "s/simple-install-to-6-up", simple)
	report(b, "s/fluxion-lead-rc1", rc1Fluxion)
	report(b, "s/simple-lead-rc1", rc1Simple)
}

// What values/mpich.yaml and values/openmpi.yaml set, as flux run options.
var (
	mpichEnv   = []string{"--env=LD_PRELOAD=/usr/local/lib/mpich-ucx-finalize.so"}
	openmpiEnv = []string{"-o", "pmi=pmix", "--env=OMPI_ALLOW_RUN_AS_ROOT=1", "--env=OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"--env=OMPI_MCA_btl_vader_single_copy_mechanism=none"}
)

// createCompletingFloor creates an indexed Job of size pods that exit at once.
func createCompletingFloor(b *testing.B, ns, name string, size int) {
	job := indexedJob(name, size, corev1.PodSpec{Containers: []corev1.Container{{
		Name: "floor", Image: testsImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"/bin/true"},
	}}})
	if _, err := kube.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}
