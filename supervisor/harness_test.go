package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minicluster/minicluster/internal/fakeflux"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for minicluster-broker's shell-state command: the
// shell of commands.* runs os.Executable(), which is this binary in the tests.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "shell-state" {
		n, _ := strconv.Atoi(os.Args[2])
		if err := ShellState(n, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeFlux stands in for flux (and so for the broker's process). Every call but flux uptime
// writes its arguments, one a line, to $fake/calls/N and its environment to $fake/envs/N.
// `flux uptime` (the readiness watcher's) says the state in $fake/state ("join" without it;
// "crash": it dies of SIGSEGV as flux-core 0.88's does for a user without a name).
// `flux config builtin` answers as flux-core installed at $fake/core would;
// `flux env CMD` runs CMD with FLUX_EXEC_PATH naming $fake/exec; `flux R encode` prints a
// stand-in R and exits with $fake/r-status (default 0).
// Run K of `flux broker` writes its environment to $fake/env.K, its directory to $fake/cwd.K
// and its limit of open files to $fake/nofile.K, and follows line K of $fake/broker, "STATUS [SECONDS [SLEEP [MARK]]]": it moves
// the clock ($fake/clock, the supervisor's Now) SECONDS ahead; leaves in its rundir what a
// worker's rc1 does (MARK joined: "joined"; stopping: "joined" and "stopping"; ended: "joined"
// and command-ended beside the rundir, as the lead's wrapper leaves on every worker); sleeps
// SLEEP seconds (SIGTERM ends that with 143, noted in $fake/signals, unless MARK is deaf: it
// ignores SIGTERM) and exits STATUS. A run with no line exits 97 at once.
const fakeFlux = `#!/bin/sh
fake=@FAKE@
if [ "$1" = uptime ]; then
  state=$(cat "$fake/state" 2>/dev/null || echo join)
  if [ "$state" = crash ]; then kill -SEGV $$; fi
  echo " 12:00:00 $state 1.0s,  owner root,  depth 0,  size 4"
  exit 0
fi
n=$(($(cat "$fake/ncalls" 2>/dev/null || echo 0) + 1))
echo "$n" > "$fake/ncalls"
mkdir -p "$fake/calls" "$fake/envs"
: > "$fake/calls/$n"
for arg in "$@"; do printf '%s\n' "$arg" >> "$fake/calls/$n"; done
env > "$fake/envs/$n"
case $1 in
config)
  case $3 in
  rc1_path) echo 'flux modprobe rc1' ;;
  rc3_path) echo 'flux modprobe rc3' ;;
  confdir) echo "$fake/core/etc/flux" ;;
  shell_pluginpath) echo "$fake/core/lib/flux/shell/plugins" ;;
  shell_initrc) echo "$fake/core/etc/flux/shell/initrc.lua" ;;
  *) exit 1 ;;
  esac
  exit 0
  ;;
env)
  shift
  FLUX_EXEC_PATH=/nonexistent:$fake/exec
  export FLUX_EXEC_PATH
  exec "$@"
  ;;
R)
  echo '{"version": 1, "fake": true}'
  exit "$(cat "$fake/r-status" 2>/dev/null || echo 0)"
  ;;
broker)
  k=$(($(cat "$fake/nbrokers" 2>/dev/null || echo 0) + 1))
  echo "$k" > "$fake/nbrokers"
  line=$(sed -n "${k}p" "$fake/broker")
  env > "$fake/env.$k"
  pwd > "$fake/cwd.$k"
  ulimit -S -n > "$fake/nofile.$k"
  for arg in "$@"; do case $arg in -Srundir=*) rundir=${arg#-Srundir=} ;; esac; done
  if [ -z "$line" ]; then echo "fake flux: no behaviour for broker run $k" >&2; exit 97; fi
  set -- $line
  echo $(($(cat "$fake/clock") + ${2:-0})) > "$fake/clock"
  case ${4:-} in
  joined) : > "$rundir/joined" ;;
  stopping) : > "$rundir/joined" && : > "$rundir/stopping" ;;
  ended) : > "$rundir/joined" && : > "${rundir%/flux}/command-ended" ;;
  esac
  if [ "${3:-0}" -gt 0 ]; then
    if [ "${4:-}" = deaf ]; then
      trap '' TERM
      : > "$fake/sleeping.$k"
      exec sleep "$3"
    fi
    trap 'kill "$child" 2>/dev/null; echo TERM >> "$fake/signals"; exit 143' TERM
    sleep "$3" &
    child=$!
    : > "$fake/sleeping.$k"
    wait "$child"
  fi
  exit "$1"
  ;;
esac
echo "fake flux: unexpected call: $*" >&2
exit 98
`

// pod is one broker container on this machine: its paths under root, the fake flux.
type pod struct {
	root     string
	fake     string
	paths    Paths
	env      map[string]string
	fluxRoot string // the fake flux's prefix: the view, or root
}

// podOptions say what differs from the chart's defaults.
type podOptions struct {
	index int
	env   map[string]string // set (an empty value: unset)
	view  string            // "copy" (the default), "image" or "none" (Flux in the image)
}

// newPod lays out a broker container as the chart's defaults make it (size 4 of maxSize 16,
// Flux from a copy of the view at /mnt/flux, Fluxion), with its helpers ready.
func newPod(t *testing.T, o podOptions) *pod {
	t.Helper()
	p := &pod{root: t.TempDir()}
	p.fake = filepath.Join(p.root, "fake")
	p.paths = DefaultPaths.Under(p.root)
	for _, dir := range []string{p.paths.Config, p.paths.Run, p.paths.Keys, p.paths.Scripts, p.paths.API,
		filepath.Dir(p.paths.MungeKey), p.paths.WrapperDir, p.root + "/etc/curve", p.fake, p.root + "/bin", p.root + "/minicluster/state"} {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	p.write(t, "/minicluster/config/hosts", "flux-sample-[0-15]\n", 0o644)
	p.write(t, "/minicluster/config/size", "4\n", 0o644)
	p.write(t, "/minicluster/keys/curve.cert", "fake curve certificate\n", 0o644)
	p.write(t, "/minicluster/keys/munge.key", "fake munge key\n", 0o644)
	p.write(t, "/fake/clock", "1000\n", 0o644)
	p.write(t, "/fake/broker", "", 0o644)
	p.env = map[string]string{
		"PATH":                          p.root + "/usr/local/sbin:" + p.root + "/bin:/usr/bin:/bin",
		"JOB_COMPLETION_INDEX":          strconv.Itoa(o.index),
		"MINICLUSTER_IMAGE":             "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble",
		"MINICLUSTER_COMMAND":           "",
		"MINICLUSTER_TASKS":             "0",
		"MINICLUSTER_REJOIN":            "true",
		"MINICLUSTER_EXIT_CANNOT_START": "78",
		"MINICLUSTER_LOG_LEVEL":         "6",
		"MINICLUSTER_CONNECT_TIMEOUT":   "5s",
		"MINICLUSTER_CLEANUP_TIMEOUT":   "0s",
		"MINICLUSTER_EPHEMERAL_EXIT":    "fast",
		"MINICLUSTER_SCHEDULER":         "fluxion",
		"MINICLUSTER_CORES":             "0",
		"MINICLUSTER_GPUS":              "0",
		"MINICLUSTER_HELPERS":           p.paths.Keys,
		"MINICLUSTER_FLUX_VIEW_IMAGE":   "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble",
		"MINICLUSTER_CURVE_CERT":        p.root + "/etc/curve/curve.cert",
		"MINICLUSTER_RESOURCE_PATH":     p.root + "/minicluster/run/R",
		"FLUX_URI":                      "local://" + p.root + "/minicluster/run/flux/local",
	}
	bin := p.root + "/bin"
	switch o.view {
	case "", "copy":
		p.env["MINICLUSTER_HELPERS"] += " " + p.root + "/mnt/flux"
		p.env["MINICLUSTER_FLUX_VIEW"] = p.root + "/mnt/flux/view"
		bin = p.root + "/mnt/flux/view/bin"
	case "image":
		p.env["MINICLUSTER_FLUX_VIEW_ROOT"] = p.root + "/mnt/flux"
		bin = fakeflux.LayOutViewImage(t, p.root+"/mnt/flux") + "/bin"
	case "none":
		p.env["MINICLUSTER_FLUX_VIEW_IMAGE"] = ""
	}
	for k, v := range o.env {
		if v == "" {
			delete(p.env, k)
		} else {
			p.env[k] = v
		}
	}
	// The helpers beside the broker have done their part.
	fakeflux.HelpersReady(t, strings.Fields(p.env["MINICLUSTER_HELPERS"]))
	p.fluxRoot = fakeflux.Install(t, bin, fakeFlux, p.fake)
	// The chart's flux wrapper, first on PATH as in an image: never the one to run.
	p.write(t, "/usr/local/sbin/flux", "#!/bin/sh\necho wrapper >> "+p.fake+"/wrapper\nexit 99\n", 0o755)
	return p
}

// write writes a file under the pod's root and returns its path.
func (p *pod) write(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	full := p.root + path
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), mode))
	require.NoError(t, os.Chmod(full, mode))
	return full
}

