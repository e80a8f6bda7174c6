package autoscale

import (
	"context"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minicluster/minicluster/autoscale/target"
)

// standInFlux writes a flux command whose `python` prints lines (one a second, then waits) and
// whose other verbs append their arguments to calls. The unit tier's stand-in: real Flux is in
// the end-to-end tests (TestAutoscale).
func standInFlux(t *testing.T, lines []string) (flux, calls string) {
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	states := filepath.Join(dir, "states")
	if err := os.WriteFile(states, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flux = filepath.Join(dir, "flux")
	script := "#!/bin/sh\nif [ \"$1\" = python ]; then\n  while IFS= read -r l; do echo \"$l\"; sleep 0.2; done < " + states + "\n  sleep 60\nfi\necho \"$*\" >> " + calls + "\n"
	if err := os.WriteFile(flux, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return flux, calls
}

func TestRunnerAsksTheKeysContainerAndDrains(t *testing.T) {
	dir := t.TempDir()
	if err := target.WriteSize(dir, 1); err != nil {
		t.Fatal(err)
	}
	waiting := `{"ranks":4,"online":"0","allocated":"","all":{"nodes":4,"cores":4},"pending":[{"id":7,"nodes":4,"cores":4}]}`
	flux, calls := standInFlux(t, []string{`{"error":"connecting to Flux: no broker"}`, waiting})
	r := &Runner{Flux: flux, Script: "state.py", Every: 100 * time.Millisecond, Dir: dir,
		Scaler: NewScaler(Policy{Min: 1, Max: 4, Idle: 0}), Metrics: &Metrics{}, Log: log.New(io.Discard, "", 0)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	var got target.Target
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if t, ok := target.Read(dir); ok {
			got = t
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.Size != 4 || got.From != 1 || !strings.Contains(got.Reason, "1 job waits") {
		t.Fatalf("target %+v: want 1 -> 4 for the waiting job", got)
	}
	cancel()

	// Idle at 4 with idleSeconds 0: brokers 1-3 are drained first.
	dir = t.TempDir()
	target.WriteSize(dir, 4)
	idle := `{"ranks":4,"online":"0-3","allocated":"","all":{"nodes":4,"cores":4}}`
	flux, calls = standInFlux(t, []string{idle, idle})
	r = &Runner{Flux: flux, Script: "state.py", Every: 100 * time.Millisecond, Dir: dir,
		Scaler: NewScaler(Policy{Min: 1, Max: 4}), Metrics: &Metrics{}, Log: log.New(io.Discard, "", 0)}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	deadline = time.Now().Add(10 * time.Second)
	var drained string
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(calls)
		if drained = string(b); strings.Contains(drained, "resource drain 1-3") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(drained, "resource drain 1-3 "+DrainReason) {
		t.Fatalf("flux was called %q: want brokers 1-3 drained", drained)
	}
	if _, ok := target.Read(dir); ok {
		t.Error("a smaller size was asked before Flux showed the brokers drained")
	}
}
