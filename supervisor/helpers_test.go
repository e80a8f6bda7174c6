package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInstallsKeysAndResources(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{index: 3, env: map[string]string{"MINICLUSTER_REJOIN": "false"}})
	// A read-only copy from an earlier run of the container is replaced.
	p.write(t, "/etc/curve/curve.cert", "stale\n", 0o400)
	p.brokers(t, "0 60")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
	for key, installed := range map[string]string{"curve.cert": "/etc/curve/curve.cert", "munge.key": "/etc/munge/munge.key"} {
		info, err := os.Stat(p.root + installed)
		require.NoError(t, err)
		assert.Equalf(t, os.FileMode(0o400), info.Mode().Perm(), "%s mode", installed)
		got, err := os.ReadFile(p.root + installed)
		require.NoError(t, err)
		want, err := os.ReadFile(p.root + "/minicluster/keys/" + key)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	assert.FileExists(t, p.root+"/minicluster/keys/.installed", "the keys container is told")
	assert.Equal(t, []string{"R", "encode", "--hosts=flux-sample-[0-15]", "--local"}, p.call(t, "R"))
	r, err := os.ReadFile(p.root + "/minicluster/run/R")
	require.NoError(t, err)
	assert.Equal(t, "{\"version\": 1, \"fake\": true}\n", string(r))
}

// On the lead, the API's credentials and TLS key the keys container handed over become private
// copies (0400 in directories of 0700), and the API server gets the copies and
// api.tokenLifetime; it is started again when it ends, and stopped with the container.
func TestInstallsTheAPIsCredentials(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_API_PORT": "5000", "MINICLUSTER_API_TLS": "true", "MINICLUSTER_API_TOKEN_LIFETIME": "30m"}})
	for _, f := range []string{"user", "token", "secret-key", "tls.crt", "tls.key"} {
		p.write(t, "/minicluster/keys/api/"+f, "the "+f+"\n", 0o444)
	}
	// The API server the keys container installs: it notes its arguments and its starts, and
	// ends at once the first time.
	p.write(t, "/minicluster/keys/minicluster-api", "#!/bin/sh\necho \"$@\" > "+p.fake+"/api-args\necho >> "+p.fake+"/api-starts\n"+
		"[ $(wc -l < "+p.fake+"/api-starts) -gt 1 ] || exit 3\nexec sleep 60\n", 0o555)
	p.brokers(t, "0 0 30")
	term, wait := p.start(t)
	p.waitSleeping(t, 1, "the broker runs")
	var args []byte
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(p.fake + "/api-starts")
		args, _ = os.ReadFile(p.fake + "/api-args")
		return strings.Count(string(b), "\n") == 2
	}, 10*time.Second, 20*time.Millisecond, "the API server started twice")
	term()
	_, out := wait()
	assert.Contains(t, out, "the API server exited with status 3: starting it again")
	for _, want := range []string{"--listen=:5000", "--credentials=" + p.root + "/minicluster/api/credentials", "--token-lifetime=30m",
		"--tls-cert=" + p.root + "/minicluster/api/tls/tls.crt", "--tls-key=" + p.root + "/minicluster/api/tls/tls.key",
		"--stop-marker=" + p.root + "/minicluster/run/api-stopped", "--hosts=flux-sample-[0-15]"} {
		assert.Contains(t, string(args), want, out)
	}
	for _, dir := range []string{"credentials", "tls"} {
		info, err := os.Stat(p.root + "/minicluster/api/" + dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), dir)
	}
	for f, dir := range map[string]string{"user": "credentials", "token": "credentials", "secret-key": "credentials", "tls.crt": "tls", "tls.key": "tls"} {
		path := p.root + "/minicluster/api/" + dir + "/" + f
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o400), info.Mode().Perm(), path)
		got, _ := os.ReadFile(path)
		assert.Equal(t, "the "+f+"\n", string(got))
	}
}

// Without the credentials the keys container should have handed over, the lead cannot serve
// the API with authentication: it stops, saying where to look, rather than serve without.
func TestAPIWithoutCredentials(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_API_PORT": "5000"}})
	p.brokers(t, "0 60")
	p.cannotStart(t, "the API's credentials were not handed over (api.requireAuth=true)")
}

// The autoscaler and metrics (the lead's): its flags after the supervisor's.
func TestAutoscaler(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_AUTOSCALE": "--autoscale --min-size=1 --max-size=16 --idle=60s",
		"MINICLUSTER_AUTOSCALE_EVERY": "3s", "MINICLUSTER_METRICS_PORT": "9100"}})
	p.write(t, "/minicluster/keys/minicluster-autoscale", "#!/bin/sh\necho \"$@\" > "+p.fake+"/scale-args\nexec sleep 60\n", 0o555)
	p.brokers(t, "0 0 30")
	term, wait := p.start(t)
	var args []byte
	require.Eventually(t, func() bool {
		args, _ = os.ReadFile(p.fake + "/scale-args")
		return len(args) > 0
	}, 10*time.Second, 20*time.Millisecond, "the autoscaler started")
	term()
	wait()
	assert.Equal(t, "--flux="+p.fluxRoot+"/bin/flux --script="+p.root+"/minicluster/scripts/autoscale-state.py --dir="+p.root+"/minicluster/keys/autoscale"+
		" --every=3s --metrics-addr=:9100 --autoscale --min-size=1 --max-size=16 --idle=60s\n", string(args))
}

