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
	"sigs.k8s.io/yaml"

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
	// substitute: why the case's test.out.correct does not apply (an image of the project in
	// place of the case's serves other content); want is checked instead.
	substitute string
	// interactive: no command; the check is that all brokers come up.
	interactive bool
	// setup prepares what the case's pre-run.sh and volumes.yaml do with minikube.
	setup func(t *testing.T, ns string)
	// drop: fields (dotted paths) taken out of the MiniCluster before it is converted, each
	// with why: the converter refuses them, and the case checks the rest.
	drop map[string]string
	// set: chart values added to the converted ones, for a check that rides on the install.
	set string
	// check runs once the case passed (interactive: with its brokers up).
	check func(t *testing.T, r *release, mc []byte)
	// values: a values file (YAML) given after the converted one, where images this project
	// lacks need another command; @busybox stands for the project's busybox image.
	values string
	// nothingLeft: after helm uninstall, wait until nothing of the release is left.
	nothingLeft bool
	// own: a MiniCluster of the project's (not in the operator's examples) for the fields no
	// example of the operator uses.
	own string
	// leadExit: the lead's broker container must end with this status (logging.strict); the
	// Job is not waited for.
	leadExit int
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
	"tests/minimal-service":  {check: leadAloneNamed},
	// The case's brokerConfig is the operator's own broker.toml (its paths, its Service name),
	// which the converter refuses; the chart generates the same hosts and bootstrap.
	"tests/custom-config": {want: "(?m)^hello world$", check: inlineCertUsed,
		drop: map[string]string{"spec.flux.brokerConfig": "the operator's broker.toml, refused"}},
	// Its container flux-queue uses the pod's broker (fluxContainers). The lead's sleep 200 is
	// shortened: the check is flux-queue's, which asks its broker after 10 s. commands.prefix
	// rides on it: the command runs under the prefix, which marks its environment.
	"tests/flux-sidecar": {want: `(?s)prefixed=yes\n.*the command ended with status 0`, check: fluxQueueListed,
		set: "command=echo prefixed=$MINICLUSTER_PREFIXED && sleep 20,commands.prefix=env MINICLUSTER_PREFIXED=yes"},
	// The services pod (services): nginx is busybox's httpd here, and the lead asks it with
	// bash in place of curl, which the project's app image lacks, by the chart's name of it.
	"tests/nginx-service": {images: map[string]string{"nginx": "@busybox"}, values: nginxByBusybox,
		want: "(?m)^hello from the services pod$", nothingLeft: true},
	"tests/osu-benchmarks": {leftOut: "needs the OSU micro-benchmarks (metric-osu-benchmark image); Debian packages none, and their source cannot be fetched here",
		images: map[string]string{"ghcr.io/converged-computing/flux-view-ubuntu:tag-focal": "@view"}},
	// The nginx sidecar is busybox's httpd in the broker pod, and the command reads it on
	// localhost with bash in place of curl, which the project's app image lacks.
	"tests/nginx-sidecar-service": {images: map[string]string{"nginx": "@busybox"}, values: httpdSidecar,
		substitute: "busybox's httpd serves its own page in place of nginx's welcome page", want: "(?m)^hello from the nginx sidecar$"},
	// LAMMPS runs the melt input: Debian's LAMMPS (the project's mpi image) is built without the
	// REAXFF package the case's reaxff/HNS input needs. The rest of the case (4 brokers, 2
	// tasks, its working directory replaced) is as written; OpenMPI goes through flux-pmix.
	"tests/lammps": {images: map[string]string{"ghcr.io/converged-computing/metric-lammps:latest": "@mpi"},
		set: lammpsMelt, want: `(?m)^Loop time of [0-9.]+ on 2 procs for 250 steps`},
	// Flux in the application image (no view): the project's mpi image with Flux built in.
	"tests/disable-view": {images: map[string]string{"ghcr.io/rse-ops/lammps:flux-sched-focal": "@flux-mpi"},
		set: lammpsMelt, want: `(?m)^Loop time of [0-9.]+ on 2 procs for 250 steps`},
	"tests/pokemon":     {leftOut: "needs the pokemon Python package (rse-ops/pokemon image); PyPI cannot be reached here", images: map[string]string{"ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy": "@view"}},
	"tests/singularity": {leftOut: "needs singularity and pulls docker://ubuntu at run time"},
	"tests/snakemake":   {leftOut: "needs the snakemake atacseq image and its workflow data, downloaded at run time"},
	// MPICH's ring and allreduce (mpi-hello-mpich) in place of the rse-ops image's hello_cxx;
	// 4 brokers, 4 tasks and the case's environment as written.
	"mpi/mpich": {images: map[string]string{"ghcr.io/rse-ops/mpich:tag-mamba": "@mpi"},
		set:  "command=mpi-hello-mpich,workingDir=/,env[2].name=LD_PRELOAD,env[2].value=/usr/local/lib/mpich-ucx-finalize.so",
		want: `(?s)hello from rank 3 of 4 on .*MPICH Version:.*ring`},
	// flux.wrap rides on it (every broker runs under env, which marks its environment), and
	// logging.zeromq (the lead logs its overlay socket's ZeroMQ events).
	"scaling/basic": {interactive: true, images: map[string]string{"rockylinux:9": "@app"},
		set: "flux.wrap=env\\,MINICLUSTER_WRAPPED=yes,logging.zeromq=true,commands.brokerPre=echo mark brokerPre,commands.workerPre=echo mark workerPre", check: brokersWrappedZeromqLogged},
	"state/basic-job-completion": {refused: "spec.archive.path"},
	"own/fields":                 {own: ownFields, setup: caseConfigAndSecret, check: fieldsApplied, want: "(?m)^mark post$"},
	// flux submit --watch puts the job's id before each line, and --label-io the task's rank.
	"own/submit":      {own: ownSubmit, want: `(?s)ƒ\w+: 0: submit on submit-0\n.*ƒ\w+: 1: submit on submit-1\n|ƒ\w+: 1: submit on submit-1\n.*ƒ\w+: 0: submit on submit-0\n`},
	"own/strict":      {own: ownStrict, leadExit: 3, want: "(?m)^brokerPre fails$"},
	"own/complete":    {own: ownComplete, interactive: true, check: tokenMountedWorkerCompletes},
	"services/single": {leftOut: "this version of the operator's source has it only as minicluster-registry.yaml, which needs the oras registry image and downloads oras at run time"},
	// commands.init and pre run in the shell that starts Flux: the command (a job, on either
	// broker) sees what they exported and the directory pre changed to.
	"own/init-pre": {own: ownInitPre, want: `(?m)^init=yes pre=yes-too pwd=/tmp/workdir$`},
	// commands.script: the operator's unquoted heredoc (\$ is $ when it runs) run by bash, as a
	// job of 2 tasks.
	"own/script": {own: ownScript, want: `(?s)(task 0 of 2 in bash\n.*task 1 of 2 in bash|task 1 of 2 in bash\n.*task 0 of 2 in bash)\n`},
	// The operator's names of the services pod, <name>-services.<name> and
	// <name>-services.flux-service, reach the chart's services pod once converted (both are
	// web-services then).
	"own/services-names": {own: ownServicesNames, images: map[string]string{"nginx": "@busybox"}, values: httpdServices,
		want: "(?m)^web-services: hello from the services pod\nweb-services: hello from the services pod$", nothingLeft: true},
}

