package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/supervisor"
)

// The broker's container runs its supervisor, minicluster-broker (package supervisor, which has
// its own tests): every broker pod's keys container copies it into the keys volume, and the
// container's command, files/entrypoint.sh, waits for it and execs it.
func TestBrokerRunsTheSupervisor(t *testing.T) {
	for _, set := range [][]string{nil, {"api.enabled=true"}, {"command=hostname", "flux.view.enabled=false"}} {
		job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: set}), "Job", "flux-sample")
		assert.Equal(t, []string{"/bin/sh", "/minicluster/scripts/entrypoint.sh"}, container(t, job, "flux").Command)
		assert.Contains(t, container(t, job, "keys").Args, "--supervisor=/minicluster/keys/minicluster-broker", "every broker pod's keys container copies it: %v", set)
	}
	stub := chartFile(t, "entrypoint.sh")
	assert.LessOrEqual(t, strings.Count(stub, "\n"), 40, "the broker container's shell is a stub")
}

// stubPod lays out the stub's keys volume under a temporary root; the stub's output and status.
func runStub(t *testing.T, prepare func(keys string), later func(keys string)) (int, string, string) {
	t.Helper()
	requireBusybox(t)
	root := t.TempDir()
	keys := filepath.Join(root, "minicluster/keys")
	require.NoError(t, os.MkdirAll(keys, 0o755))
	stub := strings.ReplaceAll(chartFile(t, "entrypoint.sh"), "/minicluster/keys", keys)
	path := filepath.Join(root, "entrypoint.sh")
	require.NoError(t, os.WriteFile(path, []byte(stub), 0o644))
	if prepare != nil {
		prepare(keys)
	}
	cmd := exec.Command(busybox, "sh", path, "an-arg")
	cmd.Env = []string{"JOB_COMPLETION_INDEX=2", "PATH=/usr/bin:/bin"}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	if later != nil {
		time.Sleep(300 * time.Millisecond)
		later(keys)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the stub did not end:\n%s", out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), keys
}

func TestEntrypointStub(t *testing.T) {
	t.Parallel()
	t.Run("waits for the program and execs it", func(t *testing.T) {
		t.Parallel()
		status, out, _ := runStub(t, nil, func(keys string) {
			program := "#!" + busybox + " sh\necho \"supervisor $* $$\"\nexit 7\n"
			require.NoError(t, os.WriteFile(filepath.Join(keys, ".minicluster-broker-tmp"), []byte(program), 0o555))
			require.NoError(t, os.Rename(filepath.Join(keys, ".minicluster-broker-tmp"), filepath.Join(keys, "minicluster-broker")))
		})
		assert.Equal(t, 7, status, out)
		assert.Contains(t, out, "supervisor an-arg ")
	})
	for _, tc := range []struct {
		file   string
		status int
	}{{".failed", 1}, {".invalid", 78}} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			status, out, keys := runStub(t, func(keys string) {
				require.NoError(t, os.WriteFile(filepath.Join(keys, tc.file), []byte("the readiness probe's port: in use\n"), 0o444))
			}, nil)
			assert.Equal(t, tc.status, status, out)
			assert.Equal(t, "minicluster[2]: error: the readiness probe's port: in use\n", out)
			assert.FileExists(t, filepath.Join(keys, ".ended"), "the keys container is told")
		})
	}
}

// The settings the chart gives the broker's container are the ones the supervisor reads, and
// it reads them without error.
func TestSupervisorReadsTheChartsSettings(t *testing.T) {
	known := map[string]bool{}
	_, _ = supervisor.ReadSettings(func(k string) string { known[k] = true; return "" })
	for _, set := range [][]string{
		nil,
		{"command=hostname", "tasks=4"},
		{"api.enabled=true", "api.tls.secretName=tls", "metrics.enabled=true"},
		{"autoscale.enabled=true", "flux.queuePolicy=easy", "flux.wrap=strace", "flux.brokerOptions[0]=-Sa=1", "flux.view.mode=image"},
		{"command=x", "batch.enabled=true", "batch.raw=true", "logging.quiet=true", "logging.strict=true", "logging.debug=true",
			"logging.zeromq=true", "logging.timed=true", "commands.init=a", "commands.pre=b", "commands.brokerPre=c",
			"commands.workerPre=d", "commands.post=e", "commands.prefix=f", "flux.completeWorkers=true"},
		{"flux.state.enabled=true", "flux.state.storageClassName=local-path"},
	} {
		job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: set}), "Job", "flux-sample")
		vars := map[string]string{"JOB_COMPLETION_INDEX": "0"}
		for _, e := range container(t, job, "flux").Env {
			if strings.HasPrefix(e.Name, "MINICLUSTER_") {
				assert.Truef(t, known[e.Name], "%s (values %v) is not a setting the supervisor reads", e.Name, set)
				vars[e.Name] = e.Value
			}
		}
		s, err := supervisor.ReadSettings(func(k string) string { return vars[k] })
		require.NoError(t, err, "values %v", set)
		assert.Equal(t, vars["MINICLUSTER_COMMAND"], s.Command)
	}
}

// R: cores and GPUs per broker from the pod's limits (or values) instead of hwloc's view of the
// node (0: hwloc's); GPUs alone keep the cores the pod sees (the supervisor's TestREncodeArgs).
func TestCoresAndGPUsPerBroker(t *testing.T) {
	for _, tc := range []struct {
		name        string
		set         []string
		cores, gpus string
	}{
		{"hwloc", nil, "0", "0"},
		{"cpu limit", []string{"resources.limits.cpu=3"}, "3", "0"},
		{"millicores", []string{"resources.limits.cpu=1500m"}, "1", "0"},
		{"less than a core", []string{"resources.limits.cpu=250m"}, "1", "0"},
		{"values win", []string{"resources.limits.cpu=3", "flux.coresPerBroker=8"}, "8", "0"},
		{"nvidia GPUs", []string{"resources.limits.cpu=4", "resources.limits.nvidia\\.com/gpu=2"}, "4", "2"},
		{"amd GPU", []string{"resources.limits.cpu=2", "resources.limits.amd\\.com/gpu=1"}, "2", "1"},
		{"declared GPUs", []string{"flux.gpusPerBroker=2", "flux.coresPerBroker=2"}, "2", "2"},
		{"GPUs without a CPU limit", []string{"flux.gpusPerBroker=1"}, "0", "1"},
	} {
		job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: append([]string{"maxSize=4", "command=hostname"}, tc.set...)}), "Job", "flux-sample")
		e := env(container(t, job, "flux"))
		assert.Equal(t, tc.cores, e["MINICLUSTER_CORES"], tc.name)
		assert.Equal(t, tc.gpus, e["MINICLUSTER_GPUS"], tc.name)
	}
}
