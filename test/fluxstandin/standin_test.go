package fluxstandin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeConfig(t *testing.T, toml string) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "broker.toml"), toml, 0o644)
	return dir
}

func TestLoadConfig(t *testing.T) {
	dir := writeConfig(t, `[bootstrap]
curve_cert = "/etc/curve/curve.cert"
default_port = 8050
default_bind = "tcp://eth0:%p"
default_connect = "tcp://%h.flux-sample.default.svc.cluster.local:%p"
hosts = [{ host = "flux-sample-[0-2]" }, { host = "login", bind = "tcp://*:9000", connect = "tcp://10.0.0.1:9000", parent = "flux-sample-0" }]

[resource]
path = "/minicluster/run/R"
noverify = true

[access]
allow-guest-user = true
`)
	cfg, err := LoadConfig(dir)
	require.NoError(t, err)
	assert.Equal(t, "/etc/curve/curve.cert", cfg.CurveCert)
	require.Len(t, cfg.Hosts, 4)
	assert.Equal(t, Host{Name: "flux-sample-2", Bind: "tcp://eth0:8050", Connect: "tcp://flux-sample-2.flux-sample.default.svc.cluster.local:8050"}, cfg.Hosts[2])
	assert.Equal(t, Host{Name: "login", Bind: "tcp://*:9000", Connect: "tcp://10.0.0.1:9000", Parent: "flux-sample-0"}, cfg.Hosts[3])

	parents, err := topology(cfg.Hosts, map[string]string{"tbon.topo": "kary:1"})
	require.NoError(t, err)
	assert.Equal(t, []int{-1, 0, 1, 0}, parents, "kary:1 is a chain; an explicit parent wins")
}