// TestOperatorCases runs the Flux Operator's own test cases on the chart: each MiniCluster
// converted by minicluster-convert (the project's images in place of ubuntu:noble and the
// operator's views), installed with real Flux, and checked as the operator's CI checks it
// (script/check-output.sh): the lead's log equals test.out.correct (trailing CRs stripped)
// and every container that ended exited 0. The chart's workers are stopped by the Job once the
// lead succeeds (successPolicy): pods being deleted are not counted.
func TestOperatorCases(t *testing.T) {
	t.Parallel()
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
			if tc.own != "" {
				file = filepath.Join(t.TempDir(), "minicluster.yaml")
				if err := os.WriteFile(file, []byte(tc.own), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := os.Stat(file); err != nil {
				if tc.leftOut == "" {
					t.Fatalf("%s: %v", name, err)
				}
				report.Store(name, "left out: "+tc.leftOut)
				return
			}
			mc, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.drop) > 0 {
				file = dropFields(t, mc, tc.drop)
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
			if tc.set != "" {
				set += "," + tc.set
			}
			args := []string{"install", r.name, chartDir, "-f", values}
			if tc.values != "" {
				extra := filepath.Join(t.TempDir(), "extra.yaml")
				if err := os.WriteFile(extra, []byte(strings.ReplaceAll(tc.values, "@busybox", testsImage)), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-f", extra)
			}
			if _, err := r.run(append(args, "--set", set)...); err != nil {
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
			case tc.leadExit != 0:
				eventually(t, 3*time.Minute, fmt.Sprintf("the lead's broker container ended %d", tc.leadExit), func() (bool, string) {
					pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
						LabelSelector: fmt.Sprintf("app.kubernetes.io/instance=%s,%s=0", r.name, indexLabel)})
					if err != nil {
						return false, err.Error()
					}
					var seen []string
					for _, p := range pods.Items {
						for _, c := range p.Status.ContainerStatuses {
							for _, st := range []corev1.ContainerState{c.State, c.LastTerminationState} {
								if c.Name == "flux" && st.Terminated != nil {
									if st.Terminated.ExitCode == int32(tc.leadExit) {
										return true, ""
									}
									seen = append(seen, fmt.Sprintf("%s ended %d", p.Name, st.Terminated.ExitCode))
								}
							}
						}
					}
					return false, fmt.Sprintf("%d lead pods; %v", len(pods.Items), seen)
				})
				if log := leadLog(t, r); !regexp.MustCompile(tc.want).MatchString(log) {
					t.Errorf("the lead's log does not match %q:\n%s", tc.want, indentAll(log))
				}
				if !t.Failed() {
					report.Store(name, fmt.Sprintf("passed: the lead's broker container ended %d", tc.leadExit))
				}
			case tc.interactive:
				// The chart's maxSize: the converted one (the operator's: size unless given).
				size, maxSize := caseSize(t, values, "size"), caseSize(t, values, "maxSize")
				if maxSize == 0 {
					maxSize = max(size, 16)
				}
				pods := waitFluxUp(t, ns, r.name, size, maxSize, 5*time.Minute)
				checkFluxRun(t, ns, r.name, pods)
				if tc.check != nil {
					tc.check(t, r, mc)
				}
				if !t.Failed() {
					report.Store(name, fmt.Sprintf("passed: %d brokers up, flux run on all%s", size, caseNotes(tc)))
				}
			default:
				finished := waitJobFinished(t, r, 6*time.Minute)
				expected := filepath.Join(filepath.Dir(file), "test.out.correct")
				if tc.substitute != "" {
					expected = "" // tc.want instead
				}
				checkOperatorOutput(t, r, expected, tc.want)
				if finished.Type != batchv1.JobComplete {
					t.Errorf("Job %s failed: %s %s", r.name, finished.Reason, finished.Message)
				}
				if tc.check != nil && !t.Failed() {
					tc.check(t, r, mc)
				}
				if !t.Failed() {
					report.Store(name, "passed"+caseNotes(tc))
				}
			}
			if tc.nothingLeft {
				r.uninstallToNothing()
			} else {
				r.uninstall()
			}
		})
	}
}

