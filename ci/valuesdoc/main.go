// Command valuesdoc writes the chart's documentation of its values from the `# --` comments of
// values.yaml: README.md by helm-docs, from README.md.gotmpl (the values table and all the rest),
// and the descriptions in values.schema.json (internal/valuesdoc). With --check it writes nothing
// and fails when either file is stale. make docs and make lint run it; make tools builds helm-docs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/minicluster/minicluster/internal/valuesdoc"
)

func main() {
	chart := flag.String("chart", "charts/minicluster", "chart directory")
	helmDocs := flag.String("helm-docs", os.Getenv("HELM_DOCS"), "the helm-docs binary (default $HELM_DOCS, which the Makefile sets)")
	check := flag.Bool("check", false, "write nothing; fail if README.md or values.schema.json differ from what would be written")
	flag.Parse()
	if err := run(*helmDocs, *chart, *check); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(helmDocs, chart string, check bool) error {
	// The schema first: Parse refuses the comments helm-docs would misread.
	schema, err := valuesdoc.Generate(chart)
	if err != nil {
		return err
	}
	readme, err := render(helmDocs, chart)
	if err != nil {
		return err
	}
	gen := []struct {
		name string
		data []byte
	}{{"README.md", readme}, {"values.schema.json", schema}}
	var stale []string
	for _, f := range gen {
		path := filepath.Join(chart, f.name)
		if !check {
			if err := os.WriteFile(path, f.data, 0o644); err != nil {
				return err
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, f.data) {
			stale = append(stale, path)
		}
	}
	switch {
	case len(stale) == 0:
		return nil
	case stale[0] == filepath.Join(chart, "README.md"):
		// An edit of README.md itself shows as stale too, and make docs would undo it.
		return fmt.Errorf("stale: %s: run make docs (it writes README.md from %s: edits of README.md belong there)",
			strings.Join(stale, ", "), filepath.Join(chart, "README.md.gotmpl"))
	}
	return fmt.Errorf("stale: %s: run make docs", strings.Join(stale, ", "))
}

// render returns the README.md that helm-docs renders from the chart's README.md.gotmpl. It
// runs with --dry-run and fails on anything helm-docs logs: helm-docs exits 0 after a template
// or values error, with a warning and part of the README or none, which would be written.
func render(helmDocs, chart string) ([]byte, error) {
	if helmDocs == "" {
		return nil, fmt.Errorf("no helm-docs: pass --helm-docs or set HELM_DOCS (make docs and make lint build it and set it)")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmDocs, "--chart-search-root", chart, "--sort-values-order", "file", "--log-level", "warning", "--dry-run")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || stderr.Len() > 0 || stdout.Len() == 0 {
		return nil, fmt.Errorf("%s on %s failed (%v): %s", helmDocs, chart, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