func TestLoadConfigRejects(t *testing.T) {
	for _, tc := range []struct{ name, toml, want string }{
		{"unknown bootstrap key", "[bootstrap]\ncurve_cert = \"c\"\ndefault_port = 1\ntypo = 1\nhosts = [{ host = \"a\" }]\n", `unknown key "bootstrap.typo"`},
		{"unknown hosts key", "[bootstrap]\ndefault_port = 1\nhosts = [{ host = \"a\", port = 3 }]\n", `unknown key "bootstrap.hosts.port"`},
		{"wrong type", "[bootstrap]\ndefault_port = \"8050\"\nhosts = [{ host = \"a\" }]\n", "default_port"},
		{"no bootstrap", "[resource]\nnoverify = true\n", "no [bootstrap] table"},
		{"%p without port", "[bootstrap]\ncurve_cert = \"c\"\ndefault_bind = \"tcp://eth0:%p\"\nhosts = [{ host = \"a-[0-1]\" }]\n", "default_port is not set"},
		{"bad hostlist", "[bootstrap]\ncurve_cert = \"c\"\nhosts = [{ host = \"a-[1-\" }]\n", `hostlist "a-[1-"`},
		{"duplicate host", "[bootstrap]\ncurve_cert = \"c\"\nhosts = [{ host = \"a-[0-1]\" }, { host = \"a-1\" }]\n", `"a-1" is listed twice`},
		{"no cert", "[bootstrap]\nhosts = [{ host = \"a-[0-1]\" }]\n", "curve_cert is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.toml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoadCert(t *testing.T) {
	dir := t.TempDir()
	good := certText(t)
	c, err := LoadCert(writeFile(t, filepath.Join(dir, "ok"), good, 0o400))
	require.NoError(t, err)
	assert.Len(t, c.Public, 32)
	_, err = LoadCert(writeFile(t, filepath.Join(dir, "ok600"), good, 0o600))
	assert.NoError(t, err)

	for _, mode := range []os.FileMode{0o440, 0o404, 0o644} {
		_, err := LoadCert(writeFile(t, filepath.Join(dir, fmt.Sprintf("m%o", mode)), good, mode))
		require.Error(t, err, "mode %o", mode)
		assert.Contains(t, err.Error(), "readable by group/other")
	}
	other := certText(t)
	otherSecret := other[strings.Index(other, "secret-key"):]
	mixed := good[:strings.Index(good, "secret-key")] + otherSecret
	_, err = LoadCert(writeFile(t, filepath.Join(dir, "mixed"), mixed, 0o400))
	assert.ErrorContains(t, err, "does not match")
	_, err = LoadCert(writeFile(t, filepath.Join(dir, "nocurve"), "metadata\n    name = \"x\"\n", 0o400))
	assert.ErrorContains(t, err, "no curve section")
	_, err = LoadCert(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

func TestREncode(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"R", "encode", "--hosts=flux-sample-[0-5]", "--local"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	var r struct {
		Version   int
		Execution struct {
			RLite    []struct{ Rank string } `json:"R_lite"`
			Nodelist []string
		}
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, 1, r.Version)
	assert.Equal(t, "0-5", r.Execution.RLite[0].Rank)
	assert.Equal(t, []string{"flux-sample-[0-5]"}, r.Execution.Nodelist)

	assert.Equal(t, 1, Main(context.Background(), []string{"R", "decode"}, &out, &errOut))
	assert.Equal(t, 1, Main(context.Background(), []string{"kvs", "get"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "wiring check, not Flux")
}

// Six brokers, kary:2: every rank connects to (r-1)/2, rank 0 runs the program once all are
// up, and every broker exits 0 while rank 0 exits with the program's status.
func TestInstanceRunsInitialProgram(t *testing.T) {
	in := newInstance(t, 6)
	for r := 5; r >= 1; r-- { // workers first: they retry until their parents listen
		in.start(r, "-Stbon.connect_timeout=10s")
	}
	in.start(0, "-Sbroker.quorum=6", "-Slog-stderr-level=6", "/bin/sh", "-c", "echo hello from the lead; exit 3")
	assert.Equal(t, 3, in.wait(0, 15*time.Second))
	for r := 1; r < 6; r++ {
		assert.Equal(t, 0, in.wait(r, 5*time.Second), "rank %d", r)
		assert.Contains(t, in.logs[r].String(), fmt.Sprintf("rank %d connected to parent rank %d (host-%d)", r, (r-1)/2, (r-1)/2))
	}
	assert.Contains(t, in.out.String(), "hello from the lead\n")
	assert.Contains(t, in.logs[0].String(), "quorum reached: 6 of 6 brokers online")
}

// flux submit as the initial program runs its tasks on every node and relays their output.
func TestSubmitRunsTasksOnEveryRank(t *testing.T) {
	in := newInstance(t, 4)
	for r := 1; r < 4; r++ {
		in.start(r, "-Stbon.topo=kary:1")
	}
	in.start(0, "-Stbon.topo=kary:1", "flux", "submit", "--quiet", "--watch", "-N", "4", "-n", "8",
		"/bin/sh", "-c", `echo "task $FLUX_TASK_RANK on rank $FLUX_STANDIN_BROKER_RANK"; [ $FLUX_TASK_RANK != 5 ] || exit 7`)
	assert.Equal(t, 7, in.wait(0, 15*time.Second), "the highest task status")
	for r := 1; r < 4; r++ {
		assert.Equal(t, 0, in.wait(r, 5*time.Second))
	}
	for task := range 8 {
		assert.Contains(t, in.out.String(), fmt.Sprintf("task %d on rank %d\n", task, task%4))
	}
	assert.Contains(t, in.logs[3].String(), "rank 3 connected to parent rank 2 (host-2)")
}

// Rank 0 waits for broker.quorum brokers, counting those reported through the tree.
func TestQuorum(t *testing.T) {
	in := newInstance(t, 5)
	in.start(0, "-Sbroker.quorum=4", "/bin/sh", "-c", "echo quorum program ran")
	in.start(1)
	in.start(3) // child of 1
	in.waitLog(0, "online: 3 of 5", 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	assert.NotContains(t, in.out.String(), "quorum program ran", "3 of quorum 4 must not start the program")
	in.start(4) // child of 1 as well: the fourth broker
	assert.Equal(t, 0, in.wait(0, 10*time.Second))
	assert.Contains(t, in.out.String(), "quorum program ran")
	for _, r := range []int{1, 3, 4} {
		assert.Equal(t, 0, in.wait(r, 5*time.Second))
	}
}

// Interactive: no program (rc2_none) keeps the instance up until it is stopped.
func TestInteractiveStaysUp(t *testing.T) {
	in := newInstance(t, 2)
	in.start(0, "-Sbroker.rc2_none=1", "/bin/sh", "-c", "echo must not run")
	in.start(1)
	in.waitLog(1, "rank 1 connected to parent rank 0", 10*time.Second)
	in.waitLog(0, "staying up until SIGTERM", 5*time.Second)
	select {
	case code := <-in.codes[0]:
		t.Fatalf("interactive rank 0 exited with %d", code)
	case <-time.After(300 * time.Millisecond):
	}
	in.cancel()
	assert.Equal(t, 143, in.wait(0, 2*time.Second))
	assert.Equal(t, 143, in.wait(1, 2*time.Second))
	assert.NotContains(t, in.out.String(), "must not run")
}

// A broker with another certificate is refused by its parent, and says so.
func TestWrongCertificateIsRefused(t *testing.T) {
	in := newInstance(t, 2)
	in.start(0, "-Sbroker.rc2_none=1")
	// rank 1 reads a copy of broker.toml that points at a different certificate
	other := newInstance(t, 1)
	data, err := os.ReadFile(filepath.Join(in.dir, "broker.toml"))
	require.NoError(t, err)
	writeFile(t, filepath.Join(other.dir, "broker.toml"), strings.Replace(string(data), in.cert, other.cert, 1), 0o644)
	opts, err := parseBrokerArgs([]string{"--config-path=" + other.dir})
	require.NoError(t, err)
	logs := &syncBuffer{}
	opts.Hostname, opts.Stdout, opts.Stderr = "host-1", logs, logs
	assert.Equal(t, 1, RunBroker(context.Background(), opts))
	assert.Contains(t, logs.String(), "does not hold this instance's CURVE certificate")
	in.waitLog(0, "rejected a connection", time.Second)
}

func TestBrokerRefusesBadSetup(t *testing.T) {
	in := newInstance(t, 2)
	run := func(host string, args ...string) string {
		opts, err := parseBrokerArgs(append([]string{"--config-path=" + in.dir}, args...))
		require.NoError(t, err)
		logs := &syncBuffer{}
		opts.Hostname, opts.Stdout, opts.Stderr = host, logs, logs
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.Equal(t, 1, RunBroker(ctx, opts), logs.String())
		return logs.String()
	}
	assert.Contains(t, run("elsewhere"), `hostname "elsewhere" is not in bootstrap.hosts`)
	assert.Contains(t, run("host-1", "-Stbon.connect_timeout=0.3s"), "no connection to parent rank 0")
	assert.Contains(t, run("host-0", "-Sbroker.quorum=3"), "broker.quorum")
	assert.Contains(t, run("host-0", "-Stbon.topo=binomial"), "kary:K only")
	require.NoError(t, os.Chmod(in.cert, 0o440))
	assert.Contains(t, run("host-0"), "readable by group/other")
}

// The real program (the test binary as `flux`) exits promptly with 143 on SIGTERM.
func TestSIGTERMStopsBrokerProcess(t *testing.T) {
	in := newInstance(t, 2)
	var logs syncBuffer
	cmd := exec.Command("flux", "broker", "--config-path="+in.dir, "-Sbroker.rc2_none=1")
	cmd.Env = append(os.Environ(), "FLUX_STANDIN_HOSTNAME=host-1.example.org")
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	time.Sleep(300 * time.Millisecond) // rank 1 is now retrying its parent
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, 143, exitCode(err), logs.String())
	assert.Contains(t, logs.String(), "waiting for parent rank 0", "the short name host-1 found rank 1")
}

func TestParseBrokerArgs(t *testing.T) {
	opts, err := parseBrokerArgs([]string{"--config-path=/c", "-Sbroker.quorum=4", "-S", "a=b", "--setattr=x=y",
		"flux", "submit", "-N", "4", "/bin/sh", "-c", "hostname"})
	require.NoError(t, err)
	assert.Equal(t, "/c", opts.ConfigPath)
	assert.Equal(t, map[string]string{"broker.quorum": "4", "a": "b", "x": "y"}, opts.Attrs)
	assert.Equal(t, []string{"flux", "submit", "-N", "4", "/bin/sh", "-c", "hostname"}, opts.Program)
	_, err = parseBrokerArgs([]string{"--config-path=/c", "-Snovalue"})
	assert.ErrorContains(t, err, "-Snovalue")
	_, err = parseBrokerArgs([]string{"--config-path=/c", "--bogus"})
	assert.ErrorContains(t, err, "--bogus")
	d, err := parseFSD("0.5m")
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, d)
	d, err = parseFSD("250ms")
	require.NoError(t, err)
	assert.Equal(t, 250*time.Millisecond, d)
}