// httpdServices serves a page from busybox's httpd in the services pod.
const httpdServices = `services:
  - name: nginx
    image: @busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; mkdir -p /tmp/www && echo 'hello from the services pod' > /tmp/www/index.html && httpd -f -p 80 -h /tmp/www & wait"]
    ports: [{containerPort: 80}]
`

// nginxByBusybox is httpdServices, and the lead reads the page by the services pod's name
// (retrying until the name resolves: the pods start together).
const nginxByBusybox = httpdServices + `command: |
  bash -c 'for i in $(seq 60); do (: < /dev/tcp/flux-sample-services/80) 2>/dev/null && break; sleep 1; done; exec 3<>/dev/tcp/flux-sample-services/80 && printf "GET / HTTP/1.0\r\n\r\n" >&3 && sed -n "/^\r*$/,\$p" <&3 | tail -n +2'
`

// ownFields puts in one MiniCluster the operator's fields that none of its examples use: a raw
// batch script, the lead's commands.* scripts, shareProcessNamespace, jobLabels and volumes
// from an existing ConfigMap and Secret. One broker: the batch script runs, and writes its
// output file, on the first broker of its allocation, which Fluxion may place on a worker.
const ownFields = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: fields
spec:
  size: 1
  jobLabels:
    minicluster-case: fields
  shareProcessNamespace: true
  containers:
    - image: ubuntu:noble
      workingDir: /tmp/batchwork
      batch: true
      batchRaw: true
      command: |
        #!/bin/sh
        flux run sh -c 'echo "raw batch line on $(hostname)"'
        cat /etc/case-config/greeting /etc/case-secret/word
        grep -l 'flux-keyge[n]' /proc/[0-9]*/cmdline >/dev/null && echo "the keys sidecar's processes are visible"
        test -e /var/run/secrets/kubernetes.io/serviceaccount/token || echo "no service account token"
      commands:
        init: echo "mark init"
        pre: echo "mark pre"
        brokerPre: echo "mark brokerPre"
        post: echo "mark post"; cat /tmp/batchwork/flux-*.out
      volumes:
        config:
          configMapName: case-config
          path: /etc/case-config
        word:
          secretName: case-secret
          path: /etc/case-secret
