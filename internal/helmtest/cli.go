package helmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/minicluster/minicluster/internal/tooltest"
)

// HelmCLI finds the helm CLI of a major version (3 or 4): $HELM3 / $HELM4, else what
// `make tools` builds under bin/tools. A missing CLI skips the test with the fix (fails it
// under MINICLUSTER_REQUIRE_TOOLS=1).
func HelmCLI(t testing.TB, major int) string {
	t.Helper()
	env := fmt.Sprintf("HELM%d", major)
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(Root(), "bin", "tools", fmt.Sprintf("helm%d", major), "helm")
	}
	return tooltest.File(t, path, fmt.Sprintf("the helm %d CLI: run `make tools` to build bin/tools/helm3/helm and bin/tools/helm4/helm, or set %s", major, env))
}
