package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The broker's runs, its signals and the rules after each run, with the fake flux standing in
// for the broker's process.

func TestInteractiveLead(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_TOPOLOGY": "kary:8"}})
	p.brokers(t, "0 60", "0 0 30")
	term, wait := p.start(t)
	p.waitSleeping(t, 2, "the broker starts again after it exits 0")
	term()
	status, out := wait()
	assert.Equal(t, 143, status, out)
	assert.Contains(t, out, "minicluster[0]: lead broker: 4 of hosts flux-sample-[0-15], quorum 4")
	assert.Contains(t, out, "the instance ended: starting the broker again to rejoin the lead")
	assert.Contains(t, out, "SIGTERM: stopping the broker")
	assert.Equal(t, "TERM\n", p.signalsSeen(t), "the broker gets the SIGTERM")

	runs := p.brokerRuns(t)
	require.Len(t, runs, 2, out)
	assert.Equal(t, runs[0], runs[1], "every run has the same arguments")
	assert.Equal(t, []string{"broker",
		"--config-path=" + p.root + "/minicluster/config",
		"-Srundir=" + p.root + "/minicluster/run/flux",
		"-Slocal-uri=local://" + p.root + "/minicluster/run/flux/local",
		"-Sbroker.quorum=4",
		"-Stbon.connect_timeout=5s",
		"-Slog-stderr-level=6",
		"-Slog-stderr-mode=local",
		"-Sbroker.cleanup-timeout=0s",
		"-Stbon.topo=kary:8",
		p.rc3Option("--"),
		"-Sbroker.rc2_none=1"}, runs[0])
	info, err := os.Stat(p.root + "/minicluster/run/flux")
	require.NoError(t, err, "the broker's rundir")
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
}

func TestEphemeralLeadExitsWithTheCommandsStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		tail []string
	}{
		{"command", map[string]string{"MINICLUSTER_COMMAND": "hostname -s", "MINICLUSTER_EPHEMERAL_EXIT": "full"}, []string{"/bin/sh", "-c", "hostname -s"}},
		{"tasks", map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_TASKS": "8", "MINICLUSTER_EPHEMERAL_EXIT": "full"},
			[]string{"flux", "submit", "--quiet", "--watch", "-N", "4", "-n", "8", "/bin/sh", "-c", "hostname"}},
	} {
		for _, exit := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s exit %d", tc.name, exit), func(t *testing.T) {
				t.Parallel()
				p := newPod(t, podOptions{env: tc.env})
				p.brokers(t, fmt.Sprintf("%d 30", exit))
				status, out := p.run(t)
				assert.Equal(t, exit, status, out)
				assert.Contains(t, out, fmt.Sprintf("the command ended with status %d\n", exit))
				runs := p.brokerRuns(t)
				require.Len(t, runs, 1, "an ephemeral lead runs its command once")
				assert.NotContains(t, runs[0], "-Sbroker.rc2_none=1")
				assert.Equal(t, tc.tail, tail(runs[0], len(tc.tail)))
			})
		}
	}
}