`

// ownInitPre: commands.init exports a variable, commands.pre changes directory and exports
// another; the command prints what it sees.
const ownInitPre = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: init-pre
spec:
  size: 2
  logging:
    quiet: true
  containers:
    - image: ubuntu:noble
      command: sh -c 'echo "init=$FROM_INIT pre=$FROM_PRE pwd=$(pwd)"'
      commands:
        init: export FROM_INIT=yes
        pre: |
          mkdir -p /tmp/workdir && cd /tmp/workdir
          export FROM_PRE=$FROM_INIT-too
`

// ownScript: a script as the operator's docs write them, with \${VAR} for what the job's
// environment gives and bash's [[.
const ownScript = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: script
spec:
  size: 2
  tasks: 2
  logging:
    quiet: true
  containers:
    - image: ubuntu:noble
      commands:
        script: |
          #!/bin/bash
          if [[ -n "\${FLUX_TASK_RANK}" ]]; then
            echo "task \${FLUX_TASK_RANK} of \${FLUX_JOB_SIZE} in bash"
          fi
`

// ownServicesNames: the command reaches the services pod by the names the operator's files
// use for it (read with bash's /dev/tcp, retrying until the name resolves).
const ownServicesNames = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: web
spec:
  size: 1
  logging:
    quiet: true
  containers:
    - image: ubuntu:noble
      command: |
        bash -c 'for host in web-services.web web-services.flux-service; do for i in $(seq 60); do (: < /dev/tcp/$host/80) 2>/dev/null && break; sleep 1; done; exec 3<>/dev/tcp/$host/80 && printf "GET / HTTP/1.0\r\n\r\n" >&3 && printf "%s: " "$host" && sed -n "/^\r*$/,\$p" <&3 | tail -n +2; done'
  services:
    - image: nginx
      name: nginx
      ports: [80]
`

// ownSubmit: the operator's submitCommand and optionFlags in its own submit line.
const ownSubmit = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: submit
spec:
  size: 2
  flux:
    submitCommand: flux submit --env=CASE=submit
    optionFlags: -N2 -n2 --label-io
  containers:
    - image: ubuntu:noble
      command: sh -c 'echo $CASE on $(hostname)'
`

// ownStrict: with logging.strict a commands.* script that fails ends the broker's container
// with its status.
const ownStrict = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: strict
spec:
  size: 2
  logging:
    strict: true
  containers:
    - image: ubuntu:noble
      command: echo the command ran
      commands:
        brokerPre: echo "brokerPre fails"; exit 3
`

