// Command minicluster is what a user of the minicluster chart types beside helm and kubectl:
// `minicluster wait` after helm install or upgrade, `minicluster convert` for a Flux Operator
// MiniCluster (package app, over packages wait and convert). The pods run programs of their own.
package main

import (
	"os"

	"github.com/minicluster/minicluster/cmd/minicluster/app"
)

// version is set at build time: -ldflags "-X main.version=$(cat VERSION)".
var version = "dev"

func main() {
	os.Exit(app.Run(os.Args[1:], app.DefaultEnv(), version))
}
