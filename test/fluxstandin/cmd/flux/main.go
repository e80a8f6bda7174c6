// Command flux is the MiniCluster test stand-in for flux-core: a wiring check, not Flux.
// See package fluxstandin.
package main

import (
	"os"

	"github.com/minicluster/minicluster/test/fluxstandin"
)

func main() {
	os.Exit(fluxstandin.Command())
}