// ownComplete: flux.completeWorkers (a worker whose broker exits ends, successfully, instead
// of starting its broker again), pod.automountServiceAccountToken and a lifeCycle.postStartExec
// hook on an interactive MiniCluster, whose workers outlive the lead's command.
const ownComplete = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: complete
spec:
  size: 2
  interactive: true
  flux:
    completeWorkers: true
  pod:
    automountServiceAccountToken: true
  containers:
    - image: ubuntu:noble
      lifeCycle:
        postStartExec: hostname > /tmp/post-start
`

// tokenMountedWorkerCompletes checks ownComplete on real Flux: the postStart hook ran in every
// broker's container, a job on both brokers reads the service account token Kubernetes mounted;
// then the worker's broker is stopped, and the worker's container ends with 0
// (flux.completeWorkers) instead of starting its broker again, while the lead runs on.
func tokenMountedWorkerCompletes(t *testing.T, r *release, _ []byte) {
	t.Helper()
	pods, _, err := brokerPods(r.ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pods {
		if out, stderr, err := execIn(r.ns, p.Name, "flux", "cat", "/tmp/post-start"); err != nil || strings.TrimSpace(out) != fmt.Sprintf("complete-%d", i) {
			t.Errorf("%s: the postStartExec hook's file: %q %v %s", p.Name, out, err, stderr)
		}
	}
	out, stderr, err := fluxIn(r.ns, pods[0].Name, "run", "-N2", "-n2", "sh", "-c",
		"test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token on $(hostname)")
	if err != nil || strings.Count(out, "token on ") != 2 {
		t.Errorf("automountServiceAccountToken: a job on both brokers did not find the token: %v\n%s%s", err, out, stderr)
	}
	worker := pods[1]
	stop := `for p in /proc/[0-9]*; do case $(cat "$p/comm" 2>/dev/null) in flux-broker*) kill -TERM "${p#/proc/}" ;; esac; done`
	if _, stderr, err := execIn(r.ns, worker.Name, "flux", "/bin/sh", "-c", stop); err != nil {
		t.Fatalf("stopping the worker's broker: %v\n%s", err, stderr)
	}
	waitFluxContainerExit0(t, r.ns, worker.Name, "the worker's")
	if log, err := podLogs(r.ns, worker.Name, "flux", 0); err != nil || !strings.Contains(log, "the worker is complete (flux.completeWorkers)") {
		t.Errorf("the worker's log does not say it completed: %v\n%s", err, indentAll(log))
	}
	lead, err := kube.CoreV1().Pods(r.ns).Get(context.Background(), pods[0].Name, metav1.GetOptions{})
	if err != nil || lead.Status.Phase != corev1.PodRunning {
		t.Errorf("the lead stopped with its worker: %v", err)
	}
}

// caseConfigAndSecret makes the ConfigMap and Secret ownFields mounts.
func caseConfigAndSecret(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "case-config"},
		Data: map[string]string{"greeting": "hello from a ConfigMap\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "case-secret"},
		StringData: map[string]string{"word": "and from a Secret\n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// fieldsApplied checks ownFields on what ran: the lead's scripts in their order, the raw batch
// script's output (its flux run, the volumes, the shared process namespace, no token) and the
// Job's label.
func fieldsApplied(t *testing.T, r *release, _ []byte) {
	t.Helper()
	log := leadLog(t, r)
	for _, want := range []string{"(?s)mark init\n.*mark pre\n.*mark brokerPre\n.*mark post\n", "(?m)^raw batch line on fields-0$",
		"(?m)^hello from a ConfigMap\nand from a Secret\nthe keys sidecar's processes are visible\nno service account token$"} {
		if !regexp.MustCompile(want).MatchString(log) {
			t.Errorf("the lead's log does not match %q:\n%s", want, indentAll(log))
		}
	}
	job, err := kube.BatchV1().Jobs(r.ns).Get(context.Background(), r.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Labels["minicluster-case"] != "fields" {
		t.Errorf("the Job's labels %v lack jobLabels' minicluster-case=fields", job.Labels)
	}
}

// httpdSidecar serves a page from busybox's httpd in a sidecar of the broker pods, and the
// command reads it on localhost (retrying until it listens: the containers start together).
const httpdSidecar = `sidecars:
  - name: nginx
    image: @busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; mkdir -p /tmp/www && echo 'hello from the nginx sidecar' > /tmp/www/index.html && httpd -f -p 80 -h /tmp/www & wait"]
    ports: [{containerPort: 80, protocol: TCP}]
