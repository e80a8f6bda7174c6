package render

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// valuesFile writes a values file for one test and returns its path.
func valuesFile(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	return path
}

// brokerPod is the pod template of the broker Job.
func brokerPod(t *testing.T, opts helmtest.Options) corev1.PodSpec {
	t.Helper()
	return get[*batchv1.Job](t, render(t, opts), "Job", "flux-sample").Spec.Template.Spec
}

// podSettings sets every pod setting the Flux Operator has beside the chart's others.
const podSettings = `
schedulerName: scheduler-plugins-scheduler
priorityClassName: hpc-high
runtimeClassName: kata
dnsPolicy: None
dnsConfig:
  nameservers: [10.96.0.10]
  searches: [flux-sample.default.svc.cluster.local]
  options: [{name: ndots, value: "2"}]
hostIPC: true
hostPID: true
terminationGracePeriodSeconds: 60
flux: {cleanupTimeout: 50s}
`

func TestPodSettingsReachThePods(t *testing.T) {
	spec := brokerPod(t, helmtest.Options{ValuesFiles: []string{valuesFile(t, podSettings)}})
	assert.Equal(t, "scheduler-plugins-scheduler", spec.SchedulerName)
	assert.Equal(t, "hpc-high", spec.PriorityClassName)
	require.NotNil(t, spec.RuntimeClassName)
	assert.Equal(t, "kata", *spec.RuntimeClassName)
	assert.Equal(t, corev1.DNSNone, spec.DNSPolicy)
	value := "2"
	assert.Equal(t, &corev1.PodDNSConfig{
		Nameservers: []string{"10.96.0.10"},
		Searches:    []string{"flux-sample.default.svc.cluster.local"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &value}},
	}, spec.DNSConfig)
	assert.True(t, spec.HostIPC)
	assert.True(t, spec.HostPID)
	require.NotNil(t, spec.TerminationGracePeriodSeconds)
	assert.EqualValues(t, 60, *spec.TerminationGracePeriodSeconds)
	assert.Equal(t, "flux-sample", spec.Subdomain, "the Service's names stay the brokers' names whatever the DNS settings")
}

// Unset, the pod settings leave the pod as Kubernetes' defaults have it (and as releases
// installed before them have it: their pod template must not change).
func TestPodSettingsUnsetRenderNothing(t *testing.T) {
	spec := brokerPod(t, helmtest.Options{})
	assert.Empty(t, spec.SchedulerName)
	assert.Empty(t, spec.PriorityClassName)
	assert.Nil(t, spec.RuntimeClassName)
	assert.Empty(t, spec.DNSPolicy, "ClusterFirst, Kubernetes' default")
	assert.Nil(t, spec.DNSConfig)
	assert.False(t, spec.HostIPC)
	assert.False(t, spec.HostPID)
	assert.Nil(t, spec.TerminationGracePeriodSeconds, "Kubernetes' default, 30 s")
	assert.Empty(t, spec.InitContainers)
}

// initContainers run first, as given; sidecars follow as Kubernetes sidecars (restartPolicy
// Always), so they stop once the broker's container ends and an ephemeral pod completes. The
// chart's own containers keep their places.
func TestExtraContainers(t *testing.T) {
	spec := brokerPod(t, helmtest.Options{ValuesFiles: []string{valuesFile(t, `
initContainers:
  - {name: stage-data, image: busybox:1.37, command: [cp, -r, /src, /data]}
  - {name: early-proxy, image: example.org/proxy:1, restartPolicy: Always}
sidecars:
  - {name: metrics, image: example.org/exporter:1, ports: [{containerPort: 9100}]}
  - {name: logs, image: example.org/shipper:1, restartPolicy: Always}
`)}})
	var names []string
	for _, c := range spec.InitContainers {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"stage-data", "early-proxy", "metrics", "logs"}, names, "initContainers in their order, then the sidecars")
	always := corev1.ContainerRestartPolicyAlways
	assert.Nil(t, spec.InitContainers[0].RestartPolicy, "an init container runs once")
	assert.Equal(t, []string{"cp", "-r", "/src", "/data"}, spec.InitContainers[0].Command)
	assert.Equal(t, &always, spec.InitContainers[1].RestartPolicy, "a sidecar the user placed among the init containers stays one")
	for _, c := range spec.InitContainers[2:] {
		assert.Equalf(t, &always, c.RestartPolicy, "sidecar %s", c.Name)
	}
	assert.EqualValues(t, 9100, spec.InitContainers[2].Ports[0].ContainerPort)
	var containers []string
	for _, c := range spec.Containers {
		containers = append(containers, c.Name)
	}
	assert.Equal(t, []string{"flux", "flux-view", "keys"}, containers, "the broker stays containers/0, its helpers beside it")
}

