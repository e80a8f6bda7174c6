package supervisor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"
)

// commands.* (the operator's). init, pre, brokerPre and workerPre run, in that order, in one
// shell (the operator's script runs them in the shell that starts the broker): what they set
// is seen by the next, and what they export, the directory they cd to, their umask and their
// limits (ulimit) reach the broker and so the command; an exit in them ends the container.
// They are the user's shell by definition, so a shell runs them: this program keeps that shell
// (userShell) from init to the last of them, and after each one asks a child of it (this
// program again: ShellState) what a process it starts would inherit. post runs in a shell of its
// own. Signals: none goes to the user's shell; a SIGTERM while it runs waits until the commands
// have ended (as it did when they ran in the container's process 1, which ignores it until it
// traps it). logging.quiet discards the output unless shown (post's is); a failure is logged and
// ignored, or with logging.strict ends the pod with its status (the operator's `set -e`).

// userShellScript is the shell that runs the commands. Requests come on fd 3, one a line:
// "SYNC SCRIPT quiet|shown": it sources SYNC (exports and unsets that bring its environment to
// this program's), evals SCRIPT's text, and reports on fd 4 (ShellState's JSON). It starts by
// reporting what it was given, the base the later reports are compared with.
const userShellScript = `__mc_self=$1
shift
if ! command -v source > /dev/null 2>&1; then
  eval 'source() { . "$1"; }'
fi
"$__mc_self" shell-state 0 >&4 3<&- 4<&- || exit 1
while IFS=' ' read -r __mc_sync __mc_file __mc_show <&3; do
  . "$__mc_sync"
  __mc_text=
  while IFS= read -r __mc_line || [ -n "$__mc_line" ]; do
    __mc_text="$__mc_text$__mc_line
"
  done < "$__mc_file"
  __mc_status=0
  if [ "$__mc_show" = quiet ]; then
    { eval "$__mc_text"; } > /dev/null 2>&1 3<&- 4<&- || __mc_status=$?
  else
    { eval "$__mc_text"; } 3<&- 4<&- || __mc_status=$?
  fi
  "$__mc_self" shell-state "$__mc_status" >&4 3<&- 4<&- || exit 1
done
`

// ShellStateReport is what a process the user's shell starts inherits.
type ShellStateReport struct {
	Status int               `json:"status"`
	Env    map[string]string `json:"env"`
	Dir    string            `json:"dir"`
	Umask  int               `json:"umask"`
	Limits map[int][2]uint64 `json:"limits"`
}

// limitsCarried are the limits a ulimit in commands.* may change for the broker.
var limitsCarried = []int{unix.RLIMIT_AS, unix.RLIMIT_CORE, unix.RLIMIT_CPU, unix.RLIMIT_DATA, unix.RLIMIT_FSIZE,
	unix.RLIMIT_LOCKS, unix.RLIMIT_MEMLOCK, unix.RLIMIT_MSGQUEUE, unix.RLIMIT_NICE, unix.RLIMIT_NOFILE,
	unix.RLIMIT_NPROC, unix.RLIMIT_RTPRIO, unix.RLIMIT_SIGPENDING, unix.RLIMIT_STACK}

// ShellState writes the state of the user's shell, its parent (its exports, directory, umask,
// limits: what any process it starts inherits), and the user command's status to w, as JSON:
// the `shell-state` command.
func ShellState(status int, w io.Writer) error {
	r := ShellStateReport{Status: status, Env: map[string]string{}, Limits: map[int][2]uint64{}}
	for k, v := range NewEnviron(os.Environ()).vars {
		r.Env[k] = v
	}
	r.Dir, _ = os.Getwd()
	r.Umask = syscall.Umask(0)
	syscall.Umask(r.Umask)
	// The shell's own limits: a Go program raises its limit of open files as it starts.
	for _, l := range limitsCarried {
		var lim unix.Rlimit
		if unix.Prlimit(os.Getppid(), l, nil, &lim) == nil {
			r.Limits[l] = [2]uint64{lim.Cur, lim.Max}
		}
	}
	return json.NewEncoder(w).Encode(r)
}

// userShell is the shell of commands.init, pre, brokerPre and workerPre.
type userShell struct {
	child    *Child
	requests *os.File
	reports  *json.Decoder
	replies  *os.File
	base     ShellStateReport // what it was started with
	env      map[string]string
	dir      string
}