command: |
  bash -c 'for i in $(seq 60); do (: < /dev/tcp/localhost/80) 2>/dev/null && break; sleep 1; done; exec 3<>/dev/tcp/localhost/80 && printf "GET / HTTP/1.0\r\n\r\n" >&3 && sed -n "/^\r*$/,\$p" <&3 | tail -n +2'
`

// lammpsMelt is the cases' submit line (2 tasks) with LAMMPS's 3d Lennard-Jones melt in place of
// an input the project's LAMMPS cannot run, and OpenMPI's PMIx server from flux-pmix.
const lammpsMelt = "command=flux submit -n 2 -o pmi=pmix --quiet --watch lmp -in in.melt -log none -nocite,workingDir=/opt/lammps/examples/melt"

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
		case "@flux-mpi":
			to = fluxMPI
		case "@app":
			to = appImage
		case "@view":
			to = viewImage
		case "@busybox":
			to = testsImage
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
	if raw, err := os.ReadFile(expected); expected != "" && err == nil {
		strip := func(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
		if strip(string(raw)) != strip(log) {
			t.Errorf("the lead's log differs from %s:\nwant:\n%s\ngot:\n%s", filepath.Base(expected), indentAll(string(raw)), indentAll(log))
		}
	} else if want == "" {
		t.Fatalf("%s: no test.out.correct (%v): give the case a want line", expected, err)
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

// pancakesHostPath puts examples/tests/data/pancakes.txt at dir on every real node, as the case's
// pre-run.sh does with minikube, by a pod per node with that hostPath.
func pancakesHostPath(dir string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		t.Helper()
		// Simulated nodes (make kwok-up) run no pod to its end: only the real ones hold files.
		nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "!minicluster.dev/kwok"})
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

// caseNotes says what of a case was changed for it to run.
func caseNotes(tc operatorCase) string {
	var notes []string
	for _, path := range sortedStrings(keys(tc.drop)) {
		notes = append(notes, "without "+path+" ("+tc.drop[path]+")")
	}
	if tc.set != "" {
		notes = append(notes, "with "+tc.set)
	}
	if tc.substitute != "" {
		notes = append(notes, tc.substitute)
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// dropFields writes the MiniCluster without the given fields and returns the new file.
func dropFields(t *testing.T, mc []byte, drop map[string]string) string {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(mc, &doc); err != nil {
		t.Fatal(err)
	}
	for path := range drop {
		parts := strings.Split(path, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				t.Fatalf("the case has no %s to drop", path)
			}
			m = next
		}
		if _, ok := m[parts[len(parts)-1]]; !ok {
			t.Fatalf("the case has no %s to drop", path)
		}
		delete(m, parts[len(parts)-1])
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "minicluster.yaml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// leadAloneNamed (flux.minimalService): the headless Service publishes the lead alone, and
// the instance ran on every broker all the same (test.out.correct: one line per task).
func leadAloneNamed(t *testing.T, r *release, _ []byte) {
	t.Helper()
	slices, err := kube.DiscoveryV1().EndpointSlices(r.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + r.name})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.Hostname != nil {
				hosts = append(hosts, *e.Hostname)
			}
		}
	}
	// The lead's pod may have gone with the Job's end; no other pod may ever be listed.
	for _, h := range hosts {
		if h != r.name+"-0" {
			t.Errorf("the Service %s lists %s: with flux.minimalService it publishes the lead alone (%v)", r.name, h, hosts)
		}
	}
}

// inlineCertUsed (flux.curveCert): the release's certificate is the case's, byte for byte, in
// a Secret, and no keygen Job made one; the brokers read only that Secret and all joined (the
// lead runs its command once all size brokers are up). The certificate is never printed.
func inlineCertUsed(t *testing.T, r *release, mc []byte) {
	t.Helper()
	var doc struct {
		Spec struct {
			Flux struct {
				CurveCert string `json:"curveCert"`
			} `json:"flux"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(mc, &doc); err != nil {
		t.Fatal(err)
	}
	secret := r.curveSecret()
	switch {
	case secret == nil:
		t.Errorf("no Secret %s-curve", r.name)
	case string(secret.Data["curve.cert"]) != doc.Spec.Flux.CurveCert:
		t.Errorf("the Secret %s-curve does not hold the MiniCluster's curveCert (%d bytes, want %d)", r.name, len(secret.Data["curve.cert"]), len(doc.Spec.Flux.CurveCert))
	}
	if _, err := kube.BatchV1().Jobs(r.ns).Get(context.Background(), r.name+"-keygen", metav1.GetOptions{}); err == nil {
		t.Errorf("a keygen Job %s-keygen exists, but the certificate was given", r.name)
	}
	if strings.Contains(leadLog(t, r), "secret-key") {
		t.Errorf("the lead's log shows the certificate")
	}
}

