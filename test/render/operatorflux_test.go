package render

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/keygen"
)

// The Flux Operator's flux.minimalService, flux.wrap and flux.curveCert as chart values.

// flux.minimalService: the headless Service selects the lead's pod alone; the helm test checks
// the lead's name only.
func TestMinimalService(t *testing.T) {
	objs := render(t, helmtest.Options{Set: []string{"flux.minimalService=true", "flux.topology="}})
	svc := get[*corev1.Service](t, objs, "Service", "flux-sample")
	assert.Equal(t, "0", svc.Spec.Selector["batch.kubernetes.io/job-completion-index"])
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "still headless: the lead's per-pod name")
	test := get[*corev1.Pod](t, objs, "Pod", "flux-sample-test-wiring")
	assert.Equal(t, []corev1.EnvVar{{Name: "MINICLUSTER_MINIMAL_SERVICE", Value: "true"}}, test.Spec.Containers[0].Env)

	svc = get[*corev1.Service](t, render(t, helmtest.Options{}), "Service", "flux-sample")
	assert.NotContains(t, svc.Spec.Selector, "batch.kubernetes.io/job-completion-index", "every broker by default")

	// The helm test's script looks up the lead's name alone (the workers have none).
	requireBusybox(t)
	cm := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")
	config := t.TempDir()
	for k, v := range cm.Data {
		require.NoError(t, os.WriteFile(filepath.Join(config, k), []byte(v), 0o644))
	}
	script := strings.ReplaceAll(test.Spec.Containers[0].Command[2], "/minicluster/config", config)
	stubs := `nslookup() { echo "lookup $1" >&2; case $1 in flux-sample-0.*) return 0;; esac; return 1; }
sleep() { :; }
nc() { cat > /dev/null; printf '\377\0\0\0\0\0\0\0\001\177\003\001CURVE\0\0\0'; }
`
	cmd := exec.Command(busybox, "sh", "-c", stubs+script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MINICLUSTER_MINIMAL_SERVICE=true"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "ok: flux-sample-0.flux-sample.default.svc.cluster.local resolves")
	assert.NotContains(t, string(out), "lookup flux-sample-1", "a worker's name is not looked up")
}

// inlineCert is a values file with curve.cert, a certificate as flux keygen writes it, made
// here (no key is committed), and the certificate.
func inlineCert(t *testing.T) (values, cert string) {
	t.Helper()
	c, err := keygen.New(keygen.Options{Hostname: "flux-sample-0", Time: time.Unix(0, 0)})
	require.NoError(t, err)
	b, err := c.Encode()
	require.NoError(t, err)
	raw, err := yaml.Marshal(map[string]any{"curve": map[string]any{"cert": string(b)}})
	require.NoError(t, err)
	values = filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, raw, 0o600))
	return values, string(b)
}

// curve.cert: a Secret with it, read by every broker's keys container; no keygen Job, no
// certificate in any other object.
func TestInlineCurveCert(t *testing.T) {
	file, cert := inlineCert(t)
	opts := helmtest.Options{ValuesFiles: []string{file}}
	objs := render(t, opts)
	secret := get[*corev1.Secret](t, objs, "Secret", "flux-sample-curve")
	assert.Equal(t, cert, string(secret.Data["curve.cert"]))
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	assert.Contains(t, container(t, job, "keys").Args, "--curve-name=flux-sample-curve")
	assert.NotContains(t, container(t, job, "keys").Args, "--storage=Secret")
	_, keygenJob := helmtest.Find(objs, "Job", "flux-sample-keygen")
	assert.False(t, keygenJob, "no keygen Job: the certificate is given")
	broker := get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
	assert.Equal(t, []string{"flux-sample-curve"}, broker.Rules[0].ResourceNames)
	secretKey := strings.Split(strings.Split(cert, `secret-key = "`)[1], `"`)[0]
	require.Len(t, secretKey, 40)
	out, err := helmtest.Template(opts)
	require.NoError(t, err)
	assert.NotContains(t, out, secretKey, "the key is only in the Secret's data, base64-encoded")

	objs = render(t, helmtest.Options{ValuesFiles: []string{file}, Set: []string{"munge.enabled=true"}})
	keygenJob2 := get[*batchv1.Job](t, objs, "Job", "flux-sample-keygen")
	assert.Contains(t, keygenJob2.Spec.Template.Spec.Containers[0].Args, "--skip-curve", "the keygen Job makes the munge key alone")
}

