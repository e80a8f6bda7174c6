// Command valuesdoc writes the chart's values table (README.md) and the schema's descriptions
// from the `# --` comments of values.yaml; with --check it only says whether they are stale.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/minicluster/minicluster/internal/valuesdoc"
)

func main() {
	chart := flag.String("chart", "charts/minicluster", "chart directory")
	check := flag.Bool("check", false, "fail if README.md or values.schema.json differ from what would be written")
	flag.Parse()
	run := valuesdoc.Write
	if *check {
		run = valuesdoc.Check
	}
	if err := run(*chart); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
