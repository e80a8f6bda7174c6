// Package tooltest is for tests that need a tool from outside Go: a Debian package (busybox,
// python3-zmq, docker-registry, gnupg) or the helm CLIs. On a machine without it such a test
// skips with one line naming the tool and the fix, so that `go test ./...` passes on any
// machine with Go; with MINICLUSTER_REQUIRE_TOOLS=1 (set by `make test` and CI) it fails
// instead, so that nothing is skipped there unseen.
package tooltest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// RequireEnv is the variable that turns a missing tool into a failure.
const RequireEnv = "MINICLUSTER_REQUIRE_TOOLS"

// Missing ends the test for want of a tool: a failure under MINICLUSTER_REQUIRE_TOOLS=1, a skip
// otherwise. The message should name the tool and how to get it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skipf("%s (skipped; %s=1 makes it a failure)", msg, RequireEnv)
}

// File returns path, or ends the test when no file is there; fix says how to get it.
func File(t testing.TB, path, fix string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, "%s is missing: %s", path, fix)
	}
	return path
}

// Command returns the path of the command name on PATH, or ends the test; fix says how to get it.
func Command(t testing.TB, name, fix string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not on PATH: %s", name, fix)
	}
	return path
}
