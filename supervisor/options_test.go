package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuote(t *testing.T) {
	for word, want := range map[string]string{"": "''", "a b": "'a b'", "it's": `'it'\''s'`, "''": `''\'''\'''`} {
		assert.Equal(t, want, quote(word))
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+quote(word)).Output()
		require.NoError(t, err)
		assert.Equal(t, word, string(out), "the shell reads it back")
	}
}

func TestBatchScript(t *testing.T) {
	// An empty line in the middle: line numbers count it.
	command := "echo one\n\necho two\n"
	assert.Equal(t, "#!/bin/sh\nflux submit --flags waitable --error=OUT/job-0.err --output=OUT/job-0.out echo one\n"+
		"flux submit --flags waitable --error=OUT/job-2.err --output=OUT/job-2.out echo two\nflux queue idle\nflux jobs -a\n",
		batchScript(command, "batch", "OUT"))
	assert.Equal(t, "#!/bin/sh\necho one\necho two\n", batchScript(command, "raw", "OUT"))
	for _, tc := range []struct {
		tasks int
		want  string
	}{{0, "-N 4"}, {2, "-n 2"}, {4, "-N 4 -n 4"}, {9, "-N 4 -n 9"}} {
		assert.Equal(t, tc.want, batchNodes("4", tc.tasks), "tasks %d", tc.tasks)
	}
}

func TestUserBrokerOptionsStayWhole(t *testing.T) {
	assert.Equal(t, []string{"-Sa=1", "-Sb=x y", "-Sc=*", "-Sd=$HOME"}, userBrokerOptions("-Sa=1\n-Sb=x y\n\n-Sc=*\n-Sd=$HOME"))
	assert.Nil(t, userBrokerOptions(""))

	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_BROKER_OPTIONS": "-Sa=1\n-Sb=x y\n-Sc=*\n-Sd=$HOME", "MINICLUSTER_TOPOLOGY": "kary:2"}})
	p.brokers(t, "0 60", "0 0 30")
	term, wait := p.start(t)
	p.waitSleeping(t, 2)
	term()
	status, out := wait()
	assert.Equal(t, 143, status, out)
	runs := p.brokerRuns(t)
	require.Len(t, runs, 2)
	for _, run := range runs {
		assert.Equal(t, []string{"-Stbon.topo=kary:2", p.rc3Option("--"), "-Sa=1", "-Sb=x y", "-Sc=*", "-Sd=$HOME", "-Sbroker.rc2_none=1"}, tail(run, 7))
	}
}

func TestREncodeArgs(t *testing.T) {
	for _, tc := range []struct {
		name               string
		cores, gpus, nproc int
		want               []string
	}{
		{"hwloc", 0, 0, 8, []string{"--local"}},
		{"cores", 3, 0, 8, []string{"--cores=0-2"}},
		{"one core", 1, 0, 8, []string{"--cores=0"}},
		{"GPUs", 4, 2, 8, []string{"--cores=0-3", "--gpus=0-1"}},
		{"one GPU", 2, 1, 8, []string{"--cores=0-1", "--gpus=0"}},
		{"GPUs without cores: the CPUs this process may use", 0, 1, 6, []string{"--cores=0-5", "--gpus=0"}},
	} {
		assert.Equal(t, append([]string{"--hosts=h-[0-3]"}, tc.want...), rEncodeArgs("h-[0-3]", tc.cores, tc.gpus, tc.nproc), tc.name)
	}
	assert.GreaterOrEqual(t, nproc(), 1)
}

func TestAsksForPMIx(t *testing.T) {
	for cmd, want := range map[string]bool{"flux run -o pmi=pmix ./ring": true, "flux run -o pmi=simple,pmix x": true,
		"flux run ./ring": false, "pmix then pmi=simple": false} {
		assert.Equal(t, want, asksForPMIx(cmd), cmd)
	}
}

func TestOperatorBrokerOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want []string
		tail []string
	}{
		{map[string]string{"MINICLUSTER_ZEROMQ": "true"}, []string{"-Stbon.zmqdebug=1", "-Slog-stderr-level=6"}, []string{"/bin/sh", "-c", "hostname"}},
		{map[string]string{"MINICLUSTER_DEBUG": "true"}, []string{"-Slog-stderr-level=7"}, []string{"/bin/sh", "-c", "hostname"}},
		{map[string]string{"MINICLUSTER_QUIET": "true", "MINICLUSTER_DEBUG": "true"}, []string{"-Slog-stderr-level=0"}, []string{"/bin/sh", "-c", "hostname"}},
		{map[string]string{"MINICLUSTER_DEBUG": "true", "MINICLUSTER_TASKS": "4"}, []string{"-Slog-stderr-level=7"},
			[]string{"flux", "submit", "-vvv", "--quiet", "--watch", "-N", "4", "-n", "4", "/bin/sh", "-c", "hostname"}},
		{map[string]string{"MINICLUSTER_COMMAND_PREFIX": "strace -f"}, nil, []string{"strace", "-f", "/bin/sh", "-c", "hostname"}},
	} {
		t.Run(fmt.Sprint(tc.env), func(t *testing.T) {
			t.Parallel()
			tc.env["MINICLUSTER_COMMAND"] = "hostname"
			tc.env["MINICLUSTER_EPHEMERAL_EXIT"] = "full"
			p := newPod(t, podOptions{env: tc.env})
			p.runsOnce(t)
			run := p.brokerRuns(t)[0]
			for _, w := range tc.want {
				assert.Contains(t, run, w)
			}
			assert.Equal(t, tc.tail, tail(run, len(tc.tail)))
		})
	}
}

