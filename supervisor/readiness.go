package supervisor

import (
	"bufio"
	"os"
	"strings"
	"time"
)

// watchOnline is the broker's readiness: .online in the keys volume (the keys container
// serves it to the kubelet's probe), once the broker is in Flux's run state: the lead once
// every broker of the quorum (size) is online and its rc1, the scheduler's load included, is
// done; a worker once it has joined the broker.online group the lead counts and its parent
// runs. Once rc1 has ended (modprobe-rc1.py leaves rc1-done), a process it left behind says
// so on online.fifo ("run"; "poll": ask Flux). Elsewhere flux uptime says the state, asked
// every 0.2 s once rc1 has ended; before that every second, or every 5 s where Flux's
// modprobe runs rc1 (only in case it refused the task that leaves the mark), so that a broker
// that is starting, or waiting to join its parent, costs its node little: each flux command
// takes some 30 ms of CPU. Signals: it sends none and owns none (broker.go stops it, through
// stop, as the broker's run ends). It returns when done, or soon after stop is closed (once a
// flux uptime under way has answered); it writes no .online once stop is closed.
func (s *Supervisor) watchOnline(broker *Child, stop <-chan struct{}) {
	// Held for reading and writing from the start: the line may come before it is read.
	var fifo *os.File
	if isFIFO(s.P.onlineFIFO()) {
		if f, err := os.OpenFile(s.P.onlineFIFO(), os.O_RDWR, 0); err == nil {
			fifo = f
			defer f.Close()
		}
	}
	every := 5
	if fifo != nil && s.rc1Modprobe {
		every = 25
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	// Under onlineMu, so that once runBroker has closed stop no .online is written.
	online := func() {
		s.onlineMu.Lock()
		defer s.onlineMu.Unlock()
		if !stopped() {
			_ = touch(s.P.online())
		}
	}
	for polls := 0; broker.Alive() && !stopped(); polls++ {
		rc1Done := exists(s.P.rc1Done())
		if fifo != nil && rc1Done {
			if s.readFIFOLine(fifo, stop) == "run" {
				online()
				return
			}
			fifo = nil
		}
		if (fifo == nil && rc1Done) || polls%every == 0 {
			if s.brokerState(rc1Done) == "run" {
				online()
				return
			}
		}
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readFIFOLine reads a line from fifo, or returns "" once stop is closed.
func (s *Supervisor) readFIFOLine(fifo *os.File, stop <-chan struct{}) string {
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(fifo).ReadString('\n')
		line <- strings.TrimRight(l, "\n")
	}()
	select {
	case l := <-line:
		return l
	case <-stop:
		// Closing the FIFO ends the read (Go's poller owns it).
		fifo.Close()
		return ""
	}
}

// brokerState asks flux uptime for the broker's state (" 07:23:04 run 2.3m,  owner ...": the
// second word). flux uptime crashes (flux-core 0.88) where the instance's user has no name (a
// runAsUser the image's /etc/passwd lacks): there the end of rc1 is the sign, a little early.
func (s *Supervisor) brokerState(rc1Done bool) string {
	cmd := s.flux("uptime")
	cmd.Env = s.env.With("FLUX_URI=" + s.P.localURI())
	cmd.Stderr = nil
	out, status := s.procs.Output(cmd)
	if status > 128 && rc1Done {
		return "run"
	}
	words := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if len(words) >= 2 {
		return words[1]
	}
	return ""
}
