// The tests of the bash libraries here (run by go test ./...).
package lib

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/tooltest"
)

// A build's log goes quiet for minutes while the compiler works: the progress lines show its
// last line once, while it is new, and then what runs now (processes renamed as Go's compiler
// and g++'s are, so the test needs neither).
func TestProgressShowsWhatRunsNow(t *testing.T) {
	tooltest.Command(t, "perl", "apt-get install perl-base")
	log := filepath.Join(t.TempDir(), "build.log")
	fake := func(argv0, args string) string {
		return `(exec -a ` + argv0 + ` perl -e "sleep 3.5" -- ` + args + `) & `
	}
	script := `echo "go: downloading example.com/m v1.0.0"; sleep 0.5; ` +
		fake("/usr/local/go/pkg/tool/linux_amd64/compile", "-o /tmp/b001/_pkg_.a -p example.com/m/pkg -complete") +
		fake("/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "-quiet -I src src/matcher.cpp -dumpbase matcher.cpp") +
		`wait`
	cmd := exec.Command("bash", "progress.sh", "build", log, "bash", "-c", script)
	cmd.Env = append(cmd.Environ(), "PROGRESS_INTERVAL=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("progress.sh: %v\n%s", err, out)
	}
	text := string(out)
	if n := strings.Count(text, "go: downloading"); n != 1 {
		t.Errorf("the log's last line shown %d times, want once (while it was new):\n%s", n, text)
	}
	both := false
	for _, line := range strings.Split(text, "\n") {
		both = both || strings.Contains(line, "(now: ") &&
			strings.Contains(line, "compile example.com/m/pkg") && strings.Contains(line, "cc1plus src/matcher.cpp")
	}
	if !both {
		t.Errorf("no line says that compile example.com/m/pkg and cc1plus src/matcher.cpp run now:\n%s", text)
	}
	if !strings.Contains(text, "build: done in ") {
		t.Errorf("no line saying it is done:\n%s", text)
	}
}

// A step that fails says so with the end of its log, and fails its caller.
func TestProgressFailure(t *testing.T) {
	log := filepath.Join(t.TempDir(), "build.log")
	out, err := exec.Command("bash", "progress.sh", "build", log, "bash", "-c", "echo the reason; exit 3").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("progress.sh of a command that exits 3: %v, want exit 3", err)
	}
	// The seconds are the machine's: a busy one takes one or two to start bash.
	if !regexp.MustCompile(`build: FAILED after [0-9]+ s \(exit 3\); the end of ` + regexp.QuoteMeta(log) + `:\nthe reason`).Match(out) {
		t.Errorf("the failure says:\n%s", out)
	}
}