// A user's topologySpreadConstraints replace the default spread; one without a labelSelector
// counts this release's brokers.
func TestTopologySpreadConstraints(t *testing.T) {
	brokers := map[string]string{"app.kubernetes.io/name": "minicluster", "app.kubernetes.io/instance": "flux-sample", "app.kubernetes.io/component": "broker"}
	spread := `
topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
  - {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {team: hpc}}}
`
	spec := brokerPod(t, helmtest.Options{ValuesFiles: []string{valuesFile(t, spread)}})
	require.Len(t, spec.TopologySpreadConstraints, 2, "the user's constraints, without the default")
	zone := spec.TopologySpreadConstraints[0]
	assert.Equal(t, "topology.kubernetes.io/zone", zone.TopologyKey)
	assert.Equal(t, corev1.DoNotSchedule, zone.WhenUnsatisfiable)
	assert.Equal(t, brokers, zone.LabelSelector.MatchLabels, "no labelSelector: the release's brokers")
	assert.Equal(t, map[string]string{"team": "hpc"}, spec.TopologySpreadConstraints[1].LabelSelector.MatchLabels, "a labelSelector of the user's is kept")

	// With an affinity too, both apply.
	spec = brokerPod(t, helmtest.Options{ValuesFiles: []string{valuesFile(t, spread)}, Set: []string{
		"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
		"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"}})
	require.NotNil(t, spec.Affinity)
	assert.Len(t, spec.TopologySpreadConstraints, 2)
}

// Pod ephemeral storage is resources' ephemeral-storage: the scheduler places the pod by the
// request, and the kubelet holds everything the pod writes to the node's disk (the container's
// layer and logs, the run volume, a view copied to disk) against the sum of its containers'
// limits, the broker's alone here. So the chart's disk volumes carry no sizeLimit of their own.
func TestEphemeralStorage(t *testing.T) {
	job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{
		"resources.requests.ephemeral-storage=2Gi", "resources.limits.ephemeral-storage=4Gi"}}), "Job", "flux-sample")
	c := job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, resource.MustParse("2Gi"), c.Resources.Requests[corev1.ResourceEphemeralStorage])
	assert.Equal(t, resource.MustParse("4Gi"), c.Resources.Limits[corev1.ResourceEphemeralStorage])
	for _, name := range []string{"run", "flux-view"} {
		v := volume(t, job, name)
		require.NotNilf(t, v.EmptyDir, "volume %s", name)
		assert.Emptyf(t, v.EmptyDir.Medium, "volume %s is on the node's disk: the pod's limit counts it", name)
		assert.Nilf(t, v.EmptyDir.SizeLimit, "volume %s", name)
	}
	for _, c := range job.Spec.Template.Spec.Containers[1:] {
		assert.Emptyf(t, c.Resources.Limits, "container %s adds nothing to the pod's limit", c.Name)
	}
}

// The grace period and flux.cleanupTimeout: accepted when the grace period leaves 10 s after
// the clean-up (the rejections are in TestBadValuesAreRejected).
func TestGracePeriodFitsTheCleanup(t *testing.T) {
	for _, set := range [][]string{
		{"flux.cleanupTimeout=20s"}, // Kubernetes' 30 s
		{"terminationGracePeriodSeconds=10"},
		{"terminationGracePeriodSeconds=100", "flux.cleanupTimeout=1.5m"},
		{"terminationGracePeriodSeconds=11", "flux.cleanupTimeout=500ms"},
		{"terminationGracePeriodSeconds=7210", "flux.cleanupTimeout=2h"},
		{"terminationGracePeriodSeconds=5", "flux.cleanupTimeout=none"}, // no bound of Flux's: the grace period is it
	} {
		_, err := helmtest.Template(helmtest.Options{Set: set})
		assert.NoErrorf(t, err, "%v", set)
	}
}

// kubectl exec: the flux container has FLUX_URI and the chart's flux on the image's PATH, and
// leaves PATH alone (a value would replace the image's, e.g. the Flux image's /opt/view/bin).
func TestExecEnvironment(t *testing.T) {
	for _, mode := range []string{"flux.view.mode=copy", "flux.view.mode=image", "flux.view.enabled=false"} {
		spec := brokerPod(t, helmtest.Options{Set: []string{mode}})
		flux := spec.Containers[0]
		require.Equal(t, "flux", flux.Name)
		env := map[string]string{}
		for _, e := range flux.Env {
			env[e.Name] = e.Value
		}
		assert.Equal(t, "local:///minicluster/run/flux/local", env["FLUX_URI"], mode)
		assert.NotContains(t, env, "PATH", mode)
		assert.Contains(t, flux.VolumeMounts, corev1.VolumeMount{Name: "scripts", MountPath: "/usr/local/sbin/flux", SubPath: "flux", ReadOnly: true}, mode)
	}
}