// fluxContainers: the user's containers with the pod's broker's Flux: its socket (the run
// volume), the flux wrapper, the view read-only; the broker's user; never the keys.
func TestFluxContainers(t *testing.T) {
	set := []string{"securityContext.runAsUser=1000", "fluxContainers[0].name=queue", "fluxContainers[0].image=app:1",
		"fluxContainers[0].command=flux jobs -a", "fluxContainers[0].env[0].name=A", "fluxContainers[0].env[0].value=b"}
	job := get[*batchv1.Job](t, render(t, copyView(t, helmtest.Options{Set: set})), "Job", "flux-sample")
	c := container(t, job, "queue")
	assert.Equal(t, []string{"/bin/sh", "/minicluster/scripts/flux-container.sh"}, c.Command)
	e := env(c)
	assert.Equal(t, "flux jobs -a", e["MINICLUSTER_CONTAINER_COMMAND"])
	assert.Equal(t, "local:///minicluster/run/flux/local", e["FLUX_URI"])
	assert.Equal(t, "/mnt/flux", e["MINICLUSTER_HELPERS"], "waits for the copy of the view, not for the keys")
	assert.Equal(t, "/mnt/flux/view", e["MINICLUSTER_FLUX_VIEW"])
	assert.Equal(t, "b", e["A"])
	assert.Equal(t, int64(1000), *c.SecurityContext.RunAsUser, "the broker's user: its socket is private to it")
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
		assert.NotEqual(t, "keys", m.Name, "no keys in the user's containers")
	}
	assert.Equal(t, "run", mounts["/minicluster/run"].Name)
	assert.Equal(t, "flux", mounts["/usr/local/sbin/flux"].SubPath)
	assert.True(t, mounts["/mnt/flux"].ReadOnly)
	assert.True(t, mounts["/opt/software"].ReadOnly)
	assert.Equal(t, "flux", job.Spec.Template.Spec.Containers[0].Name, "the broker's container stays first")

	own := get[*batchv1.Job](t, render(t, helmtest.Options{Set: append(set, "fluxContainers[0].securityContext.runAsUser=2000", "fluxContainers[0].waitSocket=false")}), "Job", "flux-sample")
	c = container(t, own, "queue")
	assert.Equal(t, int64(2000), *c.SecurityContext.RunAsUser)
	assert.Equal(t, "false", env(c)["MINICLUSTER_WAIT_SOCKET"])
}

// flux-container.sh waits for the broker's socket, then runs the command with $fluxsocket and
// exits with its status.
func TestFluxContainerWaitsForTheSocket(t *testing.T) {
	requireBusybox(t)
	scripts := get[*corev1.ConfigMap](t, render(t, helmtest.Options{}), "ConfigMap", "flux-sample-entrypoint")
	root := t.TempDir()
	moved := func(s string) string { return strings.ReplaceAll(s, "/minicluster/", root+"/minicluster/") }
	require.NoError(t, os.MkdirAll(root+"/minicluster/scripts", 0o755))
	require.NoError(t, os.MkdirAll(root+"/minicluster/run/flux", 0o700))
	require.NoError(t, os.WriteFile(root+"/minicluster/scripts/env.sh", []byte(moved(scripts.Data["env.sh"])), 0o644))
	require.NoError(t, os.WriteFile(root+"/minicluster/scripts/helpers.sh", []byte(moved(scripts.Data["helpers.sh"])), 0o644))
	script := filepath.Join(root, "flux-container.sh")
	require.NoError(t, os.WriteFile(script, []byte(moved(scripts.Data["flux-container.sh"])), 0o755))
	socket := root + "/minicluster/run/flux/local"
	out := filepath.Join(root, "out")
	cmd := exec.Command(busybox, "sh", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "FLUX_URI=local://" + socket,
		"MINICLUSTER_CONTAINER_COMMAND=echo \"$fluxsocket $FLUX_URI\" > " + out + "; exit 3"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	time.Sleep(300 * time.Millisecond)
	assert.NoFileExists(t, out, "the command waits for the broker's socket")
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	defer l.Close()
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	assert.Equal(t, 3, exit.ExitCode(), "the command's status")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "local://"+socket+" local://"+socket+"\n", string(b))
}

// services: a Deployment of one pod <release>-services with the containers, and a headless
// Service of that name that the brokers reach it by; the broker Service does not select it.
func TestServices(t *testing.T) {
	objs := render(t, helmtest.Options{Set: []string{"services[0].name=web", "services[0].image=nginx:1",
		"services[0].ports[0].containerPort=80", "services[1].name=db", "services[1].image=db:1",
		"services[1].ports[0].containerPort=5432", "services[1].ports[0].name=sql",
		"servicesVolumes[0].name=data", "servicesVolumes[0].emptyDir.medium=Memory"}})
	d := get[*appsv1.Deployment](t, objs, "Deployment", "flux-sample-services")
	assert.Equal(t, int32(1), *d.Spec.Replicas)
	pod := d.Spec.Template.Spec
	assert.Equal(t, "flux-sample-services", pod.Hostname)
	assert.Equal(t, []string{"web", "db"}, []string{pod.Containers[0].Name, pod.Containers[1].Name})
	assert.Equal(t, "nginx:1", pod.Containers[0].Image)
	assert.Equal(t, "data", pod.Volumes[0].Name)
	assert.False(t, *pod.AutomountServiceAccountToken)
	assert.Equal(t, "services", d.Spec.Template.Labels["app.kubernetes.io/component"])

	svc := get[*corev1.Service](t, objs, "Service", "flux-sample-services")
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
	assert.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector)
	assert.Equal(t, []corev1.ServicePort{
		{Name: "port-80", Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP},
		{Name: "sql", Port: 5432, TargetPort: intstr.FromInt32(5432), Protocol: corev1.ProtocolTCP},
	}, svc.Spec.Ports)
	brokers := get[*corev1.Service](t, objs, "Service", "flux-sample")
	assert.Equal(t, "broker", brokers.Spec.Selector["app.kubernetes.io/component"], "the brokers' Service leaves the services pod out")

	for _, o := range render(t, helmtest.Options{}) {
		assert.NotEqual(t, "flux-sample-services", o.Name, "no services pod without services")
	}
}
