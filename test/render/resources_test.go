package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// Every container of every pod the chart makes takes requests and limits from a value, so that a
// namespace whose ResourceQuota wants them can run a MiniCluster without a LimitRange: the
// brokers', the keys sidecars', the view copy's, the keygen Job's, the helm test pod's, and the
// user's own containers and the services pod's from their entries.
func TestEveryContainerTakesResources(t *testing.T) {
	small := "{requests: {cpu: 10m, memory: 16Mi}, limits: {cpu: 100m, memory: 64Mi}}"
	values := valuesFile(t, `
resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: "2", memory: 1Gi}}
flux:
  view: {mode: copy, resources: `+small+`}
  state: {enabled: true, storageClassName: standard}
keygen: {resources: `+small+`, sidecarResources: `+small+`}
tests: {resources: `+small+`}
api: {enabled: true}
munge: {enabled: true}
sidecars: [{name: side, image: app, resources: `+small+`}]
initContainers: [{name: first, image: app, resources: `+small+`}]
fluxContainers: [{name: user, image: app, command: flux jobs, resources: `+small+`}]
services: [{name: web, image: nginx, resources: `+small+`}]
`)
	out, err := helmtest.Template(helmtest.Options{ValuesFiles: []string{values}})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range podsOf(t, out) {
		for _, c := range append(append([]corev1.Container{}, p.spec.InitContainers...), p.spec.Containers...) {
			seen[c.Name] = true
			for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					_, ok := list[r]
					assert.True(t, ok, "%s: container %s states no %s in requests and limits", p.name, c.Name, r)
				}
			}
		}
	}
	for _, name := range []string{"flux", "flux-view", "keys", "keygen", "wiring", "side", "first", "user", "web"} {
		assert.True(t, seen[name], "no container %s in the render", name)
	}
}

// Lifecycle hooks reach the application container and the user's containers beside it.
func TestLifecycleHooks(t *testing.T) {
	hook := "{preStop: {exec: {command: [/bin/sh, -c, flux queue stop --all]}}}"
	spec := brokerPod(t, helmtest.Options{ValuesFiles: []string{valuesFile(t, "lifecycle: "+hook+"\n"+
		"fluxContainers: [{name: user, image: app, command: flux jobs, lifecycle: "+hook+"}]\n")}})
	for _, c := range spec.Containers {
		switch c.Name {
		case "flux", "user":
			require.NotNil(t, c.Lifecycle, c.Name)
			require.NotNil(t, c.Lifecycle.PreStop, c.Name)
			assert.Equal(t, []string{"/bin/sh", "-c", "flux queue stop --all"}, c.Lifecycle.PreStop.Exec.Command, c.Name)
		default:
			assert.Nil(t, c.Lifecycle, c.Name)
		}
	}
}
