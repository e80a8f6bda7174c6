package convert

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// The MiniCluster files of testdata/own are written as users write them, each for one way the
// converter must keep what the operator does.

// convertOwn converts testdata/own/NAME.yaml and renders the values with the chart.
func convertOwn(t *testing.T, name string) (Result, []helmtest.Object) {
	t.Helper()
	in, err := os.ReadFile(filepath.Join("testdata", "own", name+".yaml"))
	require.NoError(t, err)
	res, err := Convert(in, Options{})
	require.NoError(t, err)
	got, err := Write(res)
	require.NoError(t, err)
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, got, 0o644))
	out, err := helmtest.Template(helmtest.Options{ReleaseName: res.Name, ValuesFiles: []string{values}})
	require.NoError(t, err, "the converted values do not render:\n%s", got)
	objs, err := helmtest.DecodeAll(out)
	require.NoError(t, err)
	return res, objs
}

func brokerJob(t *testing.T, objs []helmtest.Object, name string) *batchv1.Job {
	t.Helper()
	obj, ok := helmtest.Find(objs, "Job", name)
	require.True(t, ok, "no Job %s", name)
	return obj.Object.(*batchv1.Job)
}

func container(t *testing.T, pod corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range pod.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

// false, 0 and "" that the file sets reach the values and the pods.
func TestOwnKeptValues(t *testing.T) {
	res, objs := convertOwn(t, "kept-values")
	assert.Equal(t, map[string]any{"empty-label": ""}, res.Values["jobLabels"])
	assert.Equal(t, map[string]any{"gpu-pool": ""}, res.Values["podLabels"])
	assert.Equal(t, map[string]any{"node-role.kubernetes.io/gpu": ""}, res.Values["nodeSelector"])
	assert.Equal(t, map[string]any{"runAsUser": int64(0), "runAsGroup": int64(0)}, res.Values["podSecurityContext"])
	assert.Equal(t, map[string]any{"allowPrivilegeEscalation": false, "privileged": false}, res.Values["securityContext"])

	job := brokerJob(t, objs, "kept")
	assert.Contains(t, job.Labels, "empty-label")
	pod := job.Spec.Template.Spec
	assert.Equal(t, "", pod.NodeSelector["node-role.kubernetes.io/gpu"])
	require.Contains(t, pod.NodeSelector, "node-role.kubernetes.io/gpu", "the pods must land on the GPU nodes only")
	assert.Contains(t, job.Spec.Template.Labels, "gpu-pool")
	require.NotNil(t, pod.SecurityContext.RunAsUser)
	assert.Equal(t, int64(0), *pod.SecurityContext.RunAsUser)
	require.NotNil(t, pod.SecurityContext.RunAsGroup)
	assert.Equal(t, int64(0), *pod.SecurityContext.RunAsGroup)
	flux := container(t, pod, "flux")
	require.NotNil(t, flux.SecurityContext)
	require.NotNil(t, flux.SecurityContext.AllowPrivilegeEscalation)
	assert.False(t, *flux.SecurityContext.AllowPrivilegeEscalation)
	var empty *corev1.EnvVar
	for i, e := range flux.Env {
		if e.Name == "EMPTY" {
			empty = &flux.Env[i]
		}
	}
	assert.NotNil(t, empty, "an environment variable set to \"\" is set")
}

// commands.init and pre become the chart's, which runs them in the shell that starts Flux
// (the supervisor's TestCommandsShareTheShell; the e2e case own/init-pre on real Flux).
func TestOwnInitAndPre(t *testing.T) {
	res, objs := convertOwn(t, "init-pre")
	commands := res.Values["commands"].(map[string]any)
	assert.Equal(t, "export FROM_INIT=yes", commands["init"])
	assert.Equal(t, "mkdir -p /tmp/workdir && cd /tmp/workdir\nexport FROM_PRE=$FROM_INIT-too\n", commands["pre"])
	flux := container(t, brokerJob(t, objs, "init-pre").Spec.Template.Spec, "flux")
	env := map[string]string{}
	for _, e := range flux.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "export FROM_INIT=yes", env["MINICLUSTER_CMD_INIT"])
	assert.Equal(t, commands["pre"], env["MINICLUSTER_CMD_PRE"])
}

