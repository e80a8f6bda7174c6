package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// The Flux Operator's logging, commands and batch settings (values logging, commands, batch).

// order is a commands.* script that notes its name in the pod's order file and prints a line.
func order(p *pod, name string) string {
	return "echo " + name + " >> " + filepath.Join(p.root, "order") + "; echo out-of-" + name
}

func readOrder(t *testing.T, p *pod) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.root, "order"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// commandsPod renders with the commands.* scripts noting their names (the root is known only
// once the pod is laid out, so it is rendered twice: the second time with the real paths).
func commandsPod(t *testing.T, index int, set ...string) *pod {
	t.Helper()
	return commandsPodOn(t, "", index, set...)
}

func commandsPodOn(t *testing.T, kubeVersion string, index int, set ...string) *pod {
	t.Helper()
	base := []string{"command=hostname"}
	p := newPod(t, helmtest.Options{KubeVersion: kubeVersion, Set: append(base, set...)}, index)
	scripts := []string{}
	for _, name := range []string{"init", "pre", "brokerPre", "workerPre", "post"} {
		scripts = append(scripts, "commands."+name+"="+order(p, name))
	}
	root := p.root
	q := newPod(t, helmtest.Options{KubeVersion: kubeVersion, Set: append(append(base, scripts...), set...)}, index)
	// The scripts name the first pod's root: use the second pod's files with the first's order.
	for i, e := range q.env {
		q.env[i] = strings.ReplaceAll(e, root, q.root)
	}
	return q
}

func TestOperatorCommandsLead(t *testing.T) {
	t.Parallel()
	p := commandsPod(t, 0)
	p.runsOnce(t)
	assert.Equal(t, []string{"init", "pre", "brokerPre", "post"}, readOrder(t, p))
}

func TestOperatorCommandsWorker(t *testing.T) {
	t.Parallel()
	// Kubernetes 1.30 has no Job successPolicy: a worker whose instance ends exits, running post.
	p := commandsPodOn(t, "v1.30.0", 1)
	p.runsOnce(t)
	assert.Equal(t, []string{"init", "pre", "workerPre", "post"}, readOrder(t, p))
}

// logging.quiet: the lead's log holds the command's and post's output alone.
func TestOperatorQuiet(t *testing.T) {
	t.Parallel()
	p := commandsPod(t, 0, "logging.quiet=true")
	p.brokers(t, "0")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
	assert.Equal(t, "out-of-post\n", out, "quiet: only commands.post's output")
	assert.Equal(t, []string{"init", "pre", "brokerPre", "post"}, readOrder(t, p))
	assert.Contains(t, p.brokerRuns(t)[0], "-Slog-stderr-level=0")

	loud := commandsPod(t, 0)
	loud.brokers(t, "0")
	_, out = loud.run(t)
	for _, want := range []string{"out-of-init", "out-of-pre", "out-of-brokerPre", "out-of-post", "minicluster[0]: "} {
		assert.Contains(t, out, want)
	}
}

// logging.strict: a failing script ends the pod with its status; without it the broker starts.
func TestOperatorStrict(t *testing.T) {
	t.Parallel()
	p := newPod(t, helmtest.Options{Set: []string{"command=hostname", "commands.pre=echo x; sh -c 'exit 5'", "logging.strict=true"}}, 0)
	status, out := p.run(t)
	assert.Equal(t, 5, status, out)
	assert.Contains(t, out, "commands.pre failed with status 5 (logging.strict)")
	assert.Empty(t, p.brokerRuns(t))

	lax := newPod(t, helmtest.Options{Set: []string{"command=hostname", "commands.pre=echo x; sh -c 'exit 5'"}}, 0)
	lax.runsOnce(t)
	assert.Len(t, lax.brokerRuns(t), 1)
}