// The helpers beside the broker: the supervisor waits for each one's .ready, ends on .invalid
// (exit 78: the Job fails) or .failed (exit 1), and holds each one's FIFO .alive open while it
// lives, so that a helper waiting on it ends with the broker's container, not before or after.
func TestWaitsForItsHelpers(t *testing.T) {
	t.Parallel()
	t.Run("ready", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, podOptions{env: map[string]string{"MINICLUSTER_COMMAND": "hostname"}})
		helpers := strings.Fields(p.env["MINICLUSTER_HELPERS"])
		require.Equal(t, []string{p.root + "/minicluster/keys", p.root + "/mnt/flux"}, helpers)
		for _, dir := range helpers {
			require.NoError(t, os.Remove(filepath.Join(dir, ".ready")))
		}
		p.brokers(t, "0 0 1")
		// Each helper reads its FIFO until no writer is left, as flux-keygen and the copy do.
		ended := make(chan string, len(helpers))
		for _, dir := range helpers {
			go func() {
				f, err := os.Open(filepath.Join(dir, ".alive"))
				if err == nil {
					_, _ = f.Read(make([]byte, 1))
					f.Close()
				}
				ended <- dir
			}()
		}
		_, wait := p.start(t)
		time.Sleep(500 * time.Millisecond)
		assert.Empty(t, p.calls(t), "flux ran before the helpers were ready")
		require.NoError(t, os.WriteFile(filepath.Join(helpers[1], ".ready"), nil, 0o444))
		time.Sleep(300 * time.Millisecond)
		assert.Empty(t, p.calls(t), "flux ran before the keys were ready")
		require.NoError(t, os.WriteFile(filepath.Join(helpers[0], ".ready"), nil, 0o444))
		require.Eventually(t, func() bool { return len(p.brokerRuns(t)) == 1 }, 10*time.Second, 20*time.Millisecond)
		select {
		case dir := <-ended:
			t.Fatalf("helper %s ended while the broker's container runs", dir)
		case <-time.After(300 * time.Millisecond):
		}
		status, out := wait()
		assert.Equal(t, 0, status, out)
		assert.FileExists(t, helpers[0]+"/.ended", "the supervisor tells the helpers (in the keys volume) that it ended")
		for range helpers {
			select {
			case <-ended:
			case <-time.After(5 * time.Second):
				t.Fatal("a helper did not see the broker's container end")
			}
		}
	})
	for _, tc := range []struct {
		file, text string
		status     int
	}{
		{".invalid", "Secret ns/flux-sample-curve its curve.cert is not a valid certificate (no curve section)", 78},
		{".failed", "waiting for curve.cert in Secret ns/flux-sample-curve: context deadline exceeded", 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, podOptions{index: 2})
			keys := p.root + "/minicluster/keys"
			require.NoError(t, os.Remove(filepath.Join(keys, ".ready")))
			require.NoError(t, os.WriteFile(filepath.Join(keys, tc.file), []byte(tc.text+"\n"), 0o444))
			status, out := p.run(t)
			assert.Equal(t, tc.status, status, out)
			assert.Contains(t, out, "minicluster[2]: error: "+tc.text)
			assert.Empty(t, p.calls(t), "flux must not run")
			assert.FileExists(t, keys+"/.ended", "the supervisor tells the helpers that it ended")
		})
	}
}

func TestSettings(t *testing.T) {
	s, err := ReadSettings(NewEnviron([]string{"JOB_COMPLETION_INDEX=2", "MINICLUSTER_TASKS=3", "MINICLUSTER_HELPERS=/a /b"}).Value)
	require.NoError(t, err)
	assert.Equal(t, 2, s.Index)
	assert.Equal(t, 3, s.Tasks)
	assert.Equal(t, 78, s.ExitCannotStart)
	assert.Equal(t, []string{"/a", "/b"}, s.Helpers)
	assert.Equal(t, "/tmp/fluxout", s.BatchOutput)
	assert.True(t, s.APIAuth)
	_, err = ReadSettings(NewEnviron([]string{"MINICLUSTER_TASKS=many"}).Value)
	assert.ErrorContains(t, err, `MINICLUSTER_TASKS="many" is not a number`)
}

// A pod of a Job that is not indexed: said, exit 2.
func TestNoIndex(t *testing.T) {
	t.Parallel()
	p := newPod(t, podOptions{env: map[string]string{"JOB_COMPLETION_INDEX": ""}})
	status, out := p.run(t)
	assert.Equal(t, 2, status, out)
	assert.Contains(t, out, "this pod must belong to an indexed Job (JOB_COMPLETION_INDEX is unset)")
}