// brokers says how the successive broker runs end: "STATUS [SECONDS [SLEEP [MARK]]]" each.
func (p *pod) brokers(t *testing.T, runs ...string) {
	t.Helper()
	p.write(t, "/fake/broker", strings.Join(runs, "\n")+"\n", 0o644)
}

// waitSleeping waits until broker run k sleeps, so that a signal sent now reaches that run.
func (p *pod) waitSleeping(t *testing.T, k int, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(p.fake, fmt.Sprintf("sleeping.%d", k)))
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, msgAndArgs...)
}

// start runs the supervisor; term sends it SIGTERM, wait returns its exit code and output.
func (p *pod) start(t *testing.T) (term func(), wait func() (int, string)) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	signals := make(chan os.Signal, 4)
	var env []string
	for k, v := range p.env {
		env = append(env, k+"="+v)
	}
	s := New(env, signals)
	s.P = p.paths
	s.Stdin, s.Stdout, s.Stderr = nil, out, out
	s.dir = p.root
	s.Now = func() time.Time {
		b, _ := os.ReadFile(filepath.Join(p.fake, "clock"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return time.Unix(int64(n), 0)
	}
	code := make(chan int, 1)
	go func() { code <- s.Run() }()
	return func() { signals <- syscall.SIGTERM }, func() (int, string) {
		t.Helper()
		select {
		case c := <-code:
			b, _ := os.ReadFile(out.Name())
			return c, string(b)
		case <-time.After(60 * time.Second):
			b, _ := os.ReadFile(out.Name())
			t.Fatalf("the supervisor did not finish within a minute:\n%s", b)
			return 0, ""
		}
	}
}

// run runs the supervisor to its end.
func (p *pod) run(t *testing.T) (int, string) {
	t.Helper()
	_, wait := p.start(t)
	return wait()
}

// runsOnce runs an ephemeral lead whose one broker run exits 0 and requires exit 0.
func (p *pod) runsOnce(t *testing.T) {
	t.Helper()
	p.brokers(t, "0")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
}

// cannotStart runs the supervisor and requires exit 78 (the Job fails at once) with each of
// want in its output, before any broker ran.
func (p *pod) cannotStart(t *testing.T, want ...string) {
	t.Helper()
	status, out := p.run(t)
	require.Equal(t, 78, status, out)
	for _, w := range want {
		require.Contains(t, out, w)
	}
	require.Empty(t, p.brokerRuns(t))
}

// calls lists the fake flux's calls in order, each as its arguments.
func (p *pod) calls(t *testing.T) [][]string { return fakeflux.Calls(t, p.fake) }

// call is the first call whose first argument is cmd (nil if none).
func (p *pod) call(t *testing.T, cmd string) []string {
	t.Helper()
	for _, c := range p.calls(t) {
		if c[0] == cmd {
			return c
		}
	}
	return nil
}

// brokerRuns are the calls of `flux broker`.
func (p *pod) brokerRuns(t *testing.T) [][]string {
	var runs [][]string
	for _, c := range p.calls(t) {
		if c[0] == "broker" {
			runs = append(runs, c)
		}
	}
	return runs
}

// brokerEnv is the environment run k of the fake broker had.
func (p *pod) brokerEnv(t *testing.T, k int) map[string]string {
	t.Helper()
	return fakeflux.ReadEnv(t, filepath.Join(p.fake, fmt.Sprintf("env.%d", k)))
}

// signalsSeen is what the fake broker's trap noted.
func (p *pod) signalsSeen(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.fake, "signals"))
	if !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	return string(b)
}

// rc3Option is the broker's rc3_path option with broker-rc3.sh's arguments args: rc3.sh with
// the plan and flux-core's rc3 (the fake flux's).
func (p *pod) rc3Option(args string) string {
	return "-Sbroker.rc3_path=trap '' HUP; exec /bin/sh " + p.paths.Scripts + "/broker-rc3.sh " + args +
		" /bin/sh " + p.paths.Scripts + "/rc3.sh '" + p.root + "/minicluster/run/flux/rc3-plan' flux modprobe rc3"
}

// tail is the last n arguments of a run.
func tail(run []string, n int) []string { return run[max(0, len(run)-n):] }
