package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Supervisor is one broker container's supervisor. Its fields before the blank line are set
// by the caller (New sets the defaults); the rest is its state as it goes.
type Supervisor struct {
	P                     Paths
	Stdin, Stdout, Stderr *os.File
	Signals               <-chan os.Signal // SIGTERM and SIGINT
	Now                   func() time.Time // the clock of the quick-failure rule
	After                 func(time.Duration) <-chan time.Time

	S       Settings
	env     *Environ
	dir     string // the working directory of what it starts ("": its own)
	procs   *Procs
	signals <-chan os.Signal
	logMu   sync.Mutex
	// onlineMu orders the readiness watcher's .online before the end of the broker's run.
	onlineMu sync.Mutex

	held        []*os.File // the helpers' FIFOs, held open while it lives
	helpersHeld bool
	shell       *userShell
	svc         services

	hosts, size        string
	fluxCmd            string
	fluxRoot, fluxFrom string
	pluginPath         string
	pmixPlugins        string
	brokerPath         string
	rc1Modprobe        bool
	killUnjoined       bool
	state, stateTmp    string
	fastExit           bool
	broker             *Child // the running broker, nil between runs
	stopping           bool
}

// exitError ends the container with code.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// New returns a supervisor of the container whose environment is environ, with the default
// paths, the process's stdio, and the real clock; signals are SIGTERM and SIGINT.
func New(environ []string, signals <-chan os.Signal) *Supervisor {
	return &Supervisor{
		P: DefaultPaths, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Signals: signals,
		Now: time.Now, env: NewEnviron(environ),
	}
}

// Run runs the broker container to its end and returns its exit code.
func (s *Supervisor) Run() int {
	s.procs = Processes()
	s.signals = s.Signals
	s.svc.running = map[*Child]bool{}
	err := s.run()
	s.closeUserShell()
	s.stopServices()
	s.helpersEnded()
	for _, f := range s.held {
		f.Close()
	}
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	default:
		fmt.Fprintf(s.Stderr, "minicluster[%s]: error: %v\n", s.indexText(), err)
		return 1
	}
}

// run does what the broker container does, in order.
func (s *Supervisor) run() error {
	var err error
	if s.S, err = ReadSettings(s.env.Value); err != nil {
		return err
	}
	if err := s.userCommand("init", s.S.CmdInit); err != nil {
		return err
	}
	// commands.init may export settings.
	if s.S, err = ReadSettings(s.env.Value); err != nil {
		return err
	}
	if s.S.IndexText == "" {
		fmt.Fprintln(s.Stderr, "minicluster: JOB_COMPLETION_INDEX: this pod must belong to an indexed Job (JOB_COMPLETION_INDEX is unset)")
		return exitError{code: 2}
	}
	if s.hosts, err = readTrimmed(s.P.Config + "/hosts"); err != nil {
		return err
	}
	if s.size, err = readTrimmed(s.P.Config + "/size"); err != nil {
		return err
	}
	if err := s.waitForHelpers(); err != nil {
		return err
	}
	fluxEnv(s.env, s.P)
	if err := s.findFlux(); err != nil {
		return err
	}
	if err := s.useFluxion(); err != nil {
		return err
	}
	if err := s.findPMIx(); err != nil {
		return err
	}
	if err := s.preCommands(); err != nil {
		return err
	}
	// commands.pre may export settings (the command, say).
	if s.S, err = ReadSettings(s.env.Value); err != nil {
		return err
	}
	if err := s.installKeys(); err != nil {
		return err
	}
	if err := s.encodeResources(); err != nil {
		return err
	}
	if err := s.startAPI(); err != nil {
		return err
	}
	s.startAutoscale()
	args := s.brokerOptions()
	state, err := s.stateOptions()
	if err != nil {
		return err
	}
	args = append(args, state...)
	args = append(args, s.rc3Option()...)
	args = append(args, userBrokerOptions(s.S.BrokerOptions)...)
	program, err := s.initialProgram()
	if err != nil {
		return err
	}
	args = append(args, program...)
	if s.S.Index == 0 {
		s.log("lead broker: %s of hosts %s, quorum %s", s.size, s.hosts, s.size)
	}
	if err := s.findWrappedBroker(); err != nil {
		return err
	}
	s.useModprobeRc1()
	return s.supervise(args)
}

// readTrimmed reads a file as $(cat FILE) does: its trailing newlines cut.
func readTrimmed(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// indexText is the pod's index for the log's prefix.
func (s *Supervisor) indexText() string { return or(s.S.IndexText, "?") }

// log says what the supervisor does, unless logging.quiet: the log then holds the command's
// output and commands.post's alone.
func (s *Supervisor) log(format string, args ...any) {
	if s.S.Quiet {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.Stderr, "minicluster[%s]: %s\n", s.indexText(), fmt.Sprintf(format, args...))
}

// die says why the broker cannot start (even under logging.quiet) and returns the error that
// ends the container with the chart's cannot-start code, which fails the Job.
func (s *Supervisor) die(format string, args ...any) error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.Stderr, "minicluster[%s]: error: %s\n", s.indexText(), fmt.Sprintf(format, args...))
	return exitError{code: s.S.ExitCannotStart}
}

// fail logs an error and returns the error that ends the container with code.
func (s *Supervisor) fail(code int, format string, args ...any) error {
	s.log("error: "+format, args...)
	return exitError{code: code}
}

// now is the clock.
func (s *Supervisor) now() time.Time { return s.Now() }

// sleep waits d; a SIGTERM on the way ends the container (nothing has started yet).
func (s *Supervisor) sleep(d time.Duration) error {
	select {
	case <-s.signals:
		s.log("SIGTERM: stopping")
		return exitError{code: 143}
	case <-time.After(d):
		return nil
	}
}

// pause waits a twentieth of a second.
func (s *Supervisor) pause() error { return s.sleep(50 * time.Millisecond) }
