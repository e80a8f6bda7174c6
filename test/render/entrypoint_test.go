package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/internal/tooltest"
)

// busybox runs the rendered scripts, as the images' /bin/sh would.
const busybox = "/usr/bin/busybox"

// podPaths are the absolute paths the rendered entrypoint uses; the tests move them under a
// temporary root.
var podPaths = []string{"/minicluster/config", "/minicluster/run", "/minicluster/keys",
	"/minicluster/scripts", "/minicluster/state", "/minicluster/api", "/etc/curve", "/etc/munge", "/usr/local/sbin"}

// fakeFlux stands in for flux. Every call's arguments go, one per line, to $fake/calls/N.
// `flux env CMD` runs CMD with FLUX_EXEC_PATH naming $fake/exec.
// `flux R encode` prints a stand-in R and exits with the status in $fake/r-status (default 0);
// `flux config builtin rc1_path` and `rc3_path` print flux-core's, `confdir` and
// `shell_pluginpath` flux-core's prefix $fake/core. `flux uptime` says the broker state in
// $fake/state ("join" without it; "crash": it dies of SIGSEGV, as flux-core 0.88's does for a
// user without a name) and is not listed as a call. Every call writes its environment to
// $fake/envs/N; run K of `flux broker` to $fake/env.K too.
// Run K writes its working directory to $fake/cwd.K.
// Run K of `flux broker` follows line K of $fake/broker: "STATUS [SECONDS [SLEEP [MARK]]]": it
// moves the fake clock ($fake/clock, which the script's date reads) SECONDS ahead; leaves in its
// rundir what a worker's rc1 does: "joined" when MARK is joined, "joined" and "stopping" when
// it is stopping; "command-ended" beside the rundir when it is ended (what the lead's wrapper
// leaves on every worker after the command succeeded); really sleeps SLEEP seconds (SIGTERM ends that with 143, noted in
// $fake/signals, unless MARK is deaf: a broker that ignores it) and exits STATUS. A run with no
// line kills the script, so a test that expected it to stop earlier fails at once.
const fakeFlux = `#!/usr/bin/busybox sh
fake=@FAKE@
if [ "$1" = uptime ]; then # the readiness watcher's question, not a call the tests list
  state=$(cat "$fake/state" 2>/dev/null || echo join)
  if [ "$state" = crash ]; then exit 139; fi
  echo " 12:00:00 $state 1.0s,  owner root,  depth 0,  size 4"
  exit 0
fi
n=$(($(cat "$fake/ncalls" 2>/dev/null || echo 0) + 1))
echo "$n" > "$fake/ncalls"
mkdir -p "$fake/calls"
: > "$fake/calls/$n"
for arg in "$@"; do printf '%s\n' "$arg" >> "$fake/calls/$n"; done
mkdir -p "$fake/envs"
env > "$fake/envs/$n"
case $1 in
config)
  case $3 in
  rc1_path) echo 'flux modprobe rc1' ;;
  rc3_path) echo 'flux modprobe rc3' ;;
  confdir) echo "$fake/core/etc/flux" ;;
  shell_pluginpath) echo "$fake/core/lib/flux/shell/plugins" ;;
  *) echo "fake flux: unexpected builtin $3" >&2; exit 1 ;;
  esac
  exit 0
  ;;
env)
  # flux env: Flux's environment, whose FLUX_EXEC_PATH holds $fake/exec (flux-broker).
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
  for arg in "$@"; do case $arg in -Srundir=*) rundir=${arg#-Srundir=} ;; esac; done
  if [ -z "$line" ]; then
    echo "fake flux: no behaviour for broker run $k" >&2
    kill -KILL "$PPID"
    exit 99
  fi
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

// fakeDate replaces busybox's date applet (which ash runs whatever PATH says) for `date +%s`.
const fakeDate = `date() { if [ "$*" = +%s ]; then cat @FAKE@/clock; else command date "$@"; fi; }
`

// pod is one broker pod's entrypoint, ready to run on this machine.
type pod struct {
	root   string // stands for / of the pod: podPaths live under it
	fake   string // the fake flux's files
	script string
	env    []string
	// fluxRoot is the prefix of the fake flux: the view, or / of the pod.
	fluxRoot string
}

func requireBusybox(t *testing.T) {
	t.Helper()
	tooltest.File(t, busybox, "install the Debian package busybox-static (make deps)")
}

// newPod renders the chart and lays out pod index's files: the broker ConfigMap, a curve
// certificate and a munge key, entrypoint.sh, env.sh and flux (also at /usr/local/sbin/flux,
// first on PATH, as in an image) with their paths under a temporary root, the fake flux in the
// flux view's bin (or else in /bin, on PATH) and the Job container's environment.
func newPod(t *testing.T, opts helmtest.Options, index int) *pod {
	t.Helper()
	requireBusybox(t)
	objs := render(t, opts)
	scripts := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-entrypoint")
	config := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")

	p := &pod{root: t.TempDir()}
	p.fake = filepath.Join(p.root, "fake")
	moved := func(s string) string {
		for _, path := range append(podPaths, "/mnt/flux") {
			s = strings.ReplaceAll(s, path, p.root+path)
		}
		return s
	}
	for _, path := range append(podPaths, "/fake", "/bin") {
		require.NoError(t, os.MkdirAll(p.root+path, 0o755))
	}
	for k, v := range config.Data {
		p.write(t, "/minicluster/config/"+k, v, 0o644)
	}
	p.write(t, "/minicluster/keys/curve.cert", "fake curve certificate\n", 0o644)
	p.write(t, "/minicluster/keys/munge.key", "fake munge key\n", 0o644)
	p.write(t, "/fake/clock", "1000\n", 0o644)
	p.write(t, "/fake/broker", "", 0o644)
	p.write(t, "/minicluster/scripts/env.sh", moved(scripts.Data["env.sh"]), 0o555)
	p.write(t, "/minicluster/scripts/helpers.sh", moved(scripts.Data["helpers.sh"]), 0o555)
	p.write(t, "/minicluster/scripts/rc3.sh", moved(scripts.Data["rc3.sh"]), 0o555)
	p.write(t, "/minicluster/scripts/broker-rc3.sh", moved(scripts.Data["broker-rc3.sh"]), 0o555)
	wrapper := strings.Replace(moved(scripts.Data["flux"]), "#!/bin/sh\n", "#!"+busybox+" sh\n", 1)
	require.True(t, strings.HasPrefix(wrapper, "#!"+busybox), "flux starts with #!/bin/sh")
	p.write(t, "/minicluster/scripts/flux", wrapper, 0o555)
	p.write(t, "/usr/local/sbin/flux", wrapper, 0o555)
	entrypoint := moved(scripts.Data["entrypoint.sh"])
	shebang, rest, ok := strings.Cut(entrypoint, "\n")
	require.True(t, ok && strings.HasPrefix(shebang, "#!"), "entrypoint.sh starts with a #! line")
	p.script = p.write(t, "/minicluster/scripts/entrypoint.sh",
		shebang+"\n"+strings.ReplaceAll(fakeDate, "@FAKE@", p.fake)+rest, 0o555)

	var flux *corev1.Container
	for i := range job.Spec.Template.Spec.Containers {
		if c := &job.Spec.Template.Spec.Containers[i]; c.Name == "flux" {
			flux = c
		}
	}
	require.NotNil(t, flux, "the Job has a flux container")
	p.env = []string{"PATH=" + p.root + "/usr/local/sbin:" + p.root + "/bin", "JOB_COMPLETION_INDEX=" + strconv.Itoa(index)}
	view := ""
	for _, e := range flux.Env {
		if strings.HasPrefix(e.Name, "MINICLUSTER_") || e.Name == "FLUX_URI" {
			require.Nilf(t, e.ValueFrom, "%s is a plain value", e.Name)
			p.env = append(p.env, e.Name+"="+moved(e.Value))
			if e.Name == "MINICLUSTER_FLUX_VIEW" && e.Value != "" {
				view = moved(e.Value)
			}
			if e.Name == "MINICLUSTER_FLUX_VIEW_ROOT" && e.Value != "" {
				view = layOutViewImage(t, moved(e.Value))
			}
		}
	}
	// The helpers beside the broker (the keys step, the copy of the view) have done their part.
	for _, dir := range strings.Fields(p.envValue(t, "MINICLUSTER_HELPERS")) {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, ".alive"), 0o666))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".ready"), nil, 0o444))
	}
	// Flux comes from the view when there is one, as in the pod; else from PATH.
	bin := p.root + "/bin"
	if view != "" {
		bin = view + "/bin"
	}
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "flux"), []byte(strings.ReplaceAll(fakeFlux, "@FAKE@", p.fake)), 0o755))
	// Fluxion beside flux-core, as in a spack view (or an image's Flux prefix).
	p.fluxRoot = filepath.Dir(bin)
	modprobe := filepath.Join(p.fluxRoot, "etc/flux/modprobe/modprobe.d")
	require.NoError(t, os.MkdirAll(modprobe, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(modprobe, "fluxion.toml"), []byte("[[modules]]\n"), 0o644))
	return p
}

// layOutViewImage lays out the real flux-view layout under an image volume's root and returns
// its view tree: /opt/view -> views/view (relative) -> /opt/views/._view/HASH (absolute, so
// relative to the image's root, not the pod's).
func layOutViewImage(t *testing.T, root string) string {
	t.Helper()
	tree := root + "/opt/views/._view/we5objnsiatpq6byzpmusld4dbiclpmt"
	require.NoError(t, os.MkdirAll(tree, 0o755))
	require.NoError(t, os.Symlink("views/view", root+"/opt/view"))
	require.NoError(t, os.Symlink("/opt/views/._view/we5objnsiatpq6byzpmusld4dbiclpmt", root+"/opt/views/view"))
	return tree
}

// write writes a file under the pod's root and returns its path.
func (p *pod) write(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	full := p.root + path
	require.NoError(t, os.WriteFile(full, []byte(content), mode))
	require.NoError(t, os.Chmod(full, mode))
	return full
}

// brokers says how the successive broker runs end: "STATUS [SECONDS [SLEEP]]" each.
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

// start starts the entrypoint; wait returns its exit status and output.
func (p *pod) start(t *testing.T) (cmd *exec.Cmd, wait func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd = exec.CommandContext(ctx, busybox, "sh", p.script)
	cmd.Dir = p.root
	cmd.Env = p.env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	return cmd, func() (int, string) {
		defer cancel()
		err := cmd.Wait()
		require.NoError(t, ctx.Err(), "entrypoint.sh did not finish within a minute:\n%s", out.String())
		if err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("run entrypoint.sh: %v", err)
			}
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
}

// run runs the entrypoint to its end.
func (p *pod) run(t *testing.T) (int, string) {
	t.Helper()
	_, wait := p.start(t)
	return wait()
}

// calls lists the fake flux's calls in order, each as its arguments.
func (p *pod) calls(t *testing.T) [][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(p.fake, "calls", "*"))
	require.NoError(t, err)
	sort.Slice(files, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(files[i]))
		b, _ := strconv.Atoi(filepath.Base(files[j]))
		return a < b
	})
	var calls [][]string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		calls = append(calls, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
	}
	return calls
}

// brokerRuns is the calls of `flux broker`.
// runsOnce runs the entrypoint of an ephemeral lead whose one broker run exits 0, and requires
// it to exit 0.
func (p *pod) runsOnce(t *testing.T) {
	t.Helper()
	p.brokers(t, "0")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
}

// cannotStart runs the entrypoint and requires it to exit 78 (the Job fails at once) with each
// of want in its output, before any broker ran.
func (p *pod) cannotStart(t *testing.T, want ...string) {
	t.Helper()
	status, out := p.run(t)
	assert.Equal(t, 78, status, out)
	for _, w := range want {
		assert.Contains(t, out, w)
	}
	assert.Empty(t, p.brokerRuns(t))
}

// call is the first call of the fake flux whose first argument is cmd (nil if none).
func (p *pod) call(t *testing.T, cmd string) []string {
	t.Helper()
	for _, c := range p.calls(t) {
		if c[0] == cmd {
			return c
		}
	}
	return nil
}

func (p *pod) brokerRuns(t *testing.T) [][]string {
	var runs [][]string
	for _, c := range p.calls(t) {
		if c[0] == "broker" {
			runs = append(runs, c)
		}
	}
	return runs
}

func TestEntrypointInteractiveLead(t *testing.T) {
	t.Parallel()
	// A tree, so that the broker gets its shape (flat, the default, needs no option).
	p := newPod(t, helmtest.Options{Set: []string{"flux.topology=kary:8"}}, 0)
	p.brokers(t, "0 60", "0 0 30")
	cmd, wait := p.start(t)
	p.waitSleeping(t, 2, "the broker starts again after it exits 0")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	status, out := wait()
	assert.Equal(t, 143, status, out)
	assert.Contains(t, out, "minicluster[0]: lead broker: 4 of hosts flux-sample-[0-15], quorum 4")
	assert.Contains(t, out, "the instance ended: starting the broker again to rejoin the lead")
	assert.Contains(t, out, "SIGTERM: stopping the broker")
	signals, err := os.ReadFile(filepath.Join(p.fake, "signals"))
	require.NoError(t, err, "the broker got no SIGTERM")
	assert.Equal(t, "TERM\n", string(signals))

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

func TestEntrypointEphemeralLeadExitsWithTheCommandsStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  []string
		tail []string
	}{
		{"command", []string{"command=hostname -s"}, []string{"/bin/sh", "-c", "hostname -s"}},
		{"tasks", []string{"command=hostname", "tasks=8"},
			[]string{"flux", "submit", "--quiet", "--watch", "-N", "4", "-n", "8", "/bin/sh", "-c", "hostname"}},
	} {
		for _, exit := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s exit %d", tc.name, exit), func(t *testing.T) {
				t.Parallel()
				p := newPod(t, helmtest.Options{Set: tc.set}, 0)
				p.brokers(t, fmt.Sprintf("%d 30", exit))
				status, out := p.run(t)
				assert.Equal(t, exit, status, out)
				assert.Contains(t, out, fmt.Sprintf("the command ended with status %d", exit))
				runs := p.brokerRuns(t)
				require.Len(t, runs, 1, "an ephemeral lead runs its command once")
				assert.NotContains(t, runs[0], "-Sbroker.rc2_none=1")
				assert.Equal(t, tc.tail, runs[0][len(runs[0])-len(tc.tail):])
			})
		}
	}
}

// flux.view.mode=image: env.sh follows /opt/view's links inside the mounted view image (one
// relative, one absolute to the image's root) and runs Flux from the view tree they reach.
func TestEntrypointViewImage(t *testing.T) {
	t.Parallel()
	t.Run("follows the links", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"command=hostname -s", "flux.view.mode=image"}}, 0)
		require.Contains(t, p.env, "MINICLUSTER_FLUX_VIEW=")
		p.brokers(t, "0 30")
		status, out := p.run(t)
		assert.Equal(t, 0, status, out)
		require.Len(t, p.brokerRuns(t), 1, "flux from the view tree ran the broker:\n%s", out)
	})
	t.Run("no view in the image", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"command=hostname -s", "flux.view.mode=image"}}, 0)
		root := p.envValue(t, "MINICLUSTER_FLUX_VIEW_ROOT")
		require.NoError(t, os.RemoveAll(root+"/opt"))
		status, out := p.run(t)
		assert.Equal(t, 78, status, out)
		assert.Contains(t, out, "error: flux is not in the flux view at "+root+"/opt/view/bin: set flux.view.image")
	})
}

func TestEntrypointWorker(t *testing.T) {
	t.Parallel()
	t.Run("rejoins", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{}, 2)
		p.brokers(t, "0 60", "0 60", "1", "1", "1")
		status, out := p.run(t)
		assert.Equal(t, 78, status, out)
		assert.Len(t, p.brokerRuns(t), 5, out)
		assert.Equal(t, 2, strings.Count(out, "minicluster[2]: the instance ended: starting the broker again to rejoin the lead"), out)
		assert.NotContains(t, out, "lead broker")
	})
	t.Run("without successPolicy ends with the instance", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"command=hostname"}, KubeVersion: "v1.30.0"}, 1)
		require.Contains(t, p.env, "MINICLUSTER_REJOIN=false")
		p.brokers(t, "0 60")
		status, out := p.run(t)
		assert.Equal(t, 0, status, out)
		assert.Contains(t, out, "minicluster[1]: the instance ended\n")
		assert.Len(t, p.brokerRuns(t), 1)
	})
}

// Readiness: .online once the broker is in Flux's run state. Once rc1 has ended
// (modprobe-rc1.py's rc1-done), the process rc1 left behind says "run" on online.fifo (written
// here, as it would); "poll" where it cannot tell, and then flux uptime says the state (every
// 0.2 s); where flux uptime crashes, the end of rc1 is the sign. Nothing before rc1 ends.
func TestEntrypointSaysWhenFluxCountsTheBrokerOnline(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		index         int
		said          string // on online.fifo
		before, after string // flux uptime's state before and after
	}{
		{name: "lead", index: 0, said: "run", before: "quorum", after: "quorum"},
		{name: "worker", index: 3, said: "run", before: "quorum", after: "quorum"},
		{name: "poll", index: 3, said: "poll", before: "quorum", after: "run"},
		{name: "uptime crashes", index: 1, said: "poll", before: "crash", after: "crash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, helmtest.Options{}, c.index)
			online := filepath.Join(p.root, "minicluster/keys/.online")
			p.write(t, "/fake/state", c.before+"\n", 0o644)
			p.brokers(t, "0 0 30")
			cmd, wait := p.start(t)
			p.waitSleeping(t, 1)
			time.Sleep(1500 * time.Millisecond) // flux uptime was asked at the start
			assert.NoFileExists(t, online, "before rc1 ended")
			p.write(t, "/minicluster/run/flux/rc1-done", "", 0o644)
			fifo, err := os.OpenFile(filepath.Join(p.root, "minicluster/run/flux/online.fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0)
			require.NoError(t, err, "online.fifo, held by the entrypoint")
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
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			_, out := wait()
			assert.NoFileExists(t, online, "after the broker exited\n%s", out)
		})
	}
}

// A worker the lead is already stopping (on uninstall) gets its own SIGTERM as well: passed on,
// it would abort the broker's rc3. A marker left over from an earlier run must not hold back
// the SIGTERM of the next.
func TestEntrypointWorkerKeepsASIGTERMWhileStopping(t *testing.T) {
	t.Parallel()
	p := newPod(t, helmtest.Options{}, 1)
	p.brokers(t, "0 60 2 stopping", "0 0 30")
	cmd, wait := p.start(t)
	p.waitSleeping(t, 1)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	status, out := wait()
	assert.Equal(t, 143, status, out)
	assert.Contains(t, out, "minicluster[1]: SIGTERM: the broker is already stopping")
	assert.NotContains(t, out, "SIGTERM: stopping the broker")
	assert.NoFileExists(t, filepath.Join(p.fake, "signals"), "the stopping broker got the SIGTERM")
	assert.Len(t, p.brokerRuns(t), 1, "a stopping pod does not start the broker again")

	p = newPod(t, helmtest.Options{}, 1)
	p.brokers(t, "0 60 1 stopping", "0 0 30 joined")
	cmd, wait = p.start(t)
	p.waitSleeping(t, 2, "the broker starts again after it exits 0")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	status, out = wait()
	assert.Equal(t, 143, status, out)
	assert.Contains(t, out, "minicluster[1]: SIGTERM: stopping the broker")
	signals, err := os.ReadFile(filepath.Join(p.fake, "signals"))
	require.NoError(t, err, "the second broker got no SIGTERM")
	assert.Equal(t, "TERM\n", string(signals))
}

// A worker's broker that has not joined its parent gets no SIGTERM, which Flux ignores while it
// loads its built-in modules and which would otherwise only make it run rc3 without a parent: it
// is killed. One that has joined gets the SIGTERM. A Flux without modprobe's rc1 (which leaves
// "joined") and the lead always get the SIGTERM.
func TestEntrypointKillsAWorkerThatHasNotJoined(t *testing.T) {
	t.Parallel()
	rc1Replaced := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(rc1Replaced, []byte("flux:\n  brokerOptions: [\"-Sbroker.rc1_path=/opt/rc1\"]\n"), 0o644))
	for _, tc := range []struct {
		name    string
		opts    helmtest.Options
		index   int
		broker  string
		log     string
		signals string // what the fake broker's trap noted
	}{
		{"unjoined worker", helmtest.Options{}, 2, "0 0 30 deaf", "minicluster[2]: SIGTERM: the broker has not joined its parent yet: killing it", ""},
		{"joined worker", helmtest.Options{}, 2, "0 0 30 joined", "minicluster[2]: SIGTERM: stopping the broker", "TERM\n"},
		{"lead", helmtest.Options{}, 0, "0 0 30", "minicluster[0]: SIGTERM: stopping the broker", "TERM\n"},
		{"rc1 replaced, so no joined mark", helmtest.Options{ValuesFiles: []string{rc1Replaced}}, 2, "0 0 30", "minicluster[2]: SIGTERM: stopping the broker", "TERM\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, tc.opts, tc.index)
			p.brokers(t, tc.broker)
			cmd, wait := p.start(t)
			p.waitSleeping(t, 1)
			start := time.Now()
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			status, out := wait()
			assert.Less(t, time.Since(start), 10*time.Second, "the entrypoint waited for the broker's 30 s sleep")
			assert.Equal(t, 143, status, out)
			assert.Contains(t, out, tc.log)
			signals, err := os.ReadFile(filepath.Join(p.fake, "signals"))
			if !os.IsNotExist(err) {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.signals, string(signals))
		})
	}
}

func TestEntrypointBrokerThatCannotStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		runs  []string
		want  int // broker runs
		final string
	}{
		{"three quick failures", []string{"1 0", "2 5", "3 9"}, 3, "last exit status 3"},
		{"a slow failure starts the count again", []string{"1 0", "1 0", "4 10", "1 0", "5 0"}, 5, "last exit status 5"},
		{"a success starts the count again", []string{"1 0", "1 0", "0 0", "1 0", "1 0", "6 0"}, 6, "last exit status 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, helmtest.Options{}, 1)
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
func TestEntrypointWorkerThatJoinedKeepsRejoining(t *testing.T) {
	t.Parallel()
	p := newPod(t, helmtest.Options{}, 1)
	for i, e := range p.env {
		if strings.HasPrefix(e, "MINICLUSTER_REJOIN=") {
			p.env[i] = "MINICLUSTER_REJOIN=false" // the last run's exit 0 ends the script
		}
	}
	p.brokers(t, "1 0 0 joined", "1 0", "1 0", "1 0", "0 0")
	status, out := p.run(t)
	assert.Equal(t, 0, status, out)
	assert.Len(t, p.brokerRuns(t), 5, out)
	assert.NotContains(t, out, "a config or certificate problem")
}

// flux.state: the lead restores the archive when there is one and always dumps to the
// temporary name that its rc3 renames over the archive only after a whole rc3.
func TestEntrypointState(t *testing.T) {
	t.Parallel()
	for _, archive := range []bool{false, true} {
		p := newPod(t, helmtest.Options{Set: []string{"flux.state.enabled=true", "flux.state.storageClassName=local-path"}}, 0)
		for i, e := range p.env {
			if strings.HasPrefix(e, "MINICLUSTER_REJOIN=") {
				p.env[i] = "MINICLUSTER_REJOIN=false"
			}
		}
		state := p.root + "/minicluster/state/flux-content.tgz"
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
		// The broker runs the option with a shell (SHELL); Flux's rc3 dumps the content.
		for _, rc3Status := range []int{1, 0} {
			require.NoError(t, os.MkdirAll(run, 0o700))
			before, _ := os.ReadFile(state)
			out := p.runRc3(t, rc3, tmp, rc3Status)
			assert.FileExists(t, run+"/rc3-started")
			assert.FileExists(t, run+"/rc3-done")
			assert.NoFileExists(t, tmp, "the temporary dump is renamed or removed")
			after, _ := os.ReadFile(state)
			if rc3Status == 0 {
				assert.Equal(t, "the new dump", string(after), out)
				assert.Contains(t, out, "minicluster: flux.state: dumped to "+state)
			} else {
				assert.Equal(t, string(before), string(after), "an rc3 that failed leaves the archive: %s", out)
				assert.Contains(t, out, "minicluster: flux.state: rc3 failed (status 1): the content dump did not finish; keeping the previous archive")
			}
			require.NoError(t, os.RemoveAll(run))
		}
	}
	// A worker neither restores nor dumps.
	p := newPod(t, helmtest.Options{Set: []string{"flux.state.enabled=true", "flux.state.storageClassName=local-path"}}, 1)
	for i, e := range p.env {
		if strings.HasPrefix(e, "MINICLUSTER_REJOIN=") {
			p.env[i] = "MINICLUSTER_REJOIN=false"
		}
	}
	p.brokers(t, "0 0")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
	for _, a := range p.brokerRuns(t)[0] {
		assert.NotContains(t, a, "content.")
	}
	assert.Contains(t, p.brokerRuns(t)[0], p.rc3Option("--done '"+p.root+"/minicluster/run/flux/rc3-done' --"))
}

// runRc3 runs the broker's rc3_path option as the broker does (a shell's -c) with flux-core's
// rc3 standing in as a flux that writes "the new dump" to dump and exits with status; it returns
// the output. No rc3 plan: rc3.sh runs that rc3.
func (p *pod) runRc3(t *testing.T, option, dump string, status int) string {
	t.Helper()
	bin := t.TempDir()
	flux := fmt.Sprintf("#!/bin/sh\n[ \"$*\" = 'modprobe rc3' ] || exit 99\nprintf 'the new dump' > %q\nexit %d\n", dump, status)
	require.NoError(t, os.WriteFile(filepath.Join(bin, "flux"), []byte(flux), 0o755))
	cmd := exec.Command("/bin/sh", "-c", strings.TrimPrefix(option, "-Sbroker.rc3_path="))
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if status == 0 {
		require.NoError(t, err, "%s", out)
	} else {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		assert.Equal(t, status, exit.ExitCode(), "rc3's status is the option's: %s", out)
	}
	return string(out)
}

// rc3Option is the broker's rc3_path option that entrypoint.sh gives with broker-rc3.sh's
// arguments args: rc3.sh with the plan and flux-core's rc3 (the fake flux's).
func (p *pod) rc3Option(args string) string {
	return "-Sbroker.rc3_path=trap '' HUP; exec /bin/sh " + p.root + "/minicluster/scripts/broker-rc3.sh " + args +
		" /bin/sh " + p.root + "/minicluster/scripts/rc3.sh '" + p.root + "/minicluster/run/flux/rc3-plan' flux modprobe rc3"
}

func TestEntrypointBrokerOptionsStayWhole(t *testing.T) {
	t.Parallel()
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte(`flux:
  brokerOptions: ["-Sa=1", "-Sb=x y", "-Sc=*", "-Sd=$HOME"]
  topology: kary:2
