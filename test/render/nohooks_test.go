package render

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// TestNoInstallHooks renders with the real helm CLIs: nothing waits in an install hook (the
// keygen Job is part of the release and runs while the brokers start), so Helm 3 and Helm 4
// render the same objects; the only hook is the `helm test` pod.
func TestNoInstallHooks(t *testing.T) {
	var outputs []string
	for _, major := range []int{3, 4} {
		helm := helmtest.HelmCLI(t, major)
		cmd := exec.Command(helm, "template", "flux-sample", "charts/minicluster", "--kube-version", "1.35.0", "--set", "munge.enabled=true")
		cmd.Dir = helmtest.Root()
		out, err := cmd.Output()
		require.NoError(t, err, "helm %d template", major)
		objs, err := helmtest.DecodeAll(string(out))
		require.NoError(t, err)
		for _, o := range objs {
			if hook := o.Meta.GetAnnotations()["helm.sh/hook"]; hook != "" {
				assert.Equalf(t, "test", hook, "helm %d: %s %s is a %s hook", major, o.Kind, o.Meta.GetName(), hook)
			}
		}
		for _, kind := range []string{"Job", "ServiceAccount", "Role", "RoleBinding"} {
			_, ok := helmtest.Find(objs, kind, "flux-sample-keygen")
			assert.Truef(t, ok, "helm %d: no %s flux-sample-keygen", major, kind)
		}
		// Helm 4 separates documents with an extra blank line; compare the rest.
		outputs = append(outputs, strings.TrimSpace(strings.ReplaceAll(string(out), "\n\n---", "\n---")))
	}
	assert.Equal(t, outputs[0], outputs[1], "Helm 3 and Helm 4 render different manifests")
}
