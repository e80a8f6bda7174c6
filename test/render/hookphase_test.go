package render

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/test/helmtest"
)

// TestKeygenHookPhase renders with the real helm CLIs: Helm 4 adopts what a pre-install hook
// made, Helm 3 cannot, so there the hook fills the chart's object post-install. The hook's RBAC
// must be in the same phase as its Job.
func TestKeygenHookPhase(t *testing.T) {
	for major, want := range map[int]string{3: "post-install", 4: "pre-install"} {
		helm := helmtest.HelmCLI(t, major)
		cmd := exec.Command(helm, "template", "flux-sample", "charts/minicluster", "--kube-version", "1.35.0", "--set", "munge.enabled=true")
		cmd.Dir = helmtest.Root()
		out, err := cmd.Output()
		require.NoError(t, err, "helm %d template", major)
		objs, err := helmtest.DecodeAll(string(out))
		require.NoError(t, err)
		for _, kind := range []string{"Job", "ServiceAccount", "Role", "RoleBinding"} {
			o, ok := helmtest.Find(objs, kind, "flux-sample-keygen")
			require.Truef(t, ok, "helm %d: no %s flux-sample-keygen", major, kind)
			assert.Equalf(t, want, o.Meta.GetAnnotations()["helm.sh/hook"], "helm %d: %s", major, kind)
		}
	}
}
