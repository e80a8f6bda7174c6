// Command minicluster-autoscale runs in a persistent MiniCluster's lead broker container: it
// sizes the MiniCluster to its jobs (package autoscale) and serves its metrics to Prometheus.
package main

import (
	"context"
	"os"
)

func main() {
	if err := newRootCmd().ExecuteContext(context.Background()); err != nil {
		os.Stderr.WriteString("minicluster-autoscale: " + err.Error() + "\n")
		os.Exit(1)
	}
}
