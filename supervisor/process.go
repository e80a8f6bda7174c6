package supervisor

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
)

// Procs starts every child process of this program and reaps it. As the container's process
// 1 this program also inherits every orphan of the container (a job shell whose broker was
// killed, a background process of a wrapper), which only it can reap: so one loop reaps
// every process that ends (wait4 of any child) and hands each of ours its status. Children
// are therefore never waited for with os/exec's Wait.
type Procs struct {
	mu      sync.Mutex
	waiting map[int]chan int // pid -> its status (a shell's: 128+N for signal N)
	sigchld chan os.Signal
}

var (
	procs     *Procs
	procsOnce sync.Once
)

// Processes returns the process's one reaper, started at its first use: it reaps every child
// of the process, so nothing else in the process may wait for a child of its own.
func Processes() *Procs {
	procsOnce.Do(func() {
		procs = &Procs{waiting: map[int]chan int{}, sigchld: make(chan os.Signal, 1)}
		signal.Notify(procs.sigchld, syscall.SIGCHLD)
		go func() {
			for range procs.sigchld {
				procs.reap()
			}
		}()
	})
	return procs
}

// reap collects every child that has ended. It holds the lock, so that a child started under
// it (Start) is registered before its end can be collected.
func (p *Procs) reap() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		if ch, ok := p.waiting[pid]; ok {
			delete(p.waiting, pid)
			ch <- shellStatus(ws)
			close(ch)
		}
	}
}

// shellStatus is ws as a shell says it: the exit code, or 128+N for a process killed by
// signal N.
func shellStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// Child is a process Procs started.
type Child struct {
	Pid  int
	Done <-chan int // receives the status once, then is closed
	p    *Procs
}

// Start starts cmd; its stdio must be nil or *os.File (no copying goroutines: nothing waits
// for them).
func (p *Procs) Start(cmd *exec.Cmd) (*Child, error) {
	for _, f := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		switch f.(type) {
		case nil, *os.File:
		default:
			return nil, errors.New("supervisor: a child's stdio must be files")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan int, 1)
	p.waiting[cmd.Process.Pid] = ch
	// Let the reaper look now: the child may have ended before it was registered.
	select {
	case p.sigchld <- syscall.SIGCHLD:
	default:
	}
	return &Child{Pid: cmd.Process.Pid, Done: ch, p: p}, nil
}

// Alive says whether c has not been reaped yet (a zombie counts as alive, as kill -0 says).
func (c *Child) Alive() bool {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	_, ok := c.p.waiting[c.Pid]
	return ok
}

// Signal sends sig to c, unless c has been reaped (its pid may be another's by then).
func (c *Child) Signal(sig syscall.Signal) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if _, ok := c.p.waiting[c.Pid]; ok {
		_ = syscall.Kill(c.Pid, sig)
	}
}

// Wait returns c's status.
func (c *Child) Wait() int { return <-c.Done }

// Run runs cmd to its end and returns its status (127 when it cannot start, as a shell says).
func (p *Procs) Run(cmd *exec.Cmd) int {
	c, err := p.Start(cmd)
	if err != nil {
		return 127
	}
	return c.Wait()
}

// Output runs cmd and returns its standard output, with the trailing newlines cut as a
// shell's $(...) does, and its status.
func (p *Procs) Output(cmd *exec.Cmd) (string, int) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", 127
	}
	cmd.Stdout = w
	c, err := p.Start(cmd)
	w.Close()
	if err != nil {
		r.Close()
		return "", 127
	}
	b, _ := io.ReadAll(r)
	r.Close()
	status := c.Wait()
	out := string(b)
	for len(out) > 0 && out[len(out)-1] == '\n' {
		out = out[:len(out)-1]
	}
	return out, status
}
