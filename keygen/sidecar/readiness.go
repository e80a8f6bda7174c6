package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Online is written by the broker's entrypoint once Flux counts its broker online (a worker
// in the instance's broker.online group, the lead with every broker of the quorum online and
// its rc1, the scheduler's load included, done) and removed when the broker exits.
const Online = ".online"

// MaxHold bounds a probe's ?hold: the kubelet's timeout must be longer than the hold.
const MaxHold = time.Minute

// holdPoll is how often a held probe looks at Online: what it adds to the broker's readiness.
const holdPoll = 100 * time.Millisecond

// ServeReadiness answers the kubelet's readiness probe of the broker's container on addr:
// GET /readyz is 200 while dir holds Online, 503 otherwise. An HTTP probe costs the node
// nothing like an exec probe, which starts a process in the container every period.
//
// GET /readyz?hold=20s, for the startup probe: a broker not online yet gets its answer when it
// comes online, or 503 after the hold. The kubelet asks again at once after a long answer, so
// while a broker bootstraps its node pays one probe, and writes one "probe failed" event, per
// hold instead of one a period, and the pod starts within holdPoll of its broker. An online
// broker is answered at once: the readiness probe asks without a hold. It serves on ln until
// ctx ends.
func ServeReadiness(ctx context.Context, ln net.Listener, dir string) error {
	online := func() bool {
		_, err := os.Stat(filepath.Join(dir, Online))
		return err == nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		var hold time.Duration
		if h := r.URL.Query().Get("hold"); h != "" {
			var err error
			if hold, err = time.ParseDuration(h); err != nil || hold < 0 || hold > MaxHold {
				http.Error(w, fmt.Sprintf("hold=%q: want a duration from 0s to %v, e.g. hold=20s", h, MaxHold), http.StatusBadRequest)
				return
			}
		}
		if hold > 0 && !online() {
			end := time.NewTimer(hold)
			defer end.Stop()
			tick := time.NewTicker(holdPoll)
			defer tick.Stop()
		held:
			for !online() {
				select {
				case <-end.C:
					break held
				case <-r.Context().Done():
					return
				case <-tick.C:
				}
			}
		}
		if !online() {
			http.Error(w, "the broker is not online in Flux yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("online\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
