//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkNotes runs every command NOTES.txt prints, verbatim, in the order printed (the last one
// uninstalls). A paragraph of commands runs as one script (a later line may use a variable an
// earlier one set). Commands that follow output (-w, -f) run for a few seconds and must have
// printed something; all others must succeed.
func checkNotes(t *testing.T, r *release, size int) {
	t.Helper()
	notes, err := r.run("get", "notes", r.name)
	if err != nil {
		t.Fatalf("helm get notes: %v", err)
	}
	var scripts []string
	var cur []string
	for _, l := range append(strings.Split(notes, "\n"), "") {
		if cmd, ok := strings.CutPrefix(l, "  "); ok && !strings.HasPrefix(cmd, " ") {
			// The resize names the chart as the README's quick start does, from the repository's
			// root: here, the chart under test.
			cmd = strings.ReplaceAll(cmd, " ./charts/minicluster ", " "+chartDir+" ")
			cur = append(cur, strings.ReplaceAll(cmd, "size=N", "size="+strconv.Itoa(size)))
			continue
		}
		if len(cur) > 0 {
			scripts = append(scripts, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	if len(scripts) < 7 {
		t.Fatalf("NOTES.txt has %d command paragraphs, want at least 7:\n%s", len(scripts), notes)
	}
	// helm, kubectl and minicluster as a user has them: the release's helm first on PATH, the
	// cluster's kubectl, the built minicluster.
	dir := t.TempDir()
	if err := os.Symlink(r.helm, filepath.Join(dir, "helm")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "CHART="+chartDir,
		"PATH="+dir+":"+filepath.Join(repoRoot, ".cluster", "bin")+":"+filepath.Join(repoRoot, "bin")+":"+os.Getenv("PATH"))
	env = append(env, r.env...)
	for _, script := range scripts {
		follows := strings.Contains(script, " -w") || strings.Contains(script, " -f ")
		within := 2 * time.Minute
		if follows {
			within = 5 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), within)
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		cancel()
		t.Logf("NOTES: %s\n%s", script, indent(string(out)))
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		switch {
		case follows && timedOut && len(strings.TrimSpace(string(out))) > 0:
		case follows && timedOut:
			t.Errorf("NOTES command printed nothing in %v: %s", within, script)
		case err != nil:
			t.Errorf("NOTES command failed (%v): %s\n%s", err, script, out)
		}
	}
}
