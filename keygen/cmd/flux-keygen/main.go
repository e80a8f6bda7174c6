// Command flux-keygen makes the CURVE certificate of a Flux instance: a drop-in for
// `flux keygen`, a checker, and the Kubernetes mode the minicluster chart's hook Job runs.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, defaultEnv()))
}
