package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/supervisor"
)

// newShellStateCmd is run by the shell of commands.* (package supervisor): it reports what a
// process of that shell inherits, for the broker to inherit it too.
func newShellStateCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "shell-state STATUS",
		Short:  "Report the environment, directory, umask and limits inherited from the shell of commands.*",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			status, err := strconv.Atoi(args[0])
			if err != nil {
				return fmt.Errorf("shell-state: %q is not a status", args[0])
			}
			return supervisor.ShellState(status, cmd.OutOrStdout())
		},
	}
}
