package helmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// HelmCLI finds the helm CLI of a major version (3 or 4): $HELM3 / $HELM4, else what
// `make tools` builds under bin/tools. A missing CLI fails the test with the fix.
func HelmCLI(t testing.TB, major int) string {
	t.Helper()
	env := fmt.Sprintf("HELM%d", major)
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(Root(), "bin", "tools", fmt.Sprintf("helm%d", major), "helm")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no helm CLI at %s (%v): run `make tools` to build bin/tools/helm3/helm and bin/tools/helm4/helm, or set %s", path, err, env)
	}
	return path
}
