package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The broker's command line, built in the order Flux reads it: the chart's settings, the
// state's, the rc3 option, the user's options, then the initial program.

// quote returns word in single quotes, as a shell reads it back.
func quote(word string) string {
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}

// brokerOptions are the broker's settings.
func (s *Supervisor) brokerOptions() []string {
	level := s.S.LogLevel
	// logging.quiet: the brokers log emergencies alone; logging.debug (not quiet): everything.
	if s.S.Quiet {
		level = "0"
	} else if s.S.Debug {
		level = "7"
	}
	rundir := s.P.rundir()
	args := []string{"--config-path=" + s.P.Config, "-Srundir=" + rundir, "-Slocal-uri=" + s.P.localURI(),
		"-Sbroker.quorum=" + s.size, "-Stbon.connect_timeout=" + s.S.ConnectTimeout,
		"-Slog-stderr-level=" + level, "-Slog-stderr-mode=local"}
	// The lead's job clean-up on SIGTERM. A worker's is only the stopping mark; it must finish.
	if s.S.Index == 0 {
		args = append(args, "-Sbroker.cleanup-timeout="+s.S.CleanupTimeout)
	}
	if s.S.Topology != "" {
		args = append(args, "-Stbon.topo="+s.S.Topology)
	}
	// logging.zeromq: ZeroMQ's debug messages of the overlay network.
	if s.S.ZeroMQ {
		args = append(args, "-Stbon.zmqdebug=1")
	}
	// flux-pmix outside flux-core's plugin path (a view's): the job shells' initrc loads it.
	if s.pmixPlugins != "" && s.pmixPlugins != s.pluginPath {
		if initrc, ok := s.writeShellInitrc(); ok {
			args = append(args, "-Sconf.shell_initrc="+initrc)
		} else {
			args = append(args, "-Sconf.shell_pluginpath="+s.pmixPlugins)
		}
	}
	return args
}

// stateOptions (flux.state, the lead's): the lead restores the archive an earlier lead left
// there, and dumps the content store to a temporary name, stateTmp (with the archive's
// extension: flux dump picks the format from it), that only a whole rc3 renames to the
// archive (broker-rc3.sh), so that a dump that fails or is cut short never replaces a good
// archive. Sets state, empty without flux.state.
func (s *Supervisor) stateOptions() ([]string, error) {
	s.state = ""
	if s.S.Index != 0 || s.S.State == "" {
		return nil, nil
	}
	s.state = s.S.State
	dir := filepath.Dir(s.state)
	s.stateTmp = filepath.Join(dir, ".partial-"+filepath.Base(s.state))
	if !writable(dir) {
		return nil, s.die("flux.state: the claim mounted at %s is not writable by user %d, whom Flux runs as, so no dump could be kept: give the pods podSecurityContext.fsGroup (most storage makes the volume group-writable then), or a claim this user may write", dir, os.Getuid())
	}
	_ = os.RemoveAll(s.stateTmp)
	var args []string
	if fi, err := os.Stat(s.state); err == nil && fi.Size() > 0 {
		s.log("flux.state: restoring Flux's state from %s (%d bytes)", s.state, fi.Size())
		args = append(args, "-Scontent.restore="+s.state)
	} else {
		s.log("flux.state: no archive at %s yet: Flux starts empty", s.state)
	}
	return append(args, "-Scontent.dump="+s.stateTmp), nil
}

// writable says whether this user may write in dir (as test -w).
func writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

// rc3Option: rc3 (unloading the modules) runs to its end. A worker the lead is already
// shutting down gets SIGTERM too on uninstall; a signal during rc3 aborts it with SIGHUP (sent
// to rc3's process group), and a broker that exits with its modules loaded waits 10 s for each
// of them (flux-core 0.88): rc3 ignores SIGHUP, and so does all it runs. Every broker's rc3 is
// rc3.sh: Flux's steps without Python where its rc1 left a plan (modprobe-rc1.py), else Flux's
// own rc3; broker-rc3.sh runs it, leaving the marks a worker's (killAfterRc3) and a lead's with
// flux.state (boundDump) need, and keeping the dump. Both stay shell: the broker runs them
// after this program may have stopped watching, and they must work in any image.
func (s *Supervisor) rc3Option() []string {
	rc3, ok := s.builtin("rc3_path")
	if !ok || rc3 == "" {
		return nil
	}
	var marks []string
	if s.state != "" {
		marks = append(marks, "--started", quote(s.P.rc3Started()), "--state", quote(s.state), quote(s.stateTmp))
	}
	if s.state != "" || s.S.Index != 0 {
		marks = append(marks, "--done", quote(s.P.rc3Done()))
	}
	marks = append(marks, "--")
	scripts := s.P.Scripts
	return []string{"-Sbroker.rc3_path=trap '' HUP; exec /bin/sh " + scripts + "/broker-rc3.sh " + strings.Join(marks, " ") +
		" /bin/sh " + scripts + "/rc3.sh " + quote(s.P.rc3Plan()) + " " + rc3}
}

