// Command minicluster-postrender is minicluster's Helm post-renderer: manifests on stdin,
// checked and completed manifests on stdout. See package postrender.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd(os.Stdin, os.Stdout).ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "minicluster-postrender: %v\n", err)
		os.Exit(1)
	}
}