// shellName: the names a shell can export.
var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// startUserShell starts the user's shell with this program's environment.
func (s *Supervisor) startUserShell() error {
	self, err := os.Executable()
	if err != nil {
		return s.fail(1, "commands: %v", err)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return s.fail(1, "commands: %v", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		return s.fail(1, "commands: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-c", userShellScript, "sh", self)
	cmd.Env = s.env.List()
	cmd.Dir = s.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
	cmd.ExtraFiles = []*os.File{reqR, repW}
	child, err := s.procs.Start(cmd)
	reqR.Close()
	repW.Close()
	if err != nil {
		reqW.Close()
		repR.Close()
		return s.fail(1, "commands: starting /bin/sh: %v", err)
	}
	sh := &userShell{child: child, requests: reqW, replies: repR, reports: json.NewDecoder(repR)}
	if err := sh.reports.Decode(&sh.base); err != nil {
		return s.shellEnded(sh)
	}
	sh.env, sh.dir = sh.base.Env, sh.base.Dir
	s.shell = sh
	return nil
}

// shellEnded ends the container with the status of a user's shell that ended (an exit in a
// command).
func (s *Supervisor) shellEnded(sh *userShell) error {
	sh.requests.Close()
	sh.replies.Close()
	status := sh.child.Wait()
	s.shell = nil
	return exitError{code: status}
}

// closeUserShell ends the user's shell: no command is left for it.
func (s *Supervisor) closeUserShell() {
	if s.shell == nil {
		return
	}
	s.shell.requests.Close()
	s.shell.replies.Close()
	s.shell.child.Wait()
	s.shell = nil
}

// inShell runs script in the user's shell and takes its exports, directory, umask and limits.
func (s *Supervisor) inShell(script string, shown bool) (int, error) {
	if s.shell == nil {
		if err := s.startUserShell(); err != nil {
			return 0, err
		}
	}
	sh := s.shell
	dir, err := os.MkdirTemp(s.P.Run, ".commands-")
	if err != nil {
		return 0, s.fail(1, "commands: %v", err)
	}
	defer os.RemoveAll(dir)
	sync, file := filepath.Join(dir, "sync"), filepath.Join(dir, "script")
	if err := os.WriteFile(sync, []byte(s.syncLines(sh)), 0o600); err != nil {
		return 0, s.fail(1, "commands: %v", err)
	}
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		return 0, s.fail(1, "commands: %v", err)
	}
	show := "quiet"
	if shown {
		show = "shown"
	}
	if _, err := fmt.Fprintf(sh.requests, "%s %s %s\n", sync, file, show); err != nil {
		return 0, s.shellEnded(sh)
	}
	var r ShellStateReport
	if err := sh.reports.Decode(&r); err != nil {
		return 0, s.shellEnded(sh)
	}
	s.takeShellState(sh, r)
	return r.Status, nil
}

// syncLines are the shell's lines that bring its environment and directory to this
// program's (what changed here since its last report).
func (s *Supervisor) syncLines(sh *userShell) string {
	var lines []string
	for _, kv := range s.env.List() {
		k, v, _ := cut(kv)
		if old, ok := sh.env[k]; (!ok || old != v) && shellName.MatchString(k) {
			lines = append(lines, "export "+k+"="+quote(v))
		}
	}
	for k := range sh.env {
		if _, ok := s.env.Get(k); !ok && shellName.MatchString(k) {
			lines = append(lines, "unset "+k)
		}
	}
	if sh.dir != s.dir && s.dir != "" {
		lines = append(lines, "cd "+quote(s.dir))
	}
	sort.Strings(lines)
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}

// takeShellState makes what the shell reported this program's: its environment, directory,
// and the umask and limits it changed.
func (s *Supervisor) takeShellState(sh *userShell, r ShellStateReport) {
	for k, v := range r.Env {
		if k != "_" {
			s.env.Set(k, v)
		}
	}
	for _, kv := range s.env.List() {
		k, _, _ := cut(kv)
		if _, ok := r.Env[k]; !ok && shellName.MatchString(k) {
			s.env.Unset(k)
		}
	}
	sh.env = r.Env
	if r.Dir != "" {
		s.dir, sh.dir = r.Dir, r.Dir
	}
	if r.Umask != sh.base.Umask {
		syscall.Umask(r.Umask)
	}
	for l, v := range r.Limits {
		if sh.base.Limits[l] != v {
			lim := syscall.Rlimit{Cur: v[0], Max: v[1]}
			if err := syscall.Setrlimit(l, &lim); err != nil {
				s.log("commands: the limit %d the commands set: %v", l, err)
			}
		}
	}
}

// cut splits k=v.
func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// userCommand runs commands.NAME's script: in the user's shell, or post (shown) in a shell of
// its own.
func (s *Supervisor) userCommand(name, script string) error {
	if script == "" {
		return nil
	}
	shown := !s.S.Quiet || name == "post"
	var status int
	if name == "post" {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env, cmd.Dir = s.env.List(), s.dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = s.Stdin, s.Stdout, s.Stderr
		status = s.procs.Run(cmd)
	} else {
		var err error
		if status, err = s.inShell(script, shown); err != nil {
			return err
		}
	}
	if status != 0 {
		if s.S.Strict {
			fmt.Fprintf(s.Stderr, "minicluster[%s]: error: commands.%s failed with status %d (logging.strict)\n", s.indexText(), name, status)
			return exitError{code: status}
		}
		s.log("commands.%s failed with status %d (ignored: logging.strict is off)", name, status)
	}
	return nil
}

// preCommands: commands.pre on every broker, then brokerPre on the lead or workerPre on the
// others; then the user's shell ends.
func (s *Supervisor) preCommands() error {
	defer s.closeUserShell()
	if err := s.userCommand("pre", s.S.CmdPre); err != nil {
		return err
	}
	if s.S.Index == 0 {
		return s.userCommand("brokerPre", s.S.CmdBrokerPre)
	}
	return s.userCommand("workerPre", s.S.CmdWorkerPre)
}