`), 0o644))
	p := newPod(t, helmtest.Options{ValuesFiles: []string{values}}, 0)
	p.brokers(t, "0 60", "0 0 30")
	cmd, wait := p.start(t)
	p.waitSleeping(t, 2)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	status, out := wait()
	assert.Equal(t, 143, status, out)
	runs := p.brokerRuns(t)
	require.Len(t, runs, 2)
	for _, run := range runs {
		assert.Equal(t, []string{"-Stbon.topo=kary:2", p.rc3Option("--"), "-Sa=1", "-Sb=x y", "-Sc=*", "-Sd=$HOME", "-Sbroker.rc2_none=1"}, run[len(run)-7:])
	}
}

func TestEntrypointInstallsKeysAndResources(t *testing.T) {
	t.Parallel()
	p := newPod(t, helmtest.Options{}, 3)
	// A read-only copy from an earlier run of the container is replaced.
	p.write(t, "/etc/curve/curve.cert", "stale\n", 0o400)
	p.brokers(t, "0 60")
	p.env = append(p.env, "MINICLUSTER_REJOIN=false")
	status, out := p.run(t)
	require.Equal(t, 0, status, out)
	for _, f := range []struct{ key, installed string }{
		{"curve.cert", "/etc/curve/curve.cert"},
		{"munge.key", "/etc/munge/munge.key"},
	} {
		info, err := os.Stat(p.root + f.installed)
		require.NoError(t, err)
		assert.Equalf(t, os.FileMode(0o400), info.Mode().Perm(), "%s mode", f.installed)
		got, err := os.ReadFile(p.root + f.installed)
		require.NoError(t, err)
		want, err := os.ReadFile(p.root + "/minicluster/keys/" + f.key)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	assert.Equal(t, []string{"R", "encode", "--hosts=flux-sample-[0-15]", "--local"}, p.call(t, "R"))
	r, err := os.ReadFile(p.root + "/minicluster/run/R")
	require.NoError(t, err)
	assert.Equal(t, "{\"version\": 1, \"fake\": true}\n", string(r))
}

// TestEntrypointInstallsTheAPIsCredentials: on the lead, the API's credentials and TLS key the
// keys container handed over become private copies (0400 in directories of 0700), the keys
// container is told (.installed) so that it deletes what everyone could read, and the API server
// gets the copies and api.tokenLifetime.
func TestEntrypointInstallsTheAPIsCredentials(t *testing.T) {
	t.Parallel()
	p := newPod(t, helmtest.Options{Set: []string{"api.enabled=true", "api.tls.secretName=tls", "api.tokenLifetime=30m"}}, 0)
	require.NoError(t, os.Mkdir(p.root+"/minicluster/keys/api", 0o755))
	for _, f := range []string{"user", "token", "secret-key", "tls.crt", "tls.key"} {
		p.write(t, "/minicluster/keys/api/"+f, "the "+f+"\n", 0o444)
	}
	// The API server the keys container installs: it notes its arguments and stays up.
	p.write(t, "/minicluster/keys/minicluster-api", "#!"+busybox+" sh\necho \"$@\" > "+p.fake+"/api-args\nexec sleep 60\n", 0o555)
	p.brokers(t, "0 0 30")
	cmd, wait := p.start(t)
	p.waitSleeping(t, 1, "the broker runs")
	var args []byte
	require.Eventually(t, func() bool {
		var err error
		args, err = os.ReadFile(p.fake + "/api-args")
		return err == nil && len(args) > 0
	}, 10*time.Second, 20*time.Millisecond, "the API server started")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_, out := wait()
	for _, want := range []string{"--credentials=" + p.root + "/minicluster/api/credentials", "--token-lifetime=30m",
		"--tls-cert=" + p.root + "/minicluster/api/tls/tls.crt", "--tls-key=" + p.root + "/minicluster/api/tls/tls.key"} {
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
	_, err := os.Stat(p.root + "/minicluster/keys/.installed")
	assert.NoError(t, err, "the keys container was not told the keys are installed")
}

// Without the credentials the keys container should have handed over, the lead cannot serve the
// API with authentication: it stops, saying where to look, rather than serve without.
func TestEntrypointAPIWithoutCredentials(t *testing.T) {
	t.Parallel()
	p := newPod(t, helmtest.Options{Set: []string{"api.enabled=true"}}, 0)
	p.brokers(t, "0 60")
	p.cannotStart(t, "the API's credentials were not handed over (api.requireAuth=true)")
}

func TestEntrypointFailsWithoutFlux(t *testing.T) {
	t.Parallel()
	t.Run("R encode fails", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"maxSize=6"}}, 0)
		p.write(t, "/fake/r-status", "1\n", 0o644)
		p.cannotStart(t, "minicluster[0]: error: flux R encode --hosts=flux-sample-[0-5] --local failed: Flux cannot run in this image")
	})
	t.Run("no flux in the view", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{}, 0)
		view := p.envValue(t, "MINICLUSTER_FLUX_VIEW")
		require.NoError(t, os.Remove(view+"/bin/flux"))
		status, out := p.run(t)
		assert.Equal(t, 78, status, out)
		assert.Contains(t, out, "error: flux is not in the flux view at "+view+"/bin: set flux.view.image")
	})
	t.Run("no flux in the image", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"flux.view.enabled=false", "image=example.com/no-flux:1"}}, 0)
		require.NoError(t, os.Remove(p.root+"/bin/flux"))
		status, out := p.run(t)
		assert.Equal(t, 78, status, out)
		assert.Contains(t, out, "error: flux is not on PATH in image example.com/no-flux:1: set flux.view.enabled=true")
	})
}

// envValue is the value of an environment variable of the pod.
func (p *pod) envValue(t *testing.T, name string) string {
	t.Helper()
	for _, e := range p.env {
		if v, ok := strings.CutPrefix(e, name+"="); ok {
			return v
		}
	}
	t.Fatalf("the pod has no %s", name)
	return ""
}

// The helpers beside the broker: the entrypoint waits for each one's .ready, ends on .invalid
// (exit 78: the Job fails) or .failed (exit 1), and holds each one's FIFO .alive open while it
// lives, so that a helper waiting on it ends with the broker's container, not before or after.
func TestEntrypointWaitsForItsHelpers(t *testing.T) {
	t.Parallel()
	t.Run("ready", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"command=hostname"}}, 0)
		helpers := strings.Fields(p.envValue(t, "MINICLUSTER_HELPERS"))
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
		// The broker runs a second (its child holds no FIFO): the helpers wait for the script.
		require.Eventually(t, func() bool { return len(p.brokerRuns(t)) == 1 }, 10*time.Second, 20*time.Millisecond)
		select {
		case dir := <-ended:
			t.Fatalf("helper %s ended while the broker's container runs", dir)
		case <-time.After(300 * time.Millisecond):
		}
		status, out := wait()
		assert.Equal(t, 0, status, out)
		assert.FileExists(t, helpers[0]+"/.ended", "the entrypoint tells the helpers (in the keys volume) that it ended")
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
			p := newPod(t, helmtest.Options{}, 2)
			keys := p.root + "/minicluster/keys"
			require.NoError(t, os.Remove(filepath.Join(keys, ".ready")))
			require.NoError(t, os.WriteFile(filepath.Join(keys, tc.file), []byte(tc.text+"\n"), 0o444))
			status, out := p.run(t)
			assert.Equal(t, tc.status, status, out)
			assert.Contains(t, out, "minicluster[2]: error: "+tc.text)
			assert.Empty(t, p.calls(t), "flux must not run")
			assert.FileExists(t, keys+"/.ended", "the entrypoint tells the helpers that it ended")
		})
	}
}

// brokerEnv is the environment run k of the fake broker had.
func (p *pod) brokerEnv(t *testing.T, k int) map[string]string {
	t.Helper()
	return readEnv(t, filepath.Join(p.fake, fmt.Sprintf("env.%d", k)))
}

// readEnv reads an environment the fakes wrote with env(1): one NAME=value a line.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	return env
}

// The scheduler: Fluxion's modprobe files and modules from the prefix of the Flux the pod runs
// (the view here), or a message naming what is missing; sched-simple needs nothing.
func TestEntrypointScheduler(t *testing.T) {
	t.Parallel()
	t.Run("fluxion from the view", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"command=hostname"}}, 0)
		p.runsOnce(t)
		env := p.brokerEnv(t, 1)
		assert.Equal(t, p.fluxRoot+"/etc/flux/modprobe:/minicluster/modprobe", env["FLUX_MODPROBE_PATH_APPEND"])
		assert.Equal(t, p.fluxRoot+"/lib/flux/modules", env["FLUX_MODULE_PATH_PREPEND"])
		assert.Equal(t, p.fluxRoot+"/libexec/flux/cmd", env["FLUX_EXEC_PATH_PREPEND"])
		v, set := env["FLUXION_RESOURCE_OPTIONS"]
		assert.True(t, set && v == "", "Fluxion's resource options emptied (no load-allowlist for R): %q %v", v, set)
	})
	t.Run("fluxion missing", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"flux.view.image=example.com/view:1"}}, 0)
		require.NoError(t, os.RemoveAll(p.fluxRoot+"/etc/flux/modprobe"))
		p.cannotStart(t, "error: flux.scheduler=fluxion, but the flux view of example.com/view:1 has no Fluxion (flux-sched)", "or set flux.scheduler=simple")
	})
	t.Run("fluxion in flux-core's prefix", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"command=hostname", "flux.view.enabled=false"}}, 0)
		require.NoError(t, os.RemoveAll(p.fluxRoot+"/etc/flux/modprobe"))
		require.NoError(t, os.MkdirAll(p.fake+"/core/etc/flux/modprobe/modprobe.d", 0o755))
		require.NoError(t, os.WriteFile(p.fake+"/core/etc/flux/modprobe/modprobe.d/fluxion.toml", nil, 0o644))
		p.runsOnce(t)
		assert.Equal(t, "/minicluster/modprobe", p.brokerEnv(t, 1)["FLUX_MODPROBE_PATH_APPEND"])
	})
	t.Run("simple needs no Fluxion", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"command=hostname", "flux.scheduler=simple"}}, 0)
		require.NoError(t, os.RemoveAll(p.fluxRoot+"/etc/flux/modprobe"))
		p.runsOnce(t)
		assert.NotContains(t, p.brokerEnv(t, 1), "FLUX_MODULE_PATH_PREPEND")
	})
}

// Fast exit: after a command that succeeded, the lead's wrapper tells every worker so and ends
// its broker; a worker whose broker ends after that succeeds at once, without a second run.
func TestEntrypointWorkersEndWithTheCommand(t *testing.T) {
	t.Parallel()
	lead := newPod(t, helmtest.Options{Set: []string{"command=hostname"}}, 0)
	lead.runsOnce(t)
	wrapper := strings.Join(lead.brokerRuns(t)[0], "\n")
	assert.Contains(t, wrapper, `if [ "$status" -eq 0 ]; then flux exec -r all -x 0 --noinput /bin/sh -c "$w"`)
	assert.Contains(t, wrapper, ": > "+lead.root+"/minicluster/run/command-ended && b=$(flux getattr broker.pid)")

	worker := newPod(t, helmtest.Options{Set: []string{"command=hostname", "commands.post=echo worker-post"}}, 1)
	worker.brokers(t, "137 0 0 ended")
	status, out := worker.run(t)
	assert.Equal(t, 0, status, out)
	assert.Len(t, worker.brokerRuns(t), 1)
	assert.Contains(t, out, "minicluster[1]: the command ended with status 0 on the lead, which ended this broker: the worker is complete")
	assert.Contains(t, out, "worker-post")
}

// flux-pmix: a command that asks for -o pmi=pmix needs its shell plugin; one in the view (not
// in flux-core's plugin path) becomes the job shells' plugin path.
func TestEntrypointPMIx(t *testing.T) {
	t.Parallel()
	command := "command=flux run -N 2 -o pmi=pmix ./ring"
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"flux.view.image=example.com/view:1", command}}, 0)
		p.cannotStart(t, "error: the command asks for -o pmi=pmix (OpenMPI's PMIx, served by flux-pmix), but the flux view of example.com/view:1 has no flux-pmix: no lib/flux/shell/plugins/pmix.so")
	})
	t.Run("in the view", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{command}}, 0)
		plugins := p.fluxRoot + "/lib/flux/shell/plugins"
		require.NoError(t, os.MkdirAll(plugins, 0o755))
		require.NoError(t, os.WriteFile(plugins+"/pmix.so", nil, 0o644))
		p.runsOnce(t)
		assert.Contains(t, p.brokerRuns(t)[0], "-Sconf.shell_pluginpath="+plugins)
	})
	t.Run("not asked for, not there", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"command=hostname"}}, 0)
		p.runsOnce(t)
		for _, arg := range p.brokerRuns(t)[0] {
			assert.NotContains(t, arg, "shell_pluginpath")
		}
	})
}

// R: cores and GPUs per broker from the pod's limits (or values) instead of hwloc's view of the
// node; GPUs alone keep the cores the pod sees.
func TestEntrypointDescribesCoresAndGPUs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{"hwloc", nil, []string{"--local"}},
		{"cpu limit", []string{"resources.limits.cpu=3"}, []string{"--cores=0-2"}},
		{"millicores", []string{"resources.limits.cpu=1500m"}, []string{"--cores=0"}},
		{"less than a core", []string{"resources.limits.cpu=250m"}, []string{"--cores=0"}},
		{"values win", []string{"resources.limits.cpu=3", "flux.coresPerBroker=8"}, []string{"--cores=0-7"}},
		{"nvidia GPUs", []string{"resources.limits.cpu=4", "resources.limits.nvidia\\.com/gpu=2"}, []string{"--cores=0-3", "--gpus=0-1"}},
		{"amd GPU", []string{"resources.limits.cpu=2", "resources.limits.amd\\.com/gpu=1"}, []string{"--cores=0-1", "--gpus=0"}},
		{"declared GPUs", []string{"flux.gpusPerBroker=2", "flux.coresPerBroker=2"}, []string{"--cores=0-1", "--gpus=0-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, helmtest.Options{Set: append([]string{"maxSize=4", "command=hostname"}, tc.set...)}, 0)
			p.runsOnce(t)
			assert.Equal(t, append([]string{"R", "encode", "--hosts=flux-sample-[0-3]"}, tc.want...), p.call(t, "R"))
		})
	}
	t.Run("GPUs without a CPU limit", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"maxSize=4", "command=hostname", "flux.gpusPerBroker=1"}}, 0)
		p.runsOnce(t)
		nproc, err := exec.Command(busybox, "nproc").Output()
		require.NoError(t, err)
		n, err := strconv.Atoi(strings.TrimSpace(string(nproc)))
		require.NoError(t, err)
		cores := "--cores=0"
		if n > 1 {
			cores = fmt.Sprintf("--cores=0-%d", n-1)
		}
		assert.Equal(t, []string{"R", "encode", "--hosts=flux-sample-[0-3]", cores, "--gpus=0"}, p.call(t, "R"))
	})
}

// The flux wrapper users run with kubectl exec waits for the helpers beside the broker: flux's
// python must not write byte code into a view that is still being copied. A helper that failed
// ends it with the reason.
func TestFluxWrapperWaitsForTheView(t *testing.T) {
	t.Parallel()
	wrapper := func(t *testing.T) (*pod, string) {
		p := newPod(t, helmtest.Options{}, 0)
		return p, p.root + "/minicluster/scripts/flux"
	}
	t.Run("waits for the copy", func(t *testing.T) {
		t.Parallel()
		p, path := wrapper(t)
		view := p.root + "/mnt/flux"
		require.NoError(t, os.Remove(view+"/.ready"))
		cmd := exec.Command(busybox, "sh", path, "resource", "list")
		cmd.Env = p.env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		time.Sleep(400 * time.Millisecond)
		assert.Empty(t, p.calls(t), "flux ran before the view was copied")
		require.NoError(t, os.WriteFile(view+"/.ready", nil, 0o444))
		_ = cmd.Wait() // the fake flux does not know `resource list`
		require.Len(t, p.calls(t), 1, out.String())
		assert.Equal(t, []string{"resource", "list"}, p.calls(t)[0])
	})
	t.Run("a failed copy", func(t *testing.T) {
		t.Parallel()
		p, path := wrapper(t)
		view := p.root + "/mnt/flux"
		require.NoError(t, os.Remove(view+"/.ready"))
		require.NoError(t, os.WriteFile(view+"/.failed", []byte("copying Flux out of the view image failed: disk full"), 0o444))
		cmd := exec.Command(busybox, "sh", path, "resource", "list")
		cmd.Env = p.env
		out, err := cmd.CombinedOutput()
		require.Error(t, err)
		assert.Contains(t, string(out), "minicluster: this broker cannot start: copying Flux out of the view image failed: disk full")
		assert.Empty(t, p.calls(t))
	})
}

// flux as kubectl exec runs it (ARGS as they came): PATH finds the chart's flux.sh at
// /usr/local/sbin/flux, first on PATH here as in most images.
func (p *pod) plainFlux(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, busybox, append([]string{"sh", "-c", `exec flux "$@"`, "flux"}, args...)...)
	cmd.Dir = p.root
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "flux did not finish within 30 s:\n%s", out)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run flux: %v", err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// callEnv is the environment of call n of the fake flux.
func (p *pod) callEnv(t *testing.T, n int) map[string]string {
	t.Helper()
	return readEnv(t, filepath.Join(p.fake, "envs", strconv.Itoa(n)))
}

// Plain `flux` in any broker pod (kubectl exec) runs the view's Flux or the image's, whichever
// the pod has, against that pod's broker (FLUX_URI, the same socket path in every pod); never
// the wrapper again, even where it comes first on PATH or where there is no other flux.
func TestPlainFlux(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, mode string }{
		{"view copy", "flux.view.mode=copy"},
		{"view image", "flux.view.mode=image"},
		{"flux in the image", "flux.view.enabled=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, helmtest.Options{Set: []string{tc.mode}}, 2)
			uri := "local://" + p.root + "/minicluster/run/flux/local"
			require.Equal(t, uri, p.envValue(t, "FLUX_URI"), "the container's FLUX_URI is the pinned local-uri")
			_, out := p.plainFlux(t, "proxy", uri, "flux", "getattr", "rank") // the fake flux does not know proxy
			require.Equal(t, [][]string{{"proxy", uri, "flux", "getattr", "rank"}}, p.calls(t), out)
			env := p.callEnv(t, 1)
			assert.Equal(t, uri, env["FLUX_URI"])
			assert.True(t, strings.HasPrefix(env["PATH"], p.fluxRoot+"/bin:"), "the real flux's bin first on PATH: %s", env["PATH"])
			if tc.mode != "flux.view.enabled=false" {
				assert.Contains(t, env["LUA_PATH"], p.fluxRoot+"/share/lua/5.1/?.lua", "the view's environment")
			}
		})
	}
	t.Run("no flux in the image", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"flux.view.enabled=false"}}, 0)
		require.NoError(t, os.Remove(p.root+"/bin/flux"))
		status, out := p.plainFlux(t, "resource", "list")
		assert.Equal(t, 127, status, out)
		assert.Contains(t, out, "minicluster: no flux to run: not on PATH ("+p.root+"/usr/local/sbin:"+p.root+"/bin) but for this wrapper")
	})
	t.Run("no flux in the view", func(t *testing.T) {
		t.Parallel()
		p := newPod(t, helmtest.Options{Set: []string{"flux.view.mode=copy"}}, 0)
		view := p.envValue(t, "MINICLUSTER_FLUX_VIEW")
		require.NoError(t, os.Remove(view+"/bin/flux"))
		status, out := p.plainFlux(t, "resource", "list")
		assert.Equal(t, 127, status, out)
		assert.Contains(t, out, "minicluster: no flux to run: not in the flux view at "+view+"/bin, not on PATH")
	})
}

// The broker runs the real flux, not the wrapper that comes first on PATH in an image with
// Flux, and without the container's FLUX_URI.
func TestEntrypointRunsTheRealFlux(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"flux.view.mode=copy", "flux.view.enabled=false"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := newPod(t, helmtest.Options{Set: []string{mode, "command=hostname"}}, 0)
			p.runsOnce(t)
			require.Len(t, p.brokerRuns(t), 1)
			env := p.brokerEnv(t, 1)
			assert.NotContains(t, env, "FLUX_URI")
			assert.True(t, strings.HasPrefix(env["PATH"], p.fluxRoot+"/bin:"), "the real flux's bin first on PATH: %s", env["PATH"])
		})
	}
}
