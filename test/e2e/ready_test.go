//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	mcwait "github.com/minicluster/minicluster/wait"
)

// TestReadyMeansReady: the moment `flux-keygen kube wait` returns (its code, run here), the
// lead's Flux counts every broker up and a job on all of them starts at once (within 10 s, not
// queued), after the install and after each resize between 2 and 4 brokers: E2E_READY_ROUNDS
// times (5 unless set; 10 gives twenty in a row in all) with the view mounted and as many with it
// copied. A broker pod is Ready only once Flux counts its broker online (the readiness probe), so
// the pods' readiness says what Flux says.
func TestReadyMeansReady(t *testing.T) {
	t.Parallel()
	rounds, err := strconv.Atoi(envOr("E2E_READY_ROUNDS", "5"))
	if err != nil || rounds < 1 {
		t.Fatalf("E2E_READY_ROUNDS=%q: want a count of rounds, such as 10", os.Getenv("E2E_READY_ROUNDS"))
	}
	for _, mode := range []string{"image", "copy"} {
		t.Run("view "+mode, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "ready-"+mode)
			r := newRelease(t, ns, "flux-sample", helm4)
			r.install("--set", "size=2,maxSize=4,flux.view.mode="+mode)
			for round, size := 0, 2; round < rounds; round, size = round+1, 6-size {
				start := time.Now()
				if round > 0 {
					if out, err := r.upgrade("--set", fmt.Sprintf("size=%d", size)); err != nil {
						t.Fatalf("resize to %d: %v\n%s", size, err, out)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				var said bytes.Buffer
				err := mcwait.Release(ctx, kube, mcwait.Options{Namespace: ns, Release: r.name}, &said)
				cancel()
				if err != nil {
					t.Fatalf("round %d (size %d): kube wait: %v\n%s", round, size, err, said.String())
				}
				pods, _, err := brokerPods(ns, r.name)
				if err != nil {
					t.Fatal(err)
				}
				waited := time.Since(start)
				// flux run -N size true's jobspec, submitted by the C command (no Python to start).
				jobspec := fmt.Sprintf(`{"version":1,"resources":[{"type":"node","count":%d,"with":[{"type":"slot","count":1,"label":"task","with":[{"type":"core","count":1}]}]}],"tasks":[{"command":["true"],"slot":"task","count":{"per_slot":1}}],"attributes":{"system":{"duration":0,"cwd":"/tmp"}}}`, size)
				out, stderr, err := execIn(ns, pods[0].Name, "flux", "sh", "-c", fmt.Sprintf(
					`up=$(flux resource list --states=up -no '{nnodes}') && id=$(echo '%s' | flux job submit) && flux job wait-event -t 10 "$id" start >/dev/null && echo "$up up, started"`, jobspec))
				// After a shrink, kube wait also waits for the removed brokers to stop: exactly size up.
				if want := fmt.Sprintf("%d up, started", size); err != nil || strings.TrimSpace(out) != want {
					t.Errorf("round %d: right after kube wait said %q: %q, want %q (%v %s)", round, strings.TrimSpace(said.String()), strings.TrimSpace(out), want, err, stderr)
				}
				t.Logf("round %d: size %d up after %.1fs, checked after %.1fs", round, size, waited.Seconds(), time.Since(start).Seconds())
			}
			r.uninstallToNothing()
		})
	}
}
