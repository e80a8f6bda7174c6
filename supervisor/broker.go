package supervisor

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The broker's runs. A broker that exits because its instance ended starts again and
// rejoins (Settings.Rejoin): a lost lead comes back as a new pod and the instance re-forms
// whole. An ephemeral lead exits with its command's status instead; the Job's successPolicy
// then ends the workers. A broker that fails within seconds of starting, three times running,
// cannot start (a config or certificate problem): exit Settings.ExitCannotStart, which fails
// the Job. SIGTERM (scale-down, uninstall, a deleted pod) stops the broker; the container
// exits 143. This file is the one place that decides what a signal means (see the package
// doc).

// quickFailure is how soon after its start a broker's failure counts as quick.
const quickFailure = 10 * time.Second

// supervise runs the broker with args until afterBroker ends the container.
func (s *Supervisor) supervise(args []string) error {
	// FLUX_URI (the container's, for kubectl exec) is this broker's own socket: the broker
	// sets it for all it runs, and reads it only when started as a job of another instance.
	s.env.Unset("FLUX_URI")
	// A SIGTERM while the container was being prepared: never start the broker.
	select {
	case <-s.signals:
		s.onTerm()
		return exitError{code: 143}
	default:
	}
	quick, joinedOnce := 0, false
	for {
		started := s.now()
		status := s.runBroker(args)
		// A worker that has joined its parent once has a config and a certificate that work.
		if exists(s.P.joined()) {
			joinedOnce = true
		}
		if err := s.afterBroker(status, started, &quick, joinedOnce); err != nil {
			return err
		}
		select {
		case <-s.signals:
			s.onTerm()
		case <-time.After(time.Second):
		}
		if s.stopping {
			return exitError{code: 143}
		}
	}
}

// brokerCmd is the broker's command: flux broker ARGS, or under flux.wrap
// flux env WRAP... flux-broker ARGS.
func (s *Supervisor) brokerCmd(args []string) *exec.Cmd {
	var cmd *exec.Cmd
	if s.brokerPath != "" {
		cmd = s.flux(append(append(append([]string{"env"}, wrapWords(s.S.Wrap)...), s.brokerPath), args...)...)
	} else {
		cmd = s.flux(append([]string{"broker"}, args...)...)
	}
	cmd.Dir = s.dir
	cmd.Stdout = s.Stdout
	return cmd
}

// runBroker is one run of the broker, until it is gone; it returns its status. SIGTERM
// (onTerm) stops it on the way.
func (s *Supervisor) runBroker(args []string) int {
	_ = os.RemoveAll(s.P.rundir())
	_ = os.Remove(s.P.commandStatus())
	_ = os.Remove(s.P.online())
	if err := os.Mkdir(s.P.rundir(), 0o700); err == nil {
		_ = os.Chmod(s.P.rundir(), 0o700)
	}
	_ = syscall.Mkfifo(s.P.onlineFIFO(), 0o600)
	broker, err := s.procs.Start(s.brokerCmd(args))
	if err != nil {
		s.log("starting the broker: %v", err)
		return 127
	}
	stop := make(chan struct{})
	go s.watchOnline(broker, stop)
	s.broker = broker
	// A SIGTERM while no broker ran is kept for this one.
	if s.stopping {
		s.stopBroker()
	}
	var status int
	for done := false; !done; {
		select {
		case <-s.signals:
			s.onTerm()
		case status = <-broker.Done:
			done = true
		}
	}
	s.broker = nil
	// The watcher may have seen the broker alive just before it went: stop is closed under
	// onlineMu before .online is removed, so that it cannot write it after. The watcher is not
	// waited for: a flux uptime it runs may take a while on a busy node, and the container's
	// end (a SIGTERM's 143) must not wait for it.
	s.onlineMu.Lock()
	close(stop)
	s.onlineMu.Unlock()
	_ = os.Remove(s.P.online())
	return status
}

// onTerm is what SIGTERM (or SIGINT) means: stop the broker, once.
func (s *Supervisor) onTerm() {
	s.stopping = true
	// Once only: on uninstall the lead stops its workers as they get their own SIGTERM.
	if exists(s.P.stopping()) {
		s.log("SIGTERM: the broker is already stopping")
		return
	}
	if s.broker != nil {
		s.stopBroker()
	} else {
		s.log("SIGTERM: stopping")
	}
	_ = touch(s.P.stopping())
}

