// Package app is the minicluster command: a root and one verb per task a user has, in the
// manner of kind, each verb a file of flags over a library (wait.go over package wait,
// convert.go over package convert). The names a user typed before it, `flux-keygen kube wait`
// and `minicluster-convert`, are built from the same functions (NewWaitCmd, NewConvertCmd) and
// marked with Deprecate for one release.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/minicluster/minicluster/internal/kubeclient"
)

// Exit codes, as flux-keygen's.
const (
	exitOK      = 0
	exitFailure = 1 // the work failed, or the MiniCluster did not come up
	exitUsage   = 2 // bad flags or arguments
)

// Env is what the commands take from the process; tests replace it.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// NewClient connects with a kubeconfig ("" : as the pod's service account).
	NewClient func(kubeconfig string) (kubernetes.Interface, error)
}

// DefaultEnv is the process's own streams, environment and API server.
func DefaultEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, NewClient: newClient}
}

func newClient(kubeconfig string) (kubernetes.Interface, error) {
	c, err := kubeclient.New(kubeconfig, "minicluster")
	if errors.Is(err, kubeclient.ErrNotInCluster) {
		return nil, UsageError{err}
	}
	return c, err
}

// UsageError marks an error in how a command was called: exit 2.
type UsageError struct{ error }

func (u UsageError) Unwrap() error { return u.error }

// usageArgs makes a failed check of the arguments a UsageError that shows the usage line.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return UsageError{fmt.Errorf("%w (usage: %s)", err, cmd.UseLine())}
		}
		return nil
	}
}

// Run runs the minicluster command with args and returns its exit code; an error is printed
// on one line.
func Run(args []string, e Env, version string) int {
	cmd := NewRootCmd(e, version)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(e.Stderr, "minicluster: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	var u UsageError
	if errors.As(err, &u) {
		return exitUsage
	}
	return exitFailure
}

const rootLong = `minicluster is the command a user of the minicluster chart types beside helm and kubectl.

  minicluster wait RELEASE    after helm install or upgrade: returns when the MiniCluster is up,
                              or says at once why it cannot come up, with the fix
  minicluster convert FILE    the chart's values for a Flux Operator MiniCluster

Helm installs the chart; its pods run programs of their own (flux-keygen, minicluster-api,
minicluster-autoscale), and Helm runs minicluster-postrender when asked to. The names this
command replaces, flux-keygen kube wait and minicluster-convert, still work for one release.

Exit codes: 0 success, 1 failure (the reason is printed on one line), 2 bad usage.`

// NewRootCmd is the minicluster command with its verbs.
func NewRootCmd(e Env, version string) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "minicluster",
		Short:         "Wait for a MiniCluster and convert a Flux Operator one: the minicluster chart's user command",
		Long:          rootLong,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help() // as kubectl and kind: no verb, the list of verbs
		},
	}
	cmd.SetIn(e.Stdin)
	cmd.SetOut(e.Stdout)
	cmd.SetErr(e.Stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{err} })
	cmd.AddCommand(NewWaitCmd(e), NewConvertCmd(e))
	return cmd
}

// Deprecate marks cmd as an old name of the minicluster command now: its help says so, and
// each run says so on stderr (never on stdout, which scripts read) before it does the same work.
func Deprecate(cmd *cobra.Command, old, now string, stderr io.Writer) {
	note := fmt.Sprintf("%s is deprecated and goes in the next release: use %s (the same flags)", old, now)
	cmd.Short = "Deprecated: use " + now + ". " + cmd.Short
	cmd.Long = "Deprecated: " + note + ".\n\n" + cmd.Long
	cmd.PreRun = func(*cobra.Command, []string) { fmt.Fprintf(stderr, "%s\n", note) }
}
