// Command minicluster-broker is the supervisor of a MiniCluster's broker container (package
// supervisor): the keys container copies it into every broker pod, and the container's
// command, a short shell stub, execs it as the container's process 1.
package main

import (
	"context"
	"errors"
	"os"
)

func main() {
	err := newRootCmd().ExecuteContext(context.Background())
	var exit exitCode
	switch {
	case err == nil:
	case errors.As(err, &exit):
		os.Exit(int(exit))
	default:
		os.Stderr.WriteString("minicluster-broker: " + err.Error() + "\n")
		os.Exit(1)
	}
}
