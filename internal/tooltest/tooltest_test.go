package tooltest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A missing tool skips, or fails under MINICLUSTER_REQUIRE_TOOLS=1; a present one passes. Each
// case runs this test binary again with the case's environment, since a skip or a failure ends
// the test that meets it.
func TestMissingSkipsOrFails(t *testing.T) {
	if which := os.Getenv("TOOLTEST_CASE"); which != "" {
		switch which {
		case "file":
			File(t, "/nonexistent/busybox", "install busybox-static (make deps)")
		case "command":
			Command(t, "no-such-tool-here", "install it (make deps)")
		case "present":
			File(t, os.Args[0], "")
			Command(t, "go", "")
		}
		return
	}
	for _, tc := range []struct {
		which, require string
		wantOK         bool
		want           string
	}{
		{"file", "", true, "SKIP: TestMissingSkipsOrFails"},
		{"file", "1", false, "/nonexistent/busybox is missing: install busybox-static (make deps)"},
		{"command", "", true, "no-such-tool-here is not on PATH: install it (make deps) (skipped; MINICLUSTER_REQUIRE_TOOLS=1 makes it a failure)"},
		{"command", "1", false, "--- FAIL"},
		{"present", "1", true, "--- PASS"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingSkipsOrFails$", "-test.v")
		cmd.Env = append(os.Environ(), "TOOLTEST_CASE="+tc.which, RequireEnv+"="+tc.require)
		out, err := cmd.CombinedOutput()
		if (err == nil) != tc.wantOK || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s with %s=%q: err %v, want ok=%v and %q in:\n%s", tc.which, RequireEnv, tc.require, err, tc.wantOK, tc.want, out)
		}
	}
}
