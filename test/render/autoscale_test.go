package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
)

var autoscaleOn = []string{"autoscale.enabled=true", "flux.queuePolicy=easy", "size=2", "maxSize=6"}

// TestAutoscaleRefusals: bad autoscale and metrics values fail the render naming the value and
// the fix.
func TestAutoscaleRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     []string
		wantErr []string
	}{
		{"minSize 0", []string{"autoscale.minSize=0"}, []string{"/autoscale/minSize", "minimum"}},
		{"minSize above maxSize", []string{"autoscale.minSize=7"}, []string{"autoscale.minSize=7: give 1 to maxSize (6)"}},
		{"idleSeconds below 0", []string{"autoscale.idleSeconds=-1"}, []string{"/autoscale/idleSeconds", "minimum"}},
		{"a command", []string{"command=hostname"}, []string{`autoscale.enabled=true with command="hostname"`, "persistent", "Unset command"}},
		{"fluxion fcfs", []string{"flux.queuePolicy=fcfs"}, []string{"flux.queuePolicy=fcfs", "Set flux.queuePolicy=easy"}},
		{"a Kueue queue", []string{"queue.name=q"}, []string{`queue.name="q"`, "helm upgrade --set size=N"}},
		{"metrics on the broker port", []string{"metrics.enabled=true", "metrics.port=8050"}, []string{"metrics.port=8050 is flux.port too"}},
		{"metrics on the readiness port", []string{"metrics.enabled=true", "metrics.port=8051"}, []string{"metrics.port=8051 is flux.readinessPort too"}},
		{"metrics on the API's port", []string{"metrics.enabled=true", "api.enabled=true", "metrics.port=5000"}, []string{"metrics.port=5000 is api.port too"}},
		{"a ServiceMonitor without metrics", []string{"metrics.serviceMonitor.enabled=true"}, []string{"metrics.serviceMonitor.enabled=true needs metrics.enabled=true"}},
		{"a ServiceMonitor without its CRD", []string{"metrics.enabled=true", "metrics.serviceMonitor.enabled=true"}, []string{"no ServiceMonitor kind", "monitoring.coreos.com/v1", "install the Prometheus Operator"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmtest.Template(helmtest.Options{Set: append(append([]string{}, autoscaleOn...), tc.set...)})
			require.Error(t, err)
			for _, want := range tc.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
	// fcfs is fine under sched-simple (it has no queue policy), and with autoscale off.
	for _, set := range [][]string{{"autoscale.enabled=true", "flux.scheduler=simple"}, {"flux.queuePolicy=fcfs"}} {
		_, err := helmtest.Template(helmtest.Options{Set: set})
		assert.NoError(t, err, "%v", set)
	}
}

// TestAutoscaleReachesThePods: the lead's keys container applies sizes with the rights to its
// own Job and Events and no more; the broker's container runs the autoscaler; jobs larger than the
// brokers up wait instead of being refused; the quorum and the disruption budget count minSize.
func TestAutoscaleReachesThePods(t *testing.T) {
	objs := render(t, helmtest.Options{Set: append(append([]string{}, autoscaleOn...), "autoscale.minSize=1", "autoscale.idleSeconds=60", "maxUnavailable=0")})
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	assert.Equal(t, ptr.To(int32(2)), job.Spec.Parallelism)
	assert.Equal(t, "2", job.Annotations["minicluster.dev/size"])
	keys := container(t, job, "keys")
	for _, arg := range []string{"--autoscaler=/minicluster/keys/minicluster-autoscale", "--autoscale-dir=/minicluster/keys/autoscale", "--min-size=1", "--max-size=6"} {
		assert.Contains(t, keys.Args, arg)
	}
	flux := container(t, job, "flux")
	assert.Equal(t, "--autoscale --min-size=1 --max-size=6 --idle=60s", env(flux)["MINICLUSTER_AUTOSCALE"])
	assert.Equal(t, "2s", env(flux)["MINICLUSTER_AUTOSCALE_EVERY"])

	role := get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
	var jobRule, eventRule *rbacv1.PolicyRule
	for i, r := range role.Rules {
		if len(r.Resources) == 1 && r.Resources[0] == "jobs" {
			jobRule = &role.Rules[i]
		}
		if len(r.Resources) == 1 && r.Resources[0] == "events" {
			eventRule = &role.Rules[i]
		}
	}
	require.NotNil(t, jobRule)
	assert.Equal(t, []string{"flux-sample"}, jobRule.ResourceNames, "the Job by name alone")
	assert.ElementsMatch(t, []string{"delete", "get", "patch"}, jobRule.Verbs)
	require.NotNil(t, eventRule)
	assert.Equal(t, []string{"create"}, eventRule.Verbs)

	cm := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")
	assert.Equal(t, "1", cm.Data["size"], "the lead's quorum is minSize")
	assert.NotContains(t, cm.Data["broker.toml"], "validate-brokers-up.py", "a job larger than the brokers up waits")
	assert.Contains(t, cm.Data["broker.toml"], `queue-policy = "easy"`)
	scripts := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-entrypoint")
	assert.Contains(t, scripts.Data["autoscale-state.py"], "job-list.job-stats")

	// Off: none of it, and today's refusal of a job larger than the brokers up stays.
	objs = render(t, helmtest.Options{Set: []string{"size=2"}})
	job = get[*batchv1.Job](t, objs, "Job", "flux-sample")
	assert.NotContains(t, strings.Join(container(t, job, "keys").Args, " "), "autoscale")
	assert.NotContains(t, env(container(t, job, "flux")), "MINICLUSTER_AUTOSCALE")
	cm = get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")
	assert.Contains(t, cm.Data["broker.toml"], "validate-brokers-up.py")
	role = get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
	for _, r := range role.Rules {
		assert.NotContains(t, r.Resources, "events")
		assert.NotContains(t, r.Verbs, "patch")
	}
}

// TestAutoscaleUpgradeKeepsTheLiveSize: an upgrade that leaves size as it was keeps the size the
// autoscaler chose; one that sets another size sets it.
func TestAutoscaleUpgradeKeepsTheLiveSize(t *testing.T) {
	job, cert := liveRelease(t, autoscaleOn...)
	job.Spec.Parallelism, job.Spec.Completions = ptr.To(int32(5)), ptr.To(int32(5)) // grown by the autoscaler
	for _, tc := range []struct {
		name string
		size string
		want int32
	}{{"size unchanged", "size=2", 5}, {"size set", "size=3", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmtest.TemplateWithLive(helmtest.Options{Set: append(append([]string{}, autoscaleOn...), tc.size)}, toObjects(t, []any{job, cert})...)
			require.NoError(t, err)
			var got batchv1.Job
			require.NoError(t, yaml.Unmarshal([]byte(out["minicluster/templates/broker-job.yaml"]), &got))
			assert.Equal(t, ptr.To(tc.want), got.Spec.Parallelism)
			assert.Equal(t, ptr.To(tc.want), got.Spec.Completions)
		})
	}
}

// TestMetricsService: the metrics Service reaches the lead's metrics port; the ServiceMonitor is
// made where its kind exists.
func TestMetricsService(t *testing.T) {
	objs := render(t, helmtest.Options{Set: []string{"metrics.enabled=true", "metrics.port=9100"}})
	svc := get[*corev1.Service](t, objs, "Service", "flux-sample-metrics")
	assert.Equal(t, "0", svc.Spec.Selector["batch.kubernetes.io/job-completion-index"])
	assert.Equal(t, int32(9100), svc.Spec.Ports[0].Port)
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	flux := container(t, job, "flux")
	assert.Equal(t, "9100", env(flux)["MINICLUSTER_METRICS_PORT"])
	assert.NotContains(t, env(flux), "MINICLUSTER_AUTOSCALE", "metrics alone do not size the MiniCluster")
	found := false
	for _, p := range flux.Ports {
		found = found || (p.Name == "metrics" && p.ContainerPort == 9100)
	}
	assert.True(t, found, "the flux container names its metrics port")

	out, err := helmtest.Template(helmtest.Options{Set: []string{"metrics.enabled=true", "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prom"},
		APIVersions: []string{"monitoring.coreos.com/v1/ServiceMonitor"}})
	require.NoError(t, err)
	assert.Contains(t, out, "kind: ServiceMonitor")
	assert.Contains(t, out, "release: prom")
}
