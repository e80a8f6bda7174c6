package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Flux Operator's commands.* and logging.quiet and strict.

// commandsPod is a pod whose commands.* scripts note their names in the pod's order file and
// print a line each.
func commandsPod(t *testing.T, index int, env map[string]string) *pod {
	t.Helper()
	p := newPod(t, podOptions{index: index, env: env})
	p.env["MINICLUSTER_COMMAND"] = "hostname"
	for name, key := range map[string]string{"init": "MINICLUSTER_CMD_INIT", "pre": "MINICLUSTER_CMD_PRE", "brokerPre": "MINICLUSTER_CMD_BROKER_PRE",
		"workerPre": "MINICLUSTER_CMD_WORKER_PRE", "post": "MINICLUSTER_CMD_POST"} {
		p.env[key] = "echo " + name + " >> " + filepath.Join(p.root, "order") + "; echo out-of-" + name
	}
	return p
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

func TestCommandsOrder(t *testing.T) {
	t.Parallel()
	lead := commandsPod(t, 0, nil)
	lead.runsOnce(t)
	assert.Equal(t, []string{"init", "pre", "brokerPre", "post"}, readOrder(t, lead))

	// Without rejoin (no Job successPolicy), a worker whose instance ends exits, running post.
	worker := commandsPod(t, 1, map[string]string{"MINICLUSTER_REJOIN": "false"})
	worker.runsOnce(t)
	assert.Equal(t, []string{"init", "pre", "workerPre", "post"}, readOrder(t, worker))
}

// logging.quiet: the lead's log holds the command's and post's output alone.
func TestQuiet(t *testing.T) {
	t.Parallel()
	p := commandsPod(t, 0, map[string]string{"MINICLUSTER_QUIET": "true"})
	p.brokers(t, "0")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
	assert.Equal(t, "out-of-post\n", out, "quiet: only commands.post's output")
	assert.Equal(t, []string{"init", "pre", "brokerPre", "post"}, readOrder(t, p))
	assert.Contains(t, p.brokerRuns(t)[0], "-Slog-stderr-level=0")

	loud := commandsPod(t, 0, nil)
	loud.brokers(t, "0")
	_, out = loud.run(t)
	for _, want := range []string{"out-of-init", "out-of-pre", "out-of-brokerPre", "out-of-post", "minicluster[0]: "} {
		assert.Contains(t, out, want)
	}
}

// logging.strict: a failing script ends the pod with its status; without it the broker starts.
func TestStrict(t *testing.T) {
	t.Parallel()
	env := map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_CMD_PRE": "echo x; sh -c 'exit 5'", "MINICLUSTER_STRICT": "true"}
	p := newPod(t, podOptions{env: env})
	status, out := p.run(t)
	assert.Equal(t, 5, status, out)
	assert.Contains(t, out, "commands.pre failed with status 5 (logging.strict)")
	assert.Empty(t, p.brokerRuns(t))

	delete(env, "MINICLUSTER_STRICT")
	lax := newPod(t, podOptions{env: env})
	lax.brokers(t, "0")
	status, out = lax.run(t)
	assert.Equal(t, 0, status, out)
	assert.Contains(t, out, "commands.pre failed with status 5 (ignored: logging.strict is off)")
	assert.Len(t, lax.brokerRuns(t), 1)
}

// commands.init and pre run in one shell, as in the operator's script: what they export and
// set, the directory they cd to and their umask reach the broker (and so the command); unset
// variables and source work as in a shell of their own; an exit ends the container.
func TestCommandsShareTheShell(t *testing.T) {
	t.Parallel()
	vars := filepath.Join(t.TempDir(), "vars.sh")
	require.NoError(t, os.WriteFile(vars, []byte("export MARK_SOURCED=yes\n"), 0o644))
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname",
		"MINICLUSTER_CMD_INIT": "export MARK_INIT=init; MARK_LOCAL=local$MARK_UNSET; unset MINICLUSTER_IMAGE",
		"MINICLUSTER_CMD_PRE":  "cd / && export MARK_PRE=$MARK_LOCAL-$MARK_INIT && source " + vars + "\nexport MARK_PATH=$PATH",
	}})
	p.runsOnce(t)
	env := p.brokerEnv(t, 1)
	assert.Equal(t, "init", env["MARK_INIT"], "init's export")
	assert.Equal(t, "local-init", env["MARK_PRE"], "pre sees init's variables")
	assert.Equal(t, "yes", env["MARK_SOURCED"], "pre's source")
	assert.NotContains(t, env, "MINICLUSTER_IMAGE", "init's unset")
	assert.NotContains(t, env, "MARK_LOCAL", "not exported")
	assert.True(t, strings.HasPrefix(env["MARK_PATH"], p.fluxRoot+"/bin:"), "pre runs with Flux on PATH: %s", env["MARK_PATH"])
	cwd, err := os.ReadFile(filepath.Join(p.fake, "cwd.1"))
	require.NoError(t, err)
	assert.Equal(t, "/\n", string(cwd), "pre's cd")

	exit := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_CMD_PRE": "exit 4"}})
	status, out := exit.run(t)
	assert.Equal(t, 4, status, out)
	assert.Empty(t, exit.brokerRuns(t))
	assert.FileExists(t, exit.root+"/minicluster/keys/.ended")

	initExit := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_CMD_INIT": "echo bye; exit 6"}})
	status, out = initExit.run(t)
	assert.Equal(t, 6, status, out)
	assert.Equal(t, "bye\n", out)
}

// A ulimit in commands.pre reaches the broker, as it would from the operator's script.
func TestCommandsLimits(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname", "MINICLUSTER_CMD_PRE": "ulimit -S -n 4000"}})
	p.brokers(t, "0")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
	b, err := os.ReadFile(filepath.Join(p.fake, "nofile.1"))
	require.NoError(t, err)
	assert.Equal(t, "4000\n", string(b))
}