// Fast exit: the wrapper's status file is the lead's status; after a command that succeeded,
// the wrapper tells every worker so and ends its broker; a worker whose broker ends after that
// succeeds at once, without a second run.
func TestFastExit(t *testing.T) {
	t.Parallel()
	lead := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname"}})
	lead.write(t, "/fake/broker", "137\n", 0o644)
	// A status left from an earlier run is removed before the broker starts.
	lead.write(t, "/minicluster/run/command-status", "3\n", 0o644)
	status, out := lead.run(t)
	assert.Equal(t, 137, status, out)
	wrapper := strings.Join(lead.brokerRuns(t)[0], "\n")
	assert.Contains(t, wrapper, `if [ "$status" -eq 0 ]; then flux exec -r all -x 0 --noinput /bin/sh -c "$w"`)
	assert.Contains(t, wrapper, ": > "+lead.root+"/minicluster/run/command-ended && b=$(flux getattr broker.pid)")
	assert.Contains(t, lead.brokerRuns(t)[0], lead.root+"/minicluster/run/command-status")

	worker := newPod(t, podOptions{index: 1, env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_CMD_POST": "echo worker-post"}})
	worker.brokers(t, "137 0 0 ended")
	status, out = worker.run(t)
	assert.Equal(t, 0, status, out)
	assert.Len(t, worker.brokerRuns(t), 1)
	assert.Contains(t, out, "minicluster[1]: the command ended with status 0 on the lead, which ended this broker: the worker is complete")
	assert.Contains(t, out, "worker-post")
}

func TestFastExitStatus(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname"}})
	// The test stands in for the wrapper: it writes the status while the broker runs, and the
	// broker ends as if killed.
	p.brokers(t, "137 0 1")
	_, wait := p.start(t)
	p.waitSleeping(t, 1)
	p.write(t, "/minicluster/run/command-status", "5\n", 0o644)
	status, out := wait()
	assert.Equal(t, 5, status, out)
	assert.Contains(t, out, "the command ended with status 5 (flux.ephemeralExit=fast: the instance stops with the pods)")
}

func TestWorker(t *testing.T) {
	t.Parallel()
	t.Run("rejoins", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{index: 2})
		p.brokers(t, "0 60", "0 60", "1", "1", "1")
		status, out := p.run(t)
		assert.Equal(t, 78, status, out)
		assert.Len(t, p.brokerRuns(t), 5, out)
		assert.Equal(t, 2, strings.Count(out, "minicluster[2]: the instance ended: starting the broker again to rejoin the lead"), out)
		assert.NotContains(t, out, "lead broker")
	})
	t.Run("without rejoin ends with the instance", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{index: 1, env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_REJOIN": "false"}})
		p.brokers(t, "0 60")
		status, out := p.run(t)
		assert.Equal(t, 0, status, out)
		assert.Contains(t, out, "minicluster[1]: the instance ended\n")
		assert.Len(t, p.brokerRuns(t), 1)
	})
	t.Run("stopped through the API", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{})
		p.write(t, "/minicluster/run/api-stopped", "", 0o644)
		p.brokers(t, "0 0")
		status, out := p.run(t)
		assert.Equal(t, 0, status, out)
		assert.Contains(t, out, "the instance was stopped through the API (POST /v1/service/stop)")
	})
}

// A worker the lead is already stopping (on uninstall) gets its own SIGTERM as well: passed on,
// it would abort the broker's rc3. A mark left over from an earlier run must not hold back the
// SIGTERM of the next.
func TestWorkerKeepsASIGTERMWhileStopping(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{index: 1})
	p.brokers(t, "0 60 2 stopping", "0 0 30")
	term, wait := p.start(t)
	p.waitSleeping(t, 1)
	term()
	status, out := wait()
	assert.Equal(t, 143, status, out)
	assert.Contains(t, out, "minicluster[1]: SIGTERM: the broker is already stopping")
	assert.NotContains(t, out, "SIGTERM: stopping the broker")
	assert.Empty(t, p.signalsSeen(t), "the stopping broker got the SIGTERM")
	assert.Len(t, p.brokerRuns(t), 1, "a stopping pod does not start the broker again")

	p = newPod(t, podOptions{index: 1})
	p.brokers(t, "0 60 1 stopping", "0 0 30 joined")
	term, wait = p.start(t)
	p.waitSleeping(t, 2, "the broker starts again after it exits 0")
	term()
	status, out = wait()
	assert.Equal(t, 143, status, out)
	assert.Contains(t, out, "minicluster[1]: SIGTERM: stopping the broker")
	assert.Equal(t, "TERM\n", p.signalsSeen(t), "the second broker got the SIGTERM")
}