// logging.timed: the command runs under a timer that prints the operator's FLUXTIME line.
func TestOperatorTimed(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_TIMED": "true"}})
	p.runsOnce(t)
	run := p.brokerRuns(t)[0]
	i := len(run) - 4
	require.GreaterOrEqual(t, i, 3)
	assert.Equal(t, []string{"timed", "/bin/sh", "-c", "hostname"}, run[i:])
	assert.Contains(t, run[i-1], "FLUXTIME fluxsubmit wall time")
	// The fast-exit wrapper comes first, then the timer.
	assert.Equal(t, "/bin/sh", run[i-8])
	out, err := exec.Command("/bin/sh", "-c", run[i-1], "timed", "/bin/sh", "-c", "exit 4").CombinedOutput()
	assert.Error(t, err)
	assert.Equal(t, "FLUXTIME fluxsubmit wall time 0:00\n", string(out))
}

// batch: each line a job of one flux batch, outputs in batch.outputDir.
func TestOperatorBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		env       map[string]string
		nodespec  string
		quietWrap bool
	}{
		{"submit", map[string]string{"MINICLUSTER_BATCH": "batch"}, "-N 4", false},
		{"raw quiet tasks", map[string]string{"MINICLUSTER_BATCH": "raw", "MINICLUSTER_TASKS": "2", "MINICLUSTER_QUIET": "true"}, "-n 2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "fluxout")
			tc.env["MINICLUSTER_COMMAND"] = "echo one\n\necho two\n"
			tc.env["MINICLUSTER_BATCH_OUTPUT"] = out
			p := newPod(t, podOptions{env: tc.env})
			p.runsOnce(t)
			run := p.brokerRuns(t)[0]
			script := filepath.Join(p.root, "minicluster/run/flux-job.batch")
			want := "flux batch " + tc.nodespec + "  --flags waitable " + script + " && flux job wait --all"
			if tc.quietWrap {
				want = "{ " + want + "; } > /dev/null 2>&1"
			}
			assert.Equal(t, []string{"/bin/sh", "-c", want}, tail(run, 3))
			b, err := os.ReadFile(script)
			require.NoError(t, err)
			assert.Equal(t, batchScript(tc.env["MINICLUSTER_COMMAND"], tc.env["MINICLUSTER_BATCH"], out), string(b))
			assert.DirExists(t, out)
		})
	}
}

// flux.state: the lead restores the archive when there is one and always dumps to the
// temporary name that its rc3 renames over the archive only after a whole rc3 (broker-rc3.sh,
// which the broker runs: the chart's file).
func TestState(t *testing.T) {
	t.Parallel()
	for _, archive := range []bool{false, true} {
		p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_REJOIN": "false", "MINICLUSTER_STATE": "", "MINICLUSTER_STATE_DUMP_TIMEOUT": "10"}})
		state := p.root + "/minicluster/state/flux-content.tgz"
		p.env["MINICLUSTER_STATE"] = state
		tmp := p.root + "/minicluster/state/.partial-flux-content.tgz"
		p.write(t, "/minicluster/state/.partial-flux-content.tgz", "a dump cut short", 0o644)
		if archive {
			p.write(t, "/minicluster/state/flux-content.tgz", "an archive", 0o644)
		}
		p.brokers(t, "0 0")
		status, out := p.run(t)
		require.Equal(t, 0, status, out)
		runs := p.brokerRuns(t)
		require.Len(t, runs, 1, out)
		assert.Contains(t, runs[0], "-Scontent.dump="+tmp)
		assert.Equal(t, archive, slices.Contains(runs[0], "-Scontent.restore="+state), "restore only an archive that is there: %v", runs[0])
		assert.NoFileExists(t, tmp, "a temporary dump left by an earlier lead is removed at start")
		if archive {
			assert.Contains(t, out, "flux.state: restoring Flux's state from "+state+" (10 bytes)")
		} else {
			assert.Contains(t, out, "flux.state: no archive at "+state+" yet")
		}
		run := p.root + "/minicluster/run/flux"
		rc3 := p.rc3Option("--started '" + run + "/rc3-started' --state '" + state + "' '" + tmp + "' --done '" + run + "/rc3-done' --")
		require.Contains(t, runs[0], rc3)
	}
	// A worker neither restores nor dumps.
	p := newPod(t, podOptions{index: 1, env: map[string]string{"MINICLUSTER_REJOIN": "false", "MINICLUSTER_STATE": "/minicluster/state/flux-content.tgz"}})
	p.brokers(t, "0 0")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
	for _, a := range p.brokerRuns(t)[0] {
		assert.NotContains(t, a, "content.")
	}
	assert.Contains(t, p.brokerRuns(t)[0], p.rc3Option("--done '"+p.root+"/minicluster/run/flux/rc3-done' --"))
}

// With flux.state or a content dump in brokerOptions, an ephemeral lead takes Flux's whole
// shutdown: no fast-exit wrapper.
func TestFastExitGivesWayToADump(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{"MINICLUSTER_BROKER_OPTIONS": "-Scontent.dump=/tmp/x.tgz"},
		{"MINICLUSTER_STATE": "STATE"},
	} {
		p := newPod(t, podOptions{env: env})
		if env["MINICLUSTER_STATE"] != "" {
			p.env["MINICLUSTER_STATE"] = p.root + "/minicluster/state/flux-content.tgz"
		}
		p.env["MINICLUSTER_COMMAND"] = "hostname"
		p.runsOnce(t)
		assert.Equal(t, []string{"/bin/sh", "-c", "hostname"}, tail(p.brokerRuns(t)[0], 3))
		assert.NotContains(t, strings.Join(p.brokerRuns(t)[0], " "), "command-status")
	}
}
