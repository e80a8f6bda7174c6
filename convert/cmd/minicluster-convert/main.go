// Command minicluster-convert is the old name of `minicluster convert` (cmd/minicluster), kept
// for one release: it turns a Flux Operator MiniCluster (flux-framework.org/v1alpha2) into
// values of the minicluster chart, and says on stderr that it is deprecated.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd(os.Stdin, os.Stdout, os.Stderr).ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "minicluster-convert: %v\n", err)
		os.Exit(1)
	}
}
