package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/cmd/minicluster/app"
)

// newRootCmd is `minicluster convert` under its old name; the streams are passed in so tests
// can drive it.
func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	cmd := app.NewConvertCmd(app.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	cmd.Use = "minicluster-convert [FILE|-]"
	cmd.Example = `  minicluster-convert minicluster.yaml --image ubuntu:noble=registry.example.com/app:1.0 > values.yaml`
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	app.Deprecate(cmd, "minicluster-convert", "minicluster convert", stderr)
	return cmd
}
