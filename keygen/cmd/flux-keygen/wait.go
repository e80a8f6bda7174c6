package main

import (
	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/cmd/minicluster/app"
)

// newWaitCmd is `minicluster wait` under its old name, `flux-keygen kube wait --release R`,
// kept for one release: the user's wait does not belong to the keys' program.
func newWaitCmd(e env) *cobra.Command {
	cmd := app.NewWaitCmd(app.Env{Stdout: e.stdout, Stderr: e.stderr, Getenv: e.getenv, NewClient: e.newClient})
	cmd.Use = "wait --release NAME [--namespace NS] [--timeout 5m]"
	cmd.Example = ""
	release := cmd.Flags().Lookup("release")
	release.Hidden, release.Usage = false, "Helm release `NAME` (required)"
	app.Deprecate(cmd, "flux-keygen kube wait", "minicluster wait", e.stderr)
	return cmd
}