// stopBroker passes SIGTERM to the broker, or kills a worker's broker that has not joined
// its parent.
func (s *Supervisor) stopBroker() {
	b := s.broker
	if s.killUnjoined && !exists(s.P.joined()) {
		s.log("SIGTERM: the broker has not joined its parent yet: killing it")
		b.Signal(syscall.SIGKILL)
		return
	}
	s.log("SIGTERM: stopping the broker")
	b.Signal(syscall.SIGTERM)
	if s.S.Index != 0 || s.state != "" {
		go s.killAfterRc3(b)
	}
	if s.state != "" {
		go s.boundDump(b)
	}
}

// killAfterRc3: after its rc3 a worker's broker says goodbye to its parent and waits up to
// 60 s for the answer. When the lead has gone first (an ephemeral lead's fast exit, a lost
// lead), no answer comes; the worker's jobs and modules are done by then, so it is killed 2 s
// after its rc3. So is a lead with flux.state whose rc3 (the dump) failed and left its modules
// loaded.
func (s *Supervisor) killAfterRc3(b *Child) {
	for !exists(s.P.rc3Done()) && b.Alive() {
		<-time.After(50 * time.Millisecond)
	}
	<-time.After(2 * time.Second)
	if b.Alive() {
		s.log("the broker's rc3 ended 2 s ago, but the broker has not exited (a worker: no answer to its goodbye from its parent): killing it")
		b.Signal(syscall.SIGKILL)
	}
}

// boundDump (flux.state): once the lead's job clean-up is over and its rc3 (the dump) has
// started, the broker has Settings.StateDumpTimeout seconds to finish it, so that a dump that
// hangs ends the pod within terminationGracePeriodSeconds, keeping the previous archive.
func (s *Supervisor) boundDump(b *Child) {
	for !exists(s.P.rc3Started()) && b.Alive() {
		<-time.After(50 * time.Millisecond)
	}
	deadline := time.Now().Add(time.Duration(s.S.StateDumpTimeout) * time.Second)
	for !exists(s.P.rc3Done()) && b.Alive() {
		if !time.Now().Before(deadline) {
			s.log("flux.state: the broker's rc3 (the content dump) has taken more than flux.state.dumpTimeoutSeconds=%d: killing it; the previous archive is kept", s.S.StateDumpTimeout)
			b.Signal(syscall.SIGKILL)
			return
		}
		<-time.After(50 * time.Millisecond)
	}
}

// afterBroker says what the broker's exit (status) means: the container ends (an error, an
// exitError for a status) or the broker starts again (nil).
func (s *Supervisor) afterBroker(status int, started time.Time, quick *int, joinedOnce bool) error {
	if s.stopping {
		return exitError{code: 143}
	}
	post := func(code int) error {
		if err := s.userCommand("post", s.S.CmdPost); err != nil {
			return err
		}
		return exitError{code: code}
	}
	if s.S.ephemeralLead() {
		b, _ := os.ReadFile(s.P.commandStatus())
		if text := strings.TrimSpace(string(b)); s.fastExit && text != "" {
			if n, err := strconv.Atoi(text); err == nil {
				status = n
			}
			s.log("the command ended with status %d (flux.ephemeralExit=fast: the instance stops with the pods)", status)
		} else {
			s.log("the command ended with status %d", status)
		}
		return post(status)
	}
	// The lead's command succeeded and its wrapper ended this broker (fast exit): done.
	if s.S.Index != 0 && exists(s.P.commandEnded()) {
		s.log("the command ended with status 0 on the lead, which ended this broker: the worker is complete")
		return post(0)
	}
	// flux.completeWorkers (the operator's): a worker ends, successfully, once its broker exits.
	if s.S.Index != 0 && s.S.CompleteWorkers {
		s.log("the broker exited with status %d: the worker is complete (flux.completeWorkers)", status)
		return post(0)
	}
	if status == 0 {
		*quick = 0
		if exists(s.P.apiStopped()) {
			s.log("the instance was stopped through the API (POST /v1/service/stop)")
			return exitError{code: 0}
		}
		if !s.S.Rejoin {
			s.log("the instance ended")
			return post(0)
		}
		s.log("the instance ended: starting the broker again to rejoin the lead")
		return nil
	}
	if s.now().Sub(started) < quickFailure {
		*quick++
	} else {
		*quick = 1
	}
	// Quick failures after a join are the lead's doing, not a config problem: a lead still
	// stopping (its rc3, such as a long content dump) turns a rejoining worker away at once.
	if joinedOnce {
		*quick = 0
	}
	if *quick >= 3 {
		return s.die("flux broker failed %d times in a row within 10 s of starting (last exit status %d): a config or certificate problem a retry cannot fix; its messages are above", *quick, status)
	}
	s.log("broker exited with status %d: starting it again", status)
	return nil
}
