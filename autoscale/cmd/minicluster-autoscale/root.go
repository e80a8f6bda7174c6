package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/autoscale"
)

type options struct {
	flux, script, dir, metricsAddr string
	every, idle                    time.Duration
	autoscale                      bool
	minSize, maxSize               int
}

func newRootCmd() *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "minicluster-autoscale (--autoscale --dir DIR | --metrics-addr ADDR)",
		Short: "Size a MiniCluster to its jobs and serve its metrics, in the lead broker's container",
		Long: `minicluster-autoscale looks at the Flux instance at FLUX_URI every --every through the
chart's autoscale-state.py (run with flux python).

With --autoscale it sizes the MiniCluster: while jobs wait that the brokers up cannot hold, it
asks for as many brokers as they need (up to --max-size); brokers at the top that ran nothing
for --idle are drained in Flux and then given back (down to --min-size). It asks by writing
target.json into --dir, which the lead's keys container shares and applies to the Job; that
container writes the Job's size back into --dir/size.

With --metrics-addr it serves the Prometheus exposition format at /metrics there.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.flux, "flux", "flux", "the flux `COMMAND`")
	f.StringVar(&o.script, "script", "/minicluster/scripts/autoscale-state.py", "run `FILE`, the chart's autoscale-state.py")
	f.StringVar(&o.dir, "dir", "", "the `DIR` shared with the lead's keys container (target.json, size)")
	f.DurationVar(&o.every, "every", 2*time.Second, "how often to look at Flux")
	f.BoolVar(&o.autoscale, "autoscale", false, "size the MiniCluster to its jobs")
	f.IntVar(&o.minSize, "min-size", 1, "fewest brokers to keep")
	f.IntVar(&o.maxSize, "max-size", 0, "most brokers to ask for (the MiniCluster's maxSize)")
	f.DurationVar(&o.idle, "idle", 5*time.Minute, "how long a broker runs nothing before it is given back")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at /metrics on `ADDR`, host:port (empty: none)")
	return cmd
}

func run(ctx context.Context, o options) error {
	if !o.autoscale && o.metricsAddr == "" {
		return errors.New("nothing to do: give --autoscale, --metrics-addr or both")
	}
	if o.every <= 0 {
		return fmt.Errorf("--every=%s: give a positive duration", o.every)
	}
	logger := log.New(os.Stderr, "minicluster-autoscale: ", 0)
	r := &autoscale.Runner{Flux: o.flux, Script: o.script, Every: o.every, Dir: o.dir, Metrics: &autoscale.Metrics{}, Log: logger}
	if o.autoscale {
		if o.dir == "" {
			return errors.New("--autoscale needs --dir: the directory shared with the lead's keys container")
		}
		if o.minSize < 1 || o.maxSize < o.minSize {
			return fmt.Errorf("--min-size=%d --max-size=%d: give 1 <= min <= max", o.minSize, o.maxSize)
		}
		if o.idle < 0 {
			return fmt.Errorf("--idle=%s: give 0 or more", o.idle)
		}
		r.Scaler = autoscale.NewScaler(autoscale.Policy{Min: o.minSize, Max: o.maxSize, Idle: o.idle})
		logger.Printf("sizing the MiniCluster between %d and %d brokers; idle brokers given back after %s", o.minSize, o.maxSize, o.idle)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if o.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(r.Metrics)
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		ln, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics: %w (set metrics.port to a port no other container of the pod uses)", err)
		}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Printf("metrics server: %v", err)
			}
		}()
		defer srv.Close()
		logger.Printf("metrics at http://%s/metrics", ln.Addr())
	}
	return r.Run(ctx)
}
