package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/supervisor"
)

// exitCode is the status the container ends with.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

const rootLong = `minicluster-broker runs a MiniCluster's Flux broker in its container: it waits for the
helpers beside it (the keys, the copy of the view), puts Flux on PATH, runs commands.init, pre
and brokerPre or workerPre, installs the keys, writes R, starts the lead's API server and
autoscaler, then runs the broker, starts it again as the rules say, and says when Flux counts it
online. Its settings are the container's MINICLUSTER_* environment, which the chart sets.

It is the container's process 1: SIGTERM and SIGINT stop the broker, and it reaps every process
that ends in the container.`

func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "minicluster-broker",
		Short:         "Run a MiniCluster's Flux broker (the broker container's process 1)",
		Long:          rootLong,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			signals := make(chan os.Signal, 4)
			signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
			if code := supervisor.New(os.Environ(), signals).Run(); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
	cmd.AddCommand(newShellStateCmd())
	return cmd
}
