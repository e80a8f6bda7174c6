// Command minicluster-api serves the Flux RESTful API and its web UI for the Flux instance
// at FLUX_URI (package restapi). The chart's lead broker runs it in the broker's container.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "minicluster-api: %v\n", err)
		os.Exit(1)
	}
}