// brokersWrappedZeromqLogged: with flux.wrap=env,MINICLUSTER_WRAPPED=yes every broker's
// process has the variable the wrapper set; with logging.zeromq (-Stbon.zmqdebug=1) the lead's
// log buffer has its overlay socket's ZeroMQ events (at debug level, so in flux dmesg).
func brokersWrappedZeromqLogged(t *testing.T, r *release, _ []byte) {
	t.Helper()
	pods, _, err := brokerPods(r.ns, r.name)
	if err != nil {
		t.Fatal(err)
	}
	dmesg, stderr, err := fluxIn(r.ns, pods[0].Name, "dmesg")
	if err != nil || !strings.Contains(dmesg, "child sockevent") {
		t.Errorf("logging.zeromq: the lead's flux dmesg has no ZeroMQ socket event (child sockevent): %v\n%s", err, stderr)
	}
	// commands.brokerPre ran on the lead alone, commands.workerPre on every worker alone.
	for i, p := range pods {
		log, err := podLogs(r.ns, p.Name, "flux", 0)
		mine, other := "mark workerPre", "mark brokerPre"
		if i == 0 {
			mine, other = other, mine
		}
		if err != nil || !strings.Contains(log, mine+"\n") || strings.Contains(log, other) {
			t.Errorf("pod %s: want %q and not %q in its log: %v\n%s", p.Name, mine, other, err, indentAll(log))
		}
	}
	// The broker names itself flux-broker-RANK.
	script := `for p in /proc/[0-9]*; do case $(cat "$p/comm" 2>/dev/null) in flux-broker*) tr '\0' '\n' < "$p/environ" | grep -x MINICLUSTER_WRAPPED=yes || echo "broker $p: not wrapped" ;; esac; done`
	for _, p := range pods {
		out, stderr, err := execIn(r.ns, p.Name, "flux", "/bin/sh", "-c", script)
		if err != nil || strings.TrimSpace(out) != "MINICLUSTER_WRAPPED=yes" {
			t.Errorf("pod %s: the broker does not run under flux.wrap: %v\n%s%s", p.Name, err, out, stderr)
		}
	}
}

// fluxQueueListed (fluxContainers): the lead pod's flux-queue container reached its broker
// through ${fluxsocket}: flux jobs -a printed its table, and the container exited 0.
func fluxQueueListed(t *testing.T, r *release, _ []byte) {
	t.Helper()
	pods, err := kube.CoreV1().Pods(r.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: fmt.Sprintf("app.kubernetes.io/instance=%s,%s=0", r.name, indexLabel)})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("no lead pod: %v", err)
	}
	lead := pods.Items[0]
	log, err := podLogs(r.ns, lead.Name, "flux-queue", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*JOBID\s+USER\s+NAME\s+ST`).MatchString(log) {
		t.Errorf("flux-queue's log has no flux jobs table:\n%s", indentAll(log))
	}
	for _, s := range lead.Status.ContainerStatuses {
		if s.Name == "flux-queue" && (s.State.Terminated == nil || s.State.Terminated.ExitCode != 0) {
			t.Errorf("flux-queue did not exit 0: %+v", s.State)
		}
	}
}
