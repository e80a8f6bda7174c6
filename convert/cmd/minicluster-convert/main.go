// Command minicluster-convert turns a Flux Operator MiniCluster (flux-framework.org/v1alpha2)
// into values of the minicluster chart. See package convert.
//
// It is a command of its own rather than a subcommand of minicluster-postrender: the
// post-renderer's whole interface is Helm's (manifests on stdin, no subcommands, also run as a
// Helm 4 plugin), and a user moving from the operator runs this once per file, without Helm.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd(os.Stdin, os.Stdout).ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "minicluster-convert: %v\n", err)
		os.Exit(1)
	}
}
