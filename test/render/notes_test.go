package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// notes is NOTES.txt as helm install prints it for the values set.
func notes(t *testing.T, set ...string) string {
	t.Helper()
	out, err := helmtest.TemplateWithLive(helmtest.Options{Set: set})
	require.NoError(t, err)
	return out["minicluster/templates/NOTES.txt"]
}

// TestNotesResizeAsTheReadme: the resize NOTES.txt prints is the README's quick start's, for
// this release, so the two cannot tell a user different things.
func TestNotesResizeAsTheReadme(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(helmtest.Root(), "README.md"))
	require.NoError(t, err)
	var readme string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "helm upgrade flux-sample ") && strings.Contains(line, "--set size=") {
			readme, _, _ = strings.Cut(line, "#")
			break
		}
	}
	require.NotEmpty(t, readme, "README.md has no resize (helm upgrade flux-sample ... --set size=N)")
	want := strings.NewReplacer(`"$NAMESPACE"`, "default", "--set size=4", "--set size=N").Replace(strings.TrimSpace(readme))
	assert.Contains(t, notes(t), "\n  "+want+"\n", "NOTES.txt's resize, the README's being %q", readme)
}

// TestNotesShort: NOTES.txt is a few lines of real commands (27 and 56 lines before they were
// cut); the options add their own.
func TestNotesShort(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		most int
	}{
		{nil, 22},
		{[]string{"command=hostname"}, 22},
		{[]string{"api.enabled=true", "autoscale.enabled=true", "flux.queuePolicy=easy", "metrics.enabled=true",
			"flux.state.enabled=true", "flux.state.storageClassName=standard"}, 44},
	} {
		n := notes(t, tc.set...)
		lines := strings.Count(strings.TrimSpace(n), "\n") + 1
		t.Logf("%v: %d lines", tc.set, lines)
		assert.LessOrEqual(t, lines, tc.most, "NOTES.txt for %v:\n%s", tc.set, n)
		assert.Contains(t, n, "minicluster wait flux-sample -n default --timeout 5m", "%v", tc.set)
		assert.NotContains(t, n, "flux-keygen", "%v: the user's command is minicluster", tc.set)
	}
}
