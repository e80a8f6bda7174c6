package fluxstandin

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// serveSubmit runs one `flux submit` request on rank 0: tasks round-robin over the first
// `nodes` online ranks, output relayed back as it comes, then the highest task status.
func (b *broker) serveSubmit(conn net.Conn) {
	defer conn.Close()
	client := newPeer(0, conn)
	var req message
	if err := json.NewDecoder(conn).Decode(&req); err != nil || req.Type != "submit" || len(req.Cmd) == 0 {
		_ = client.send(message{Type: "exit", Code: 1, Data: "flux-standin: bad submit request"})
		return
	}
	b.mu.Lock()
	var ranks []int
	for r := range b.subtree {
		ranks = append(ranks, r)
	}
	b.nextJob++
	id := b.nextJob
	events := make(chan message, 256)
	b.jobs[id] = events
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.jobs, id)
		b.mu.Unlock()
	}()
	sort.Ints(ranks)
	if req.Nodes > len(ranks) {
		_ = client.send(message{Type: "exit", Code: 1, Data: fmt.Sprintf("flux-standin: %d nodes requested, %d brokers online", req.Nodes, len(ranks))})
		return
	}
	b.infof("job %d: %d tasks of %q on ranks %v", id, req.Tasks, req.Cmd, ranks[:req.Nodes])
	for task := 0; task < req.Tasks; task++ {
		env := []string{"FLUX_STANDIN_BROKER_RANK=" + strconv.Itoa(ranks[task%req.Nodes]), "FLUX_TASK_RANK=" + strconv.Itoa(task), "FLUX_JOB_SIZE=" + strconv.Itoa(req.Tasks), "FLUX_JOB_NNODES=" + strconv.Itoa(req.Nodes)}
		b.down(message{Type: "run", Job: id, Task: task, Rank: ranks[task%req.Nodes], Cmd: req.Cmd, Env: env})
	}
	worst := 0
	for left := req.Tasks; left > 0; {
		m := <-events
		switch m.Type {
		case "output":
			_ = client.send(m)
		case "done":
			left--
			worst = max(worst, m.Code)
		}
	}
	_ = client.send(message{Type: "exit", Code: worst})
}

// down delivers a run request to its rank: here, or through the child it is behind.
func (b *broker) down(m message) {
	if m.Rank == b.rank {
		go b.runTask(m)
		return
	}
	b.mu.Lock()
	via, ok := b.subtree[m.Rank]
	b.mu.Unlock()
	if !ok || via == nil || via.send(m) != nil {
		b.up(message{Type: "done", Job: m.Job, Task: m.Task, Code: 1, Rank: m.Rank})
	}
}

// up sends task output and status toward rank 0, which hands them to the job.
func (b *broker) up(m message) {
	b.mu.Lock()
	parent, events := b.parent, b.jobs[m.Job]
	b.mu.Unlock()
	switch {
	case b.rank != 0 && parent != nil:
		_ = parent.send(m)
	case b.rank == 0 && events != nil:
		events <- m
	}
}

func (b *broker) runTask(m message) {
	cmd := exec.CommandContext(b.ctx, m.Cmd[0], m.Cmd[1:]...)
	cmd.Env = append(os.Environ(), m.Env...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		b.up(message{Type: "output", Job: m.Job, Task: m.Task, Stream: "stderr", Data: fmt.Sprintf("flux-standin[%d]: %v\n", b.rank, err)})
		b.up(message{Type: "done", Job: m.Job, Task: m.Task, Code: 127})
		return
	}
	relay := func(r io.Reader, stream string, done chan<- struct{}) {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				b.up(message{Type: "output", Job: m.Job, Task: m.Task, Stream: stream, Data: line})
			}
			if err != nil {
				close(done)
				return
			}
		}
	}
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go relay(stdout, "stdout", outDone)
	go relay(stderr, "stderr", errDone)
	<-outDone
	<-errDone
	b.up(message{Type: "done", Job: m.Job, Task: m.Task, Code: exitCode(cmd.Wait())})
}

// Submit is `flux submit --watch -N nodes -n tasks CMD...` inside an instance (FLUX_URI set).
func Submit(args []string, uri string, stdout, stderr io.Writer) int {
	nodes, tasks, watch := 1, 0, false
	var cmd []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		takeValue := func() (int, error) {
			if !hasValue {
				if i+1 == len(args) {
					return 0, fmt.Errorf("%s needs a value", a)
				}
				i++
				value = args[i]
			}
			return strconv.Atoi(value)
		}
		var err error
		switch {
		case name == "--quiet":
		case name == "--watch":
			watch = true
		case name == "-N" || name == "--nodes":
			nodes, err = takeValue()
		case name == "-n" || name == "--ntasks":
			tasks, err = takeValue()
		case strings.HasPrefix(a, "-N") || strings.HasPrefix(a, "-n"):
			hasValue, value = true, a[2:]
			if a[1] == 'N' {
				nodes, err = takeValue()
			} else {
				tasks, err = takeValue()
			}
		case strings.HasPrefix(a, "-"):
			err = fmt.Errorf("option %s is not supported by the stand-in (only --quiet --watch -N -n)", a)
		default:
			cmd = args[i:]
			i = len(args)
		}
		if err != nil {
			fmt.Fprintf(stderr, "flux-standin submit: %v\n", err)
			return 1
		}
	}
	if tasks == 0 {
		tasks = nodes
	}
	switch {
	case !watch:
		fmt.Fprintln(stderr, "flux-standin submit: only --watch is supported (the stand-in has no job queue)")
		return 1
	case len(cmd) == 0:
		fmt.Fprintln(stderr, "flux-standin submit: no command; usage: flux submit --watch -N NODES -n TASKS CMD...")
		return 1
	case nodes < 1 || tasks < nodes:
		fmt.Fprintf(stderr, "flux-standin submit: -N %d -n %d: need 1 <= nodes <= tasks\n", nodes, tasks)
		return 1
	}
	path, ok := strings.CutPrefix(uri, "local://")
	if !ok {
		fmt.Fprintf(stderr, "flux-standin submit: FLUX_URI=%q is not local://PATH; run flux submit inside an instance (as its initial program)\n", uri)
		return 1
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintf(stderr, "flux-standin submit: %v\n", err)
		return 1
	}
	defer conn.Close()
	if err := json.NewEncoder(conn).Encode(message{Type: "submit", Nodes: nodes, Tasks: tasks, Cmd: cmd}); err != nil {
		fmt.Fprintf(stderr, "flux-standin submit: %v\n", err)
		return 1
	}
	dec := json.NewDecoder(conn)
	for {
		var m message
		if err := dec.Decode(&m); err != nil {
			fmt.Fprintf(stderr, "flux-standin submit: lost the instance: %v\n", err)
			return 1
		}
		switch {
		case m.Type == "output" && m.Stream == "stderr":
			io.WriteString(stderr, m.Data)
		case m.Type == "output":
			io.WriteString(stdout, m.Data)
		case m.Type == "exit":
			if m.Data != "" {
				fmt.Fprintln(stderr, m.Data)
			}
			return m.Code
		}
	}
}