// A worker's broker that has not joined its parent gets no SIGTERM, which Flux ignores while it
// loads its built-in modules and which would otherwise only make it run rc3 without a parent: it
// is killed. One that has joined gets the SIGTERM. A Flux without modprobe's rc1 (which leaves
// "joined") and the lead always get the SIGTERM.
func TestKillsAWorkerThatHasNotJoined(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		index   int
		broker  string
		log     string
		signals string
	}{
		{"unjoined worker", nil, 2, "0 0 30 deaf", "minicluster[2]: SIGTERM: the broker has not joined its parent yet: killing it", ""},
		{"joined worker", nil, 2, "0 0 30 joined", "minicluster[2]: SIGTERM: stopping the broker", "TERM\n"},
		{"lead", nil, 0, "0 0 30", "minicluster[0]: SIGTERM: stopping the broker", "TERM\n"},
		{"rc1 replaced, so no joined mark", map[string]string{"MINICLUSTER_BROKER_OPTIONS": "-Sbroker.rc1_path=/opt/rc1"}, 2, "0 0 30", "minicluster[2]: SIGTERM: stopping the broker", "TERM\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, podOptions{index: tc.index, env: tc.env})
			p.brokers(t, tc.broker)
			term, wait := p.start(t)
			p.waitSleeping(t, 1)
			start := time.Now()
			term()
			status, out := wait()
			assert.Less(t, time.Since(start), 10*time.Second, "the supervisor waited for the broker's 30 s sleep")
			assert.Equal(t, 143, status, out)
			assert.Contains(t, out, tc.log)
			assert.Equal(t, tc.signals, p.signalsSeen(t))
		})
	}
}

// A worker's broker whose rc3 has ended but which has not exited (no answer to its goodbye
// from a lead that is gone) is killed 2 s later.
func TestKillsABrokerAfterItsRc3(t *testing.T) {
	t.Parallel()
	// No joined mark is coming (rc1 replaced): the SIGTERM goes to the broker, which stays.
	p := newPod(t, podOptions{index: 1, env: map[string]string{"MINICLUSTER_BROKER_OPTIONS": "-Sbroker.rc1_path=/opt/rc1"}})
	p.brokers(t, "0 0 30 deaf")
	term, wait := p.start(t)
	p.waitSleeping(t, 1)
	p.write(t, "/minicluster/run/flux/rc3-done", "", 0o644)
	start := time.Now()
	term()
	status, out := wait()
	assert.Equal(t, 143, status, out)
	assert.Contains(t, out, "SIGTERM: stopping the broker")
	assert.Contains(t, out, "the broker's rc3 ended 2 s ago, but the broker has not exited")
	assert.Less(t, time.Since(start), 6*time.Second)
}

func TestBrokerThatCannotStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		runs  []string
		want  int
		final string
	}{
		{"three quick failures", []string{"1 0", "2 5", "3 9"}, 3, "last exit status 3"},
		{"a slow failure starts the count again", []string{"1 0", "1 0", "4 10", "1 0", "5 0"}, 5, "last exit status 5"},
		{"a success starts the count again", []string{"1 0", "1 0", "0 0", "1 0", "1 0", "6 0"}, 6, "last exit status 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, podOptions{index: 1})
			p.brokers(t, tc.runs...)
			status, out := p.run(t)
			assert.Equal(t, 78, status, out)
			assert.Len(t, p.brokerRuns(t), tc.want, out)
			assert.Contains(t, out, "minicluster[1]: error: flux broker failed 3 times in a row within 10 s of starting ("+tc.final+")")
			assert.Contains(t, out, "broker exited with status 1: starting it again")
		})
	}
}

// A worker that has joined once keeps trying after quick failures: a lead that is still
// stopping (a long rc3, such as flux.state's content dump) turns it away at once each time.
func TestWorkerThatJoinedKeepsRejoining(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{index: 1, env: map[string]string{"MINICLUSTER_REJOIN": "false"}})
	p.brokers(t, "1 0 0 joined", "1 0", "1 0", "1 0", "0 0")
	status, out := p.run(t)
	assert.Equal(t, 0, status, out)
	assert.Len(t, p.brokerRuns(t), 5, out)
	assert.NotContains(t, out, "a config or certificate problem")
}

