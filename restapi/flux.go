package restapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/minicluster/minicluster/internal/hostlist"
	"github.com/minicluster/minicluster/internal/limits"
)

// Flux runs Flux's command line against the lead broker. Each call is a short-lived flux
// process; the C commands (flux job submit, list, eventlog, raise) start in milliseconds, the
// Python ones (flux resource, shutdown) in a few hundred.
type Flux struct {
	// Command is the flux program (default "flux", from PATH).
	Command string
	// Env is the environment of the flux processes (nil: the server's); FLUX_URI in it names
	// the broker.
	Env []string
}

// FluxError is a flux command that failed; Msg is what it said.
type FluxError struct {
	Args []string
	Msg  string
}

func (e *FluxError) Error() string { return e.Msg }

// ErrNotFound is an unknown job.
var ErrNotFound = errors.New("unknown job id")

func (f *Flux) cmd(ctx context.Context, args ...string) *exec.Cmd {
	name := f.Command
	if name == "" {
		name = "flux"
	}
	c := exec.CommandContext(ctx, name, args...)
	c.Env = f.Env
	return c
}

// run runs flux with args and stdin, returning its standard output.
func (f *Flux) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	c := f.cmd(ctx, args...)
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return nil, fmt.Errorf("running %s: %w", c.Path, err)
		}
		return nil, fluxError(args, stderr.String(), err)
	}
	return stdout.Bytes(), nil
}

// unknownJobID is how flux commands name an id they do not know: "JobID 1099511627776
// unknown" (flux jobs), "job 1099511627776 not found" (flux job eventlog).
var unknownJobID = regexp.MustCompile(`jobid \S+ unknown|^job \S+ not found`)

// fluxError turns what a failed flux command wrote into an error: an unknown job becomes
// ErrNotFound; anything else keeps Flux's own words, without the program's prefix.
func fluxError(args []string, stderr string, err error) error {
	msg := strings.TrimSpace(stderr)
	if msg == "" {
		msg = fmt.Sprintf("flux %s: %v", strings.Join(args, " "), err)
	}
	lower := strings.ToLower(strings.TrimPrefix(msg, "flux-job: "))
	if strings.Contains(lower, "unknown job") || strings.Contains(lower, "no such job") || unknownJobID.MatchString(lower) {
		return fmt.Errorf("%w: %s", ErrNotFound, msg)
	}
	for _, prefix := range []string{"flux-job: ", "flux-jobs: ", "flux-resource: ", "flux-shutdown: ", "ERROR: "} {
		msg = strings.ReplaceAll(msg, prefix, "")
	}
	return &FluxError{Args: args, Msg: msg}
}

// Submit submits a jobspec and returns the job's id.
func (f *Flux) Submit(ctx context.Context, jobspec []byte) (uint64, error) {
	out, err := f.run(ctx, jobspec, "job", "submit")
	if err != nil {
		return 0, err
	}
	return ParseJobID(strings.TrimSpace(string(out)))
}

// Jobs lists jobs as flux jobs --json describes them (at most limit; 0: all): active ones
// first, then the inactive, most recent first, as job-list orders them.
func (f *Flux) Jobs(ctx context.Context, limit int) ([]map[string]any, error) {
	args := []string{"job", "list", "--all-user"}
	if limit > 0 {
		args = append(args, "--count="+strconv.Itoa(limit))
	}
	out, err := f.run(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	jobs := []map[string]any{}
	now := time.Now()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			return nil, fmt.Errorf("reading flux job list: %w", err)
		}
		jobs = append(jobs, jobInfo(raw, now))
	}
	return jobs, nil
}

// Job is one job as flux jobs --json describes it. job-list answers for a job it has not
// heard of yet as soon as it has (a job just submitted), and with ENOENT for no such job.
func (f *Flux) Job(ctx context.Context, id uint64) (map[string]any, error) {
	out, err := f.run(ctx, nil, "job", "list-ids", strconv.FormatUint(id, 10))
	if err != nil {
		var fe *FluxError
		if errors.As(err, &fe) && strings.Contains(fe.Msg, "No such file or directory") {
			return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
		}
		return nil, err
	}
	var raw map[string]any
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fmt.Errorf("reading flux job list-ids: %w", err)
	}
	return jobInfo(raw, time.Now()), nil
}

// Exists says whether the job exists, from its eventlog in the KVS (which a submit has
// written before it returns).
func (f *Flux) Exists(ctx context.Context, id uint64) error {
	_, err := f.run(ctx, nil, "job", "eventlog", strconv.FormatUint(id, 10))
	return err
}