// commands.init and pre run in the entrypoint's shell, as in the operator's script: what they
// export and set, and the directory they cd to, reach the broker (and so the command); unset
// variables and source work as in a shell of their own; an exit ends the container.
func TestOperatorCommandsShareTheShell(t *testing.T) {
	t.Parallel()
	vars := filepath.Join(t.TempDir(), "vars.sh")
	require.NoError(t, os.WriteFile(vars, []byte("export MARK_SOURCED=yes\n"), 0o644))
	p := newPod(t, helmtest.Options{Set: []string{"command=hostname",
		"commands.init=export MARK_INIT=init; MARK_LOCAL=local$MARK_UNSET",
		"commands.pre=cd / && export MARK_PRE=$MARK_LOCAL-$MARK_INIT && source " + vars,
	}}, 0)
	p.runsOnce(t)
	env := p.brokerEnv(t, 1)
	assert.Equal(t, "init", env["MARK_INIT"], "init's export")
	assert.Equal(t, "local-init", env["MARK_PRE"], "pre sees init's variables")
	assert.Equal(t, "yes", env["MARK_SOURCED"], "pre's source")
	cwd, err := os.ReadFile(filepath.Join(p.fake, "cwd.1"))
	require.NoError(t, err)
	assert.Equal(t, "/\n", string(cwd), "pre's cd")

	exit := newPod(t, helmtest.Options{Set: []string{"command=hostname", "commands.pre=exit 4"}}, 0)
	status, out := exit.run(t)
	assert.Equal(t, 4, status, out)
	assert.Empty(t, exit.brokerRuns(t))
}

func TestOperatorBrokerOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  []string
		want []string
		tail []string
	}{
		{[]string{"logging.zeromq=true"}, []string{"-Stbon.zmqdebug=1", "-Slog-stderr-level=6"}, []string{"/bin/sh", "-c", "hostname"}},
		{[]string{"logging.debug=true"}, []string{"-Slog-stderr-level=7"}, []string{"/bin/sh", "-c", "hostname"}},
		{[]string{"logging.debug=true", "tasks=4"}, []string{"-Slog-stderr-level=7"},
			[]string{"flux", "submit", "-vvv", "--quiet", "--watch", "-N", "4", "-n", "4", "/bin/sh", "-c", "hostname"}},
		{[]string{"commands.prefix=strace -f"}, nil, []string{"strace", "-f", "/bin/sh", "-c", "hostname"}},
	} {
		t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
			t.Parallel()
			p := newPod(t, helmtest.Options{Set: append([]string{"command=hostname"}, tc.set...)}, 0)
			p.runsOnce(t)
			run := p.brokerRuns(t)[0]
			for _, w := range tc.want {
				assert.Contains(t, run, w)
			}
			assert.Equal(t, tc.tail, run[len(run)-len(tc.tail):])
		})
	}
}

// logging.timed: the command runs under a timer that prints the operator's FLUXTIME line.
func TestOperatorTimed(t *testing.T) {
	t.Parallel()
	p := newPod(t, helmtest.Options{Set: []string{"command=hostname", "logging.timed=true"}}, 0)
	p.runsOnce(t)
	run := p.brokerRuns(t)[0]
	i := len(run) - 4
	require.GreaterOrEqual(t, i, 3)
	assert.Equal(t, []string{"timed", "/bin/sh", "-c", "hostname"}, run[i:])
	assert.Contains(t, run[i-1], "FLUXTIME fluxsubmit wall time")
}

