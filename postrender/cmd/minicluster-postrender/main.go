// Command minicluster-postrender is minicluster's Helm post-renderer: manifests on stdin,
// checked and completed manifests on stdout. See package postrender.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand(os.Stdin, os.Stdout).Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "minicluster-postrender: %v\n", err)
		os.Exit(1)
	}
}
