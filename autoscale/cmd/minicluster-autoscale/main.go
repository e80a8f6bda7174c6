// Command minicluster-autoscale runs in a persistent MiniCluster's lead broker container: it
// sizes the MiniCluster to its jobs (package autoscale) and serves its metrics to Prometheus.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "minicluster-autoscale: %v\n", err)
		os.Exit(1)
	}
}
