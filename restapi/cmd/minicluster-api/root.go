package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/internal/hostlist"
	"github.com/minicluster/minicluster/internal/limits"
	"github.com/minicluster/minicluster/restapi"
)

type options struct {
	listen        string
	credentials   string
	noAuth        bool
	tlsCert       string
	tlsKey        string
	flux          string
	workdir       string
	stopMarker    string
	tokenLifetime time.Duration
	hosts         string
}

func newRootCmd() *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "minicluster-api (--credentials DIR | --no-auth)",
		Short: "Serve the Flux RESTful API and a web UI for the Flux instance at FLUX_URI, in the lead broker's container",
		Long: `minicluster-api serves the /v1/ endpoints of the Flux RESTful API (the same fields, answers
and token flow as github.com/flux-framework/flux-restful-api, so that its Python client works
unchanged) and a small web UI at /, for the Flux instance at FLUX_URI. It runs flux commands for
each request, so it must run where flux does (the chart's lead broker container).

--credentials DIR holds the files user, token and secret-key (the chart mounts its Secret
there). A request without valid credentials gets 401.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", ":5000", "serve on `ADDR`, host:port")
	f.StringVar(&o.credentials, "credentials", "", "read the credentials from `DIR`: the files user, token and secret-key")
	f.BoolVar(&o.noAuth, "no-auth", false, "serve without authentication (anyone who reaches the port can run jobs)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate `FILE` (PEM); with --tls-key, serve HTTPS")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key `FILE` (PEM)")
	f.StringVar(&o.flux, "flux", "flux", "the flux `COMMAND`")
	f.StringVar(&o.workdir, "workdir", "", "a job's working `DIR` when the request gives none (default: this program's)")
	f.StringVar(&o.stopMarker, "stop-marker", "", "write `FILE` when /v1/service/stop stops Flux")
	f.StringVar(&o.hosts, "hosts", "", "the `HOSTLIST` of every broker the instance's resources hold (RFC 29, e.g. flux-sample-[0-15]): a job asking for more nodes is refused")
	f.DurationVar(&o.tokenLifetime, "token-lifetime", 8*time.Hour, "how long an access token from /v1/token is valid (at most 24h)")
	return cmd
}

func serve(ctx context.Context, o options) error {
	if (o.credentials == "") == !o.noAuth {
		return errors.New("give --credentials DIR (the files user, token, secret-key) or --no-auth")
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	logger := log.New(os.Stderr, "minicluster-api: ", 0)
	s := &restapi.Server{Flux: &restapi.Flux{Command: o.flux}, Workdir: o.workdir, StopMarker: o.stopMarker, Log: logger}
	if o.hosts != "" {
		hosts, err := hostlist.Expand(o.hosts, limits.MaxBrokers)
		if err != nil {
			return fmt.Errorf("--hosts %q: %w", o.hosts, err)
		}
		s.MaxNodes = len(hosts)
	}
	if s.Workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		s.Workdir = wd
	}
	if !o.noAuth {
		creds, err := restapi.ReadCredentials(o.credentials)
		if err != nil {
			return err
		}
		if s.Auth, err = restapi.NewAuthenticator(creds, o.tokenLifetime); err != nil {
			return fmt.Errorf("--token-lifetime: %w", err)
		}
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: an output stream lasts as long as its job.
		IdleTimeout: 2 * time.Minute,
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	scheme := "http"
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return fmt.Errorf("loading the TLS certificate: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	}
	auth := "on"
	if s.Auth == nil {
		auth = "OFF"
	}
	logger.Printf("serving the Flux RESTful API on %s://%s (authentication %s, FLUX_URI=%s)", scheme, ln.Addr(), auth, os.Getenv("FLUX_URI"))
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	}
}