// userBrokerOptions are flux.brokerOptions, one a line, each whole (empty lines left out).
func userBrokerOptions(options string) []string {
	var out []string
	for _, line := range strings.Split(options, "\n") {
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

// initialProgram: no command: interactive, the instance stays up (no initial program). A
// command: ephemeral, the lead runs it. Sets fastExit.
func (s *Supervisor) initialProgram() ([]string, error) {
	ephemeral := s.S.ephemeralLead()
	// Fast exit (flux.ephemeralExit): the command's wrapper writes its status to
	// commandStatus and kills the broker, so that the lead's pod ends with that status without
	// Flux's orderly shutdown. The command's output reaches the log directly (the broker's
	// initial program inherits its stdio).
	s.fastExit = false
	if ephemeral && s.S.EphemeralExit == "fast" {
		switch {
		case strings.Contains(s.S.BrokerOptions, "content.dump"):
			s.log("flux.ephemeralExit=fast: brokerOptions ask for a content dump, which needs Flux's whole shutdown: taking it")
		case s.state != "":
			s.log("flux.ephemeralExit=fast: flux.state dumps the content store, which needs Flux's whole shutdown: taking it")
		default:
			s.fastExit = true
		}
	}
	var args []string
	if s.fastExit {
		// After a command that succeeded, every worker is told so and its broker ended (in the
		// background, so that flux exec returns first): the workers' pods succeed with the
		// lead's. Otherwise the Job ends them once the lead has (SIGTERM, their rc3 and a
		// goodbye to a lead that is gone), seconds more before the Job is Complete.
		endWorkers := `: > ` + s.P.commandEnded() + ` && b=$(flux getattr broker.pid) && { (sleep 0.1; kill -KILL "$b") < /dev/null > /dev/null 2>&1 & }`
		args = append(args, "/bin/sh", "-c",
			`w=$1; shift; "$@"; status=$?; echo "$status" > "$0"; if [ "$status" -eq 0 ]; then flux exec -r all -x 0 --noinput /bin/sh -c "$w" > /dev/null 2>&1; fi; kill -KILL "$(flux getattr broker.pid)"; exit "$status"`,
			s.P.commandStatus(), endWorkers)
	}
	// commands.prefix: words put before the initial program (a wrapper such as `strace -f`);
	// logging.timed: the initial program is timed and its wall time printed as the operator
	// does.
	if ephemeral {
		if s.S.Timed {
			args = append(args, "/bin/sh", "-c",
				`start=$(date +%s); "$@"; status=$?; t=$(($(date +%s) - start)); printf "FLUXTIME fluxsubmit wall time %d:%02d\n" $((t / 60)) $((t % 60)) >&2; exit $status`, "timed")
		}
		args = append(args, strings.Fields(s.S.CommandPrefix)...)
	}
	verbose := ""
	if s.S.Debug {
		verbose = "-vvv"
	}
	tasks := strconv.Itoa(s.S.Tasks)
	switch {
	case ephemeral && s.S.Batch != "":
		run, err := s.batchProgram(verbose)
		if err != nil {
			return nil, err
		}
		args = append(args, "/bin/sh", "-c", run)
	case s.S.Command == "":
		args = append(args, "-Sbroker.rc2_none=1")
	case s.S.Tasks > 0 && verbose != "":
		args = append(args, "flux", "submit", verbose, "--quiet", "--watch", "-N", s.size, "-n", tasks, "/bin/sh", "-c", s.S.Command)
	case s.S.Tasks > 0:
		args = append(args, "flux", "submit", "--quiet", "--watch", "-N", s.size, "-n", tasks, "/bin/sh", "-c", s.S.Command)
	default:
		args = append(args, "/bin/sh", "-c", s.S.Command)
	}
	return args, nil
}

// batchScript (batch, the operator's): each line of the command is a job of one `flux batch`
// (raw: the lines are the batch script as they are), outputs in outdir/job-<line>.out.
func batchScript(command, mode, outdir string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for i, line := range strings.Split(command, "\n") {
		if line == "" {
			continue
		}
		if mode == "raw" {
			b.WriteString(line + "\n")
		} else {
			fmt.Fprintf(&b, "flux submit --flags waitable --error=%s/job-%d.err --output=%s/job-%d.out %s\n", outdir, i, outdir, i, line)
		}
	}
	if mode != "raw" {
		b.WriteString("flux queue idle\nflux jobs -a\n")
	}
	return b.String()
}

// batchNodes is the operator's node spec: -N size when tasks >= size or 0, -n tasks when
// tasks > 0.
func batchNodes(size string, tasks int) string {
	n, _ := strconv.Atoi(size)
	switch {
	case tasks == 0:
		return "-N " + size
	case tasks >= n:
		return "-N " + size + " -n " + strconv.Itoa(tasks)
	default:
		return "-n " + strconv.Itoa(tasks)
	}
}

// batchProgram writes the batch script and returns the shell command that runs it.
func (s *Supervisor) batchProgram(verbose string) (string, error) {
	outdir := s.S.BatchOutput
	if err := os.MkdirAll(outdir, 0o777); err != nil {
		return "", s.fail(1, "batch.outputDir: %v", err)
	}
	script := filepath.Join(s.P.Run, "flux-job.batch")
	if err := os.WriteFile(script, []byte(batchScript(s.S.Command, s.S.Batch, outdir)), 0o755); err != nil {
		return "", s.fail(1, "writing the batch script: %v", err)
	}
	if err := os.Chmod(script, 0o755); err != nil {
		return "", s.fail(1, "writing the batch script: %v", err)
	}
	run := "flux batch " + batchNodes(s.size, s.S.Tasks) + " " + verbose + " --flags waitable " + script + " && flux job wait --all"
	if s.S.Quiet {
		run = "{ " + run + "; } > /dev/null 2>&1"
	}
	return run, nil
}
