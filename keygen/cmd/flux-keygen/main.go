// Command flux-keygen makes the CURVE certificate of a Flux instance: a drop-in for
// `flux keygen` and a checker (root.go, verify.go); the Kubernetes mode the minicluster
// chart's keygen Job runs (kube.go, over package keygen/kube); the sidecar beside each broker
// that waits for the keys and the parent broker (sidecar.go, keygen/sidecar); and the wait a
// user runs after helm install (wait.go, keygen/wait).
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, defaultEnv()))
}
