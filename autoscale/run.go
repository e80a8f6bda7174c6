package autoscale

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/minicluster/minicluster/autoscale/target"
	"github.com/minicluster/minicluster/internal/idset"
)

// Runner looks at Flux through autoscale-state.py, keeps Metrics, and with a Scaler sizes the
// MiniCluster.
type Runner struct {
	// Flux is the flux command; Script the path of autoscale-state.py.
	Flux, Script string
	// Every is how often Flux is looked at.
	Every time.Duration
	// Dir is shared with the keys container (TargetFile, SizeFile).
	Dir string
	// Scaler decides sizes; nil: metrics only.
	Scaler  *Scaler
	Metrics *Metrics
	Log     *log.Logger

	wrote   target.Target
	lastErr string // the last error said, said again only when it changes
}

// Run looks at Flux until ctx ends, starting the state helper again whenever it exits (Flux
// not up yet, or restarted).
func (r *Runner) Run(ctx context.Context) error {
	for {
		err := r.watch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		r.Metrics.Observe(nil, r.liveSize(), r.wrote.Size)
		r.Log.Printf("looking at Flux: %v; again in %s", err, r.Every)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.Every):
		}
	}
}

func (r *Runner) watch(ctx context.Context) error {
	args := []string{"python", r.Script, strconv.FormatFloat(r.Every.Seconds(), 'f', -1, 64)}
	if r.Scaler != nil {
		args = append(args, r.Dir) // waiting jobs are told when the MiniCluster grows for them
	}
	cmd := exec.CommandContext(ctx, r.Flux, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for lines.Scan() {
		st, err := ParseState(lines.Bytes())
		if err != nil {
			r.Metrics.Observe(nil, r.liveSize(), r.wrote.Size)
			if err.Error() != r.lastErr {
				r.Log.Print(err)
			}
			r.lastErr = err.Error()
			continue
		}
		r.lastErr = ""
		r.step(ctx, st)
	}
	return fmt.Errorf("the state helper ended: %v", cmd.Wait())
}

// step acts on one look at Flux.
func (r *Runner) step(ctx context.Context, st State) {
	size := r.liveSize()
	want := size
	defer func() { r.Metrics.Observe(&st, size, want) }()
	if r.Scaler == nil || size == 0 {
		return // metrics only, or the keys container has not said the Job's size yet
	}
	plan, err := r.Scaler.Decide(st, size, time.Now())
	if err != nil {
		r.Log.Print(err)
		return
	}
	if len(plan.Undrain) > 0 {
		r.flux(ctx, "resource", "undrain", idset.Format(plan.Undrain))
	}
	if len(plan.Drain) > 0 {
		r.Log.Printf("draining brokers %s before giving them back", idset.Format(plan.Drain))
		r.flux(ctx, "resource", "drain", idset.Format(plan.Drain), DrainReason+": idle, to be given back")
	}
	want = plan.Size
	if plan.Size == size || (plan.Size == r.wrote.Size && size == r.wrote.From) {
		return // nothing to change, or asked already
	}
	t := target.Target{Seq: time.Now().UnixNano(), From: size, Size: plan.Size, Reason: plan.Reason}
	if err := target.Write(r.Dir, t); err != nil {
		r.Log.Print(err)
		return
	}
	r.wrote = t
	r.Metrics.Resized(Resize{From: size, To: plan.Size, Kind: plan.Kind, Time: float64(time.Now().UnixNano()) / 1e9})
	r.Log.Printf("resize from %d to %d brokers: %s", size, plan.Size, plan.Reason)
}

// flux runs a flux command, saying on the log when it fails.
func (r *Runner) flux(ctx context.Context, args ...string) {
	if out, err := exec.CommandContext(ctx, r.Flux, args...).CombinedOutput(); err != nil {
		r.Log.Printf("flux %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
}

// liveSize is the Job's parallelism as the keys container last wrote it (0: not yet).
func (r *Runner) liveSize() int { return target.ReadSize(r.Dir) }
