// Command flux-keygen makes the CURVE certificate of a Flux instance: a drop-in for
// `flux keygen` and a checker (root.go, verify.go); the Kubernetes mode the minicluster
// chart's keygen Job runs (kube.go, over package keygen/kube); and the sidecar beside each
// broker that waits for the keys and the parent broker (sidecar.go, keygen/sidecar). wait.go
// is `minicluster wait` under its old name, `kube wait`, for one release.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, defaultEnv()))
}
