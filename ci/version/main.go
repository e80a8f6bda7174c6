// Command version writes ./VERSION into the files that carry the version too (Chart.yaml's
// version, appVersion and artifacthub.io/images, the Helm 4 plugin's plugin.yaml, the project's
// image tags in values/): `make version` after editing VERSION. With --check it changes nothing
// and fails, naming them, when any is stale (`make lint`, ci/release.sh).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/minicluster/minicluster/internal/repo"
	"github.com/minicluster/minicluster/internal/version"
)

func main() {
	check := flag.Bool("check", false, "change nothing; fail if a file does not carry VERSION's version")
	flag.Parse()
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintf(os.Stderr, "version: %v\n", err)
		os.Exit(1)
	}
	if *check {
		if err := version.Check(root); err != nil {
			fmt.Fprintf(os.Stderr, "version: %v\n", err)
			os.Exit(1)
		}
		return
	}
	changed, err := version.Stamp(root)
	if err != nil {
		fmt.Fprintf(os.Stderr, "version: %v\n", err)
		os.Exit(1)
	}
	for _, p := range changed {
		fmt.Println(p)
	}
}