// commands.script: the operator's unquoted heredoc (\$VAR is $VAR when it runs), run by bash,
// submitted with the operator's flags.
func TestOwnScript(t *testing.T) {
	res, _ := convertOwn(t, "script")
	command := res.Values["command"].(string)
	submit := "flux submit -N 2 -n2 --quiet --watch "
	require.True(t, strings.HasPrefix(command, submit), command)
	assert.Nil(t, res.Values["tasks"], "the submit line says the tasks")

	// What the job runs, run here by /bin/sh (the chart's) and bash as a task of rank 1 would.
	run := exec.Command("/bin/sh", "-c", strings.TrimPrefix(command, submit))
	run.Env = append(os.Environ(), "FLUX_TASK_RANK=1", "FLUX_JOB_SIZE=2")
	out, err := run.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "task 1 of 2 in bash\n", string(out))

	// A line EOF in the script does not end it early.
	cmd := scriptCommand("echo one\nEOF\necho $((1+1))\n")
	out, err = exec.Command("/bin/sh", "-c", cmd).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "one\n", string(out[:4]))
	assert.Contains(t, string(out), "EOF: command not found")
	assert.True(t, strings.HasSuffix(string(out), "2\n"), "%s", out)
}

// No maxSize: the operator's, size (the chart's own would be 16).
func TestOwnNoMaxSize(t *testing.T) {
	res, objs := convertOwn(t, "no-maxsize")
	assert.Equal(t, 3, res.Values["maxSize"])
	job := brokerJob(t, objs, "no-maxsize")
	assert.Equal(t, int32(3), *job.Spec.Completions, "the Job's completions are maxSize")
}

// No tasks: the operator's one-task job, so that flux resource list in it shows 1 allocated.
func TestOwnDefaultTasks(t *testing.T) {
	res, _ := convertOwn(t, "default-tasks")
	assert.Equal(t, "flux submit -n1 --quiet --watch flux resource list", res.Values["command"])
	assert.Nil(t, res.Values["tasks"])
}

// Every name of the operator's services pod becomes the chart's; other names stay.
func TestOwnServicesNames(t *testing.T) {
	res, _ := convertOwn(t, "services-names")
	assert.Equal(t, "curl -s http://web-services:80/ http://web-services.default.svc.cluster.local/", res.Values["command"])
	env := map[string]any{}
	for _, e := range res.Values["env"].([]any) {
		env[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"]
	}
	assert.Equal(t, map[string]any{
		"OLD_DOCS":  "web-services",
		"OLD_FQDN":  "web-services.default.svc.cluster.local",
		"WITH_PORT": "web-services:5000",
		"NOT_IT":    "web-services.flux-services-other, myweb-services.web, web-services.webby",
	}, env)
}

// A wrapped container with commands.post alone runs it once its broker's socket exists.
func TestOwnPostOnlySidecar(t *testing.T) {
	res, objs := convertOwn(t, "post-only-sidecar")
	assert.Equal(t, []any{map[string]any{"name": "api", "image": "ubuntu:noble", "command": "flux resource list"}}, res.Values["fluxContainers"])
	assert.Nil(t, res.Values["sidecars"])
	api := container(t, brokerJob(t, objs, "post-only").Spec.Template.Spec, "api")
	assert.NotEmpty(t, api.Command)
}

// Fields of earlier versions: every one in one error, each with its whole path, what it did
// and what to use now.
func TestOwnOldFields(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "own", "old-fields.yaml"))
	require.NoError(t, err)
	res, err := Convert(in, Options{})
	require.Error(t, err)
	assert.Nil(t, res.Values)
	msg := err.Error()
	assert.True(t, strings.HasPrefix(msg, "cannot convert: 7 fields:\n"), msg)
	for _, want := range []string{
		"\n  spec.containers[0].cores: a field of earlier operator versions, not of v1alpha2: the cores each broker gave Flux; use spec.containers[].resources.limits.cpu",
		"\n  spec.containers[0].securityContext.addCapabilities: a field of earlier operator versions, not of v1alpha2: Linux capabilities added to the container; use spec.containers[].securityContext.capabilities.add",
		"\n  spec.services[0].cores: a field of earlier operator versions",
		"\n  spec.services[0].commans: not a field of the v1alpha2 MiniCluster (a typo, or a field of another version)",
		"\n  spec.volumes: a field of earlier operator versions, not of v1alpha2: volumes the operator made for the MiniCluster",
		"\n  spec.minSize: the chart starts Flux once all `size` brokers are up",
		"\n  metadata.labels: labels of the MiniCluster object itself",
	} {
		assert.Contains(t, msg, want)
	}
}

// Values the chart cannot take in several parts of a file: each part's in one run.
func TestOwnSeveralProblems(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "own", "several-problems.yaml"))
	require.NoError(t, err)
	res, err := Convert(in, Options{})
	require.Error(t, err)
	assert.Nil(t, res.Values)
	assert.Equal(t, "cannot convert: 3 problems:\n"+
		"  spec.size 200000: the chart runs 1 to 100000 brokers\n"+
		"  spec.containers[1].commands.pre: only the container that runs Flux (runFlux) uses it, and the operator ignores it here; drop it, or put the work in this container's command\n"+
		"  spec.services[0].batch: a service runs no Flux, and the operator ignores it there; drop it", err.Error())
}
