package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/minicluster/minicluster/cmd/minicluster/app"
	"github.com/minicluster/minicluster/keygen"
	"github.com/minicluster/minicluster/keygen/sidecar"
)

// version is set at build time: -ldflags "-X main.version=$(cat VERSION)".
var version = "dev"

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the work failed: invalid certificate, API error, unwritable file
	exitUsage   = 2 // bad flags or arguments
	// exitConfig (sysexits' EX_CONFIG) is an invalid key object: the chart's Job fails at once
	// on it instead of retrying a pod that can never start.
	exitConfig = 78
)

// env is what the commands take from the process; tests replace it.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	hostname       func() (string, error)
	now            func() time.Time
	newClient      func(kubeconfig string) (kubernetes.Interface, error)
	etcHosts       string // the pod's /etc/hosts, where its FQDN is
	signals        func() <-chan os.Signal
}

func defaultEnv() env {
	return env{getenv: os.Getenv, hostname: os.Hostname, now: time.Now, newClient: newClient, etcHosts: "/etc/hosts", signals: stopSignals}
}

// usageError marks errors in how the command was called (exit 2).
type usageError struct{ error }

// codeError ends the command with its own exit code (the sidecar's --namespace-deleted-code).
type codeError struct {
	error
	code int
}

func run(args []string, stdout, stderr io.Writer, e env) int {
	e.stdout, e.stderr = stdout, stderr
	cmd := newRootCmd(e)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "flux-keygen: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	var u usageError
	var au app.UsageError // kube wait's, now minicluster wait's
	if errors.As(err, &u) || errors.As(err, &au) {
		return exitUsage
	}
	var invalid sidecar.InvalidKeyError
	if errors.As(err, &invalid) {
		return exitConfig
	}
	var coded codeError
	if errors.As(err, &coded) {
		return coded.code
	}
	return exitFailure
}

const rootLong = `flux-keygen makes the CURVE certificate that all brokers of a Flux instance share.

  flux-keygen [--name NAME] [--meta KEY=VAL,...] PATH

writes a new certificate to PATH with mode 0600, like flux-core's ` + "`flux keygen PATH`" + `:
the same file format (a "metadata" section with name, keygen.hostname, keygen.time and
keygen.userid, then a "curve" section with public-key and secret-key in Z85), accepted by
the Flux broker and by libzmq. The keys are an X25519 pair made with Go's crypto/ecdh from
crypto/rand, which is what libzmq's zmq_curve_keypair makes; no ZeroMQ library is needed.
Differences: the metadata names keygen.go-version and keygen.minicluster-version instead of
keygen.flux-core-version and keygen.zmq-version (neither made these keys), and metadata that
flux's reader would reject (e.g. '_', ',' or quotes in a value) is refused up front.

  flux-keygen verify PATH     checks a certificate with flux-core's reader rules
  flux-keygen kube ...        creates the certificate (and munge key) in Kubernetes; the
                              minicluster chart's keygen Job runs it
  flux-keygen kube wait ...   deprecated: minicluster wait, the user's command, does this now
  flux-keygen sidecar ...     beside each broker: waits for the keys and the parent broker;
                              the chart's broker pods run it in their keys container

Exit codes: 0 success, 1 failure (the reason is printed on one line), 2 bad usage, 78 an
invalid key object (sidecar), --namespace-deleted-code when the namespace is being deleted
(sidecar).`

func newRootCmd(e env) *cobra.Command {
	var name string
	var meta []string
	cmd := &cobra.Command{
		Use:           "flux-keygen [PATH]",
		Short:         "Make the CURVE certificate of a Flux instance, as flux keygen does, and a MiniCluster's keys in Kubernetes",
		Long:          rootLong,
		Version:       version,
		Args:          usageArgs(cobra.MaximumNArgs(1)),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			host, err := e.hostname()
			if err != nil {
				return fmt.Errorf("reading the hostname: %w", err)
			}
			extra, err := parseMeta(meta)
			if err != nil {
				return err
			}
			c, err := keygen.New(keygen.Options{Name: name, Meta: extra, Hostname: host, Time: e.now(),
				UserID: os.Getuid(), Version: version})
			if err != nil {
				return usageError{err}
			}
			if len(args) == 0 {
				// As flux keygen: without PATH the certificate is made and thrown away.
				fmt.Fprintln(e.stderr, "flux-keygen: WARNING: add PATH argument to save generated certificate")
				return nil
			}
			return c.WriteFile(args[0])
		},
	}
	cmd.Flags().StringVarP(&name, "name", "n", "", "certificate `NAME`, logged by the broker for its peers (default: the hostname)")
	cmd.Flags().StringArrayVar(&meta, "meta", nil, "add comma-separated `KEY=VAL` metadata (repeatable; the first value of a key wins)")
	cmd.CompletionOptions.DisableDefaultCmd = true // keep PATH names free; no shell here to complete
	cmd.SetOut(e.stdout)
	cmd.SetErr(e.stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cmd.AddCommand(newVerifyCmd(e), newKubeCmd(e), newSidecarCmd(e))
	return cmd
}

// parseMeta splits --meta values at commas into KEY=VAL entries, as flux keygen's --meta does;
// KEY alone means an empty value.
func parseMeta(args []string) ([]keygen.Meta, error) {
	var out []keygen.Meta
	for _, arg := range args {
		for _, kv := range strings.Split(arg, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "" {
				return nil, usageError{fmt.Errorf("--meta %q: empty key; want KEY=VAL", kv)}
			}
			out = append(out, keygen.Meta{Key: k, Value: v})
		}
	}
	return out, nil
}

func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{fmt.Errorf("%w (usage: %s)", err, cmd.UseLine())}
		}
		return nil
	}
}