// flux.completeWorkers: a worker whose broker fails ends with success, without a second run.
func TestCompleteWorkers(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{index: 1, env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_COMPLETE_WORKERS": "true", "MINICLUSTER_CMD_POST": "echo worker-post"}})
	p.brokers(t, "3")
	status, out := p.run(t)
	assert.Equal(t, 0, status, out)
	assert.Len(t, p.brokerRuns(t), 1)
	assert.Contains(t, out, "worker-post")
	assert.Contains(t, out, "the broker exited with status 3: the worker is complete (flux.completeWorkers)")

	rejoin := newPod(t, podOptions{index: 1, env: map[string]string{"MINICLUSTER_COMMAND": "hostname"}})
	rejoin.brokers(t, "3 30", "0 30")
	rejoin.run(t) // the fake's third run fails at once, three times: the supervisor gives up
	assert.Greater(t, len(rejoin.brokerRuns(t)), 1, "without completeWorkers the worker starts its broker again")
}

// Readiness: .online once the broker is in Flux's run state. Once rc1 has ended
// (modprobe-rc1.py's rc1-done), the process rc1 left behind says "run" on online.fifo (written
// here, as it would); "poll" where it cannot tell, and then flux uptime says the state (every
// 0.2 s); where flux uptime crashes, the end of rc1 is the sign. Nothing before rc1 ends.
func TestSaysWhenFluxCountsTheBrokerOnline(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		index         int
		said          string
		before, after string
	}{
		{name: "lead", index: 0, said: "run", before: "quorum", after: "quorum"},
		{name: "worker", index: 3, said: "run", before: "quorum", after: "quorum"},
		{name: "poll", index: 3, said: "poll", before: "quorum", after: "run"},
		{name: "uptime crashes", index: 1, said: "poll", before: "crash", after: "crash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, podOptions{index: c.index})
			online := filepath.Join(p.root, "minicluster/keys/.online")
			p.write(t, "/fake/state", c.before+"\n", 0o644)
			p.brokers(t, "0 0 30")
			term, wait := p.start(t)
			p.waitSleeping(t, 1)
			time.Sleep(1500 * time.Millisecond) // flux uptime was asked at the start
			assert.NoFileExists(t, online, "before rc1 ended")
			p.write(t, "/minicluster/run/flux/rc1-done", "", 0o644)
			fifo, err := os.OpenFile(filepath.Join(p.root, "minicluster/run/flux/online.fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0)
			require.NoError(t, err, "online.fifo, held by the supervisor")
			_, err = fifo.WriteString(c.said + "\n")
			require.NoError(t, err)
			fifo.Close()
			if c.before != c.after {
				time.Sleep(1 * time.Second)
				assert.NoFileExists(t, online, "%s, flux uptime says %s", c.said, c.before)
				p.write(t, "/fake/state", c.after+"\n", 0o644)
			}
			assert.Eventually(t, func() bool { _, err := os.Stat(online); return err == nil }, 3*time.Second, 50*time.Millisecond,
				"%s said, flux uptime says %s: no .online", c.said, c.after)
			term()
			_, out := wait()
			assert.NoFileExists(t, online, "after the broker exited\n%s", out)
		})
	}
}

// A SIGTERM before the broker first starts (the helpers not ready yet) ends the container.
func TestSIGTERMBeforeTheBroker(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{index: 1})
	require.NoError(t, os.Remove(p.root+"/minicluster/keys/.ready"))
	term, wait := p.start(t)
	time.Sleep(200 * time.Millisecond)
	term()
	status, out := wait()
	assert.Equal(t, 143, status, out)
	assert.Contains(t, out, "SIGTERM: stopping")
	assert.Empty(t, p.brokerRuns(t))
	assert.FileExists(t, p.root+"/minicluster/keys/.ended")
}