// Output calls each for the job's output (stdout and stderr, as they were written), following
// it until the job ends when follow is set. A job that has not started has no output yet:
// ok is false then.
func (f *Flux) Output(ctx context.Context, id uint64, follow bool, each func(string) error) (ok bool, err error) {
	jobid := strconv.FormatUint(id, 10)
	if !follow {
		return f.output(ctx, []string{"job", "eventlog", "--format=json", "--path=output", jobid}, id, false, 0, nil, each)
	}
	// Wait for the job to start. wait-event fails for a job that ended without starting: then
	// there is no output.
	if _, err := f.run(ctx, nil, "job", "wait-event", "--quiet", jobid, "start"); err != nil {
		if errors.Is(err, ErrNotFound) {
			return false, err
		}
		return false, nil
	}
	// flux job eventlog --follow --path=output crashes in flux-core 0.88 (the output eventlog has
	// no end event, and it compares event names with that NULL). wait-event --verbose prints
	// every event until the one it waits for; waiting for one that never comes prints them all.
	// --waitcreate (as flux job attach watches it) waits for an output eventlog that is not there
	// yet. The stream ends, as attach's does, once every stream of every rank has said eof; where
	// that never comes (a job shell lost with its node), once the job is clean and the watch has
	// not ended by itself within outputGrace: the KVS watch of a guest namespace that is removed
	// just as it is asked for can wait for that namespace for good. The rest of the output is then
	// read from the eventlog the job left in the main namespace.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	stalled := make(chan struct{})
	go func() {
		if _, err := f.run(watchCtx, nil, "job", "wait-event", "--quiet", jobid, "clean"); err != nil {
			return
		}
		select {
		case <-time.After(outputGrace):
			close(stalled)
			stopWatch()
		case <-watchCtx.Done():
		}
	}()
	args := []string{"job", "wait-event", "--waitcreate", "--verbose", "--format=json", "--path=output", jobid, noSuchEvent}
	seen := 0
	ok, err = f.output(watchCtx, args, id, true, 0, &seen, each)
	select {
	case <-stalled:
		if ctx.Err() != nil {
			return ok, ctx.Err()
		}
		rest, err := f.output(ctx, []string{"job", "eventlog", "--format=json", "--path=output", jobid}, id, false, seen, nil, each)
		return ok || rest, err
	default:
		return ok, err
	}
}

// outputGrace is how long a followed output may go on once its job is clean (see Output).
var outputGrace = time.Second

// output runs a flux command that prints output events as JSON lines and calls each for the
// data of those after the first skip. follow: the command is wait-event for noSuchEvent, and it
// is stopped once every stream has said eof. seen, if not nil, counts the events read.
func (f *Flux) output(ctx context.Context, args []string, id uint64, follow bool, skip int, seen *int, each func(string) error) (ok bool, err error) {
	c := f.cmd(ctx, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	stdout, err := c.StdoutPipe()
	if err != nil {
		return false, err
	}
	if err := c.Start(); err != nil {
		return false, err
	}
	scan := bufio.NewScanner(stdout)
	scan.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var cbErr error
	events, streams, eofs := 0, -1, 0
	done := func() bool { return cbErr != nil || follow && streams >= 0 && eofs >= streams }
	for scan.Scan() {
		var ev struct {
			Name    string `json:"name"`
			Context struct {
				Data  *string        `json:"data"`
				EOF   bool           `json:"eof"`
				Count map[string]int `json:"count"`
			} `json:"context"`
		}
		if json.Unmarshal(scan.Bytes(), &ev) != nil {
			continue
		}
		events++
		if seen != nil {
			*seen = events
		}
		if events <= skip {
			continue
		}
		switch ev.Name {
		case "header":
			// The count of each stream's writers (one a rank): as many eofs end the output.
			n := 0
			for _, c := range ev.Context.Count {
				n += c
			}
			if n > 0 {
				streams = n
			}
		case "data":
			if ev.Context.Data != nil {
				ok = true
				cbErr = each(*ev.Context.Data)
			}
			if ev.Context.EOF {
				eofs++
			}
		}
		if done() {
			break
		}
	}
	if done() {
		_ = c.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
		_ = c.Wait()
		if cbErr != nil {
			return ok, cbErr
		}
		return true, nil
	}
	if err := c.Wait(); err != nil {
		if follow && strings.Contains(stderr.String(), "'"+noSuchEvent+"' never received") {
			return true, nil
		}
		if ctx.Err() != nil {
			return ok, ctx.Err()
		}
		ferr := fluxError(args, stderr.String(), err)
		if errors.Is(ferr, ErrNotFound) {
			return false, ferr
		}
		if e := strings.ToLower(stderr.String()); strings.Contains(e, "no such file") || strings.Contains(e, "not found") {
			// No output eventlog ("eventlog path guest.output not found"): either the job has
			// not started yet or there is no such job, which its main eventlog tells apart.
			if err := f.Exists(ctx, id); err != nil {
				return false, err
			}
			return ok, nil
		}
		return ok, ferr
	}
	return true, nil
}

// noSuchEvent is an event name no eventlog holds (see Output).
const noSuchEvent = "minicluster-api-end-of-output"

// Cancel raises a cancel exception on the job, as flux cancel does.
func (f *Flux) Cancel(ctx context.Context, id uint64) error {
	_, err := f.run(ctx, nil, "job", "raise", "--type=cancel", "--message=canceled through the REST API", strconv.FormatUint(id, 10))
	return err
}

// Nodes is the host names of the brokers that are up.
func (f *Flux) Nodes(ctx context.Context) ([]string, error) {
	out, err := f.run(ctx, nil, "resource", "list", "--states=up", "--no-header", "--format={nodelist}")
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		h, err := hostlist.Expand(line, limits.MaxBrokers)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, h...)
	}
	return hosts, nil
}

// Shutdown stops the instance as flux shutdown does (Flux's orderly shutdown: running jobs are
// canceled, the brokers' rc3 runs).
func (f *Flux) Shutdown(ctx context.Context) error {
	_, err := f.run(ctx, nil, "shutdown", "--quiet")
	return err
}