// batch: each line a job of one flux batch, outputs in batch.outputDir.
func TestOperatorBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		set       []string
		nodespec  string
		script    string
		quietWrap bool
	}{
		{"submit", []string{"command=x", "batch.enabled=true"}, "-N 4",
			"#!/bin/sh\nflux submit --flags waitable --error=OUT/job-0.err --output=OUT/job-0.out echo one\n" +
				"flux submit --flags waitable --error=OUT/job-2.err --output=OUT/job-2.out echo two\nflux queue idle\nflux jobs -a\n", false},
		{"raw quiet tasks", []string{"command=x", "batch.enabled=true", "batch.raw=true", "tasks=2", "logging.quiet=true"}, "-n 2",
			"#!/bin/sh\necho one\necho two\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, helmtest.Options{Set: tc.set}, 0)
			out := filepath.Join(p.root, "fluxout")
			q := newPod(t, helmtest.Options{Set: append(tc.set, "batch.outputDir="+out)}, 0)
			// command with an empty line in the middle: line numbers count it.
			for i, e := range q.env {
				if strings.HasPrefix(e, "MINICLUSTER_COMMAND=") {
					q.env[i] = "MINICLUSTER_COMMAND=echo one\n\necho two\n"
				}
			}
			q.runsOnce(t)
			run := q.brokerRuns(t)[0]
			script := filepath.Join(q.root, "minicluster/run/flux-job.batch")
			want := "flux batch " + tc.nodespec + "  --flags waitable " + script + " && flux job wait --all"
			if tc.quietWrap {
				want = "{ " + want + "; } > /dev/null 2>&1"
			}
			assert.Equal(t, []string{"/bin/sh", "-c", want}, run[len(run)-3:])
			b, err := os.ReadFile(script)
			require.NoError(t, err)
			assert.Equal(t, strings.ReplaceAll(tc.script, "OUT", out), string(b))
			assert.DirExists(t, out)
		})
	}
}

func TestOperatorValuesRejected(t *testing.T) {
	for _, set := range []string{"jobLabels.team=1", "automountServiceAccountToken=maybe", "shareProcessNamespace=yes", "logging.quite=true", "commands.preRun=x", "batch.outputDir=relative", "logging.quiet=yes"} {
		_, err := helmtest.Template(helmtest.Options{Set: []string{"command=x", set}})
		assert.Error(t, err, set)
	}
}

func TestOperatorPodValues(t *testing.T) {
	pod := brokerPod(t, helmtest.Options{})
	assert.Equal(t, ptrBool(false), pod.AutomountServiceAccountToken, "the chart's own account: no token")
	assert.Nil(t, pod.ShareProcessNamespace)

	pod = brokerPod(t, helmtest.Options{Set: []string{"serviceAccountName=mine"}})
	assert.Equal(t, ptrBool(false), pod.AutomountServiceAccountToken, "a user's account: no token either")

	pod = brokerPod(t, helmtest.Options{Set: []string{"automountServiceAccountToken=true", "shareProcessNamespace=true"}})
	assert.Equal(t, ptrBool(true), pod.AutomountServiceAccountToken)
	assert.Equal(t, ptrBool(true), pod.ShareProcessNamespace)
	pod = brokerPod(t, helmtest.Options{Set: []string{"serviceAccountName=mine", "automountServiceAccountToken=false"}})
	assert.Equal(t, ptrBool(false), pod.AutomountServiceAccountToken)

	job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"jobLabels.team=hpc"}}), "Job", "flux-sample")
	assert.Equal(t, "hpc", job.Labels["team"])
	assert.NotContains(t, job.Spec.Template.Labels, "team", "jobLabels stay on the Job")
}

func ptrBool(b bool) *bool { return &b }

// flux.completeWorkers: a worker whose broker fails ends with success, without a second run.
func TestOperatorCompleteWorkers(t *testing.T) {
	t.Parallel()
	p := newPod(t, helmtest.Options{Set: []string{"command=hostname", "flux.completeWorkers=true", "commands.post=echo worker-post"}}, 1)
	p.brokers(t, "3")
	status, out := p.run(t)
	assert.Equal(t, 0, status, out)
	assert.Len(t, p.brokerRuns(t), 1)
	assert.Contains(t, out, "worker-post")

	rejoin := newPod(t, helmtest.Options{Set: []string{"command=hostname"}}, 1)
	rejoin.brokers(t, "3 30", "0 30", "0 30")
	rejoin.run(t) // the fake kills it after the third run
	assert.Greater(t, len(rejoin.brokerRuns(t)), 1, "without completeWorkers the worker starts its broker again")
}
