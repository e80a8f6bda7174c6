package sidecar

import (
	"context"
	"errors"
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

// ServeReadiness answers the kubelet's readiness probe of the broker's container on addr:
// GET /readyz is 200 while dir holds Online, 503 otherwise. An HTTP probe costs the node
// nothing like an exec probe, which starts a process in the container every period. It
// serves on ln until ctx ends.
func ServeReadiness(ctx context.Context, ln net.Listener, dir string) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(filepath.Join(dir, Online)); err != nil {
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
