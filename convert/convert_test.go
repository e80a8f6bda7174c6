package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
)

const hello = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: flux-sample
spec:
  size: 4
  containers:
    - image: ubuntu:noble
      command: echo hello world
`

// Bad input: an error that names the field and says what to do, and no result.
func TestConvertRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"no MiniCluster"}},
		{"comments only", "# nothing\n---\n", []string{"no MiniCluster"}},
		{"other kind", strings.Replace(hello, "kind: MiniCluster", "kind: Job", 1), []string{`kind "Job"`, "want a MiniCluster"}},
		{"other apiVersion", strings.Replace(hello, "v1alpha2", "v1alpha1", 1), []string{`apiVersion "flux-framework.org/v1alpha1"`, "only flux-framework.org/v1alpha2"}},
		{"unknown field", strings.Replace(hello, "  size: 4", "  size: 4\n  sise: 4", 1), []string{"spec.sise: not a field of the v1alpha2 MiniCluster"}},
		{"unknown nested field", strings.Replace(hello, "      command:", "      comand: x\n      command:", 1), []string{"spec.containers[0].comand: not a field"}},
		{"wrong type", strings.Replace(hello, "size: 4", "size: four", 1), []string{"cannot unmarshal", "minicluster convert --table"}},
		{"several MiniClusters", hello + "---\n" + hello, []string{"2 documents", "one MiniCluster at a time"}},
		{"size too large", strings.Replace(hello, "size: 4", "size: 100001", 1), []string{"spec.size 100001", "1 to 100000"}},
		{"size negative", strings.Replace(hello, "size: 4", "size: -1", 1), []string{"spec.size -1"}},
		{"maxSize below size", strings.Replace(hello, "size: 4", "size: 4\n  maxSize: 2", 1), []string{"spec.maxSize 2"}},
		{"refused field", strings.Replace(hello, "size: 4", "size: 4\n  minSize: 2", 1), []string{"spec.minSize:", "set size"}},
		{"refused nested field", strings.Replace(hello, "size: 4", "size: 4\n  flux:\n    container:\n      name: view", 1), []string{"spec.flux.container.name:", "flux-view"}},
		{"minimal service with a tree", strings.Replace(hello, "size: 4", "size: 4\n  flux:\n    minimalService: true\n    topology: kary:2", 1), []string{"spec.flux.minimalService", `topology "kary:2"`}},
		{"wrap with spaces", strings.Replace(hello, "size: 4", "size: 4\n  flux:\n    wrap: strace -f", 1), []string{`spec.flux.wrap "strace -f"`, "strace,-f"}},
		{"no name", strings.Replace(hello, "name: flux-sample", "name: \"\"", 1), []string{"metadata.name is empty"}},
		{"no containers", strings.Replace(hello, "  containers:\n    - image: ubuntu:noble\n      command: echo hello world\n", "", 1), []string{"spec.containers is empty"}},
		{"two runners", strings.Replace(hello, "      command: echo hello world\n", "      runFlux: true\n    - image: x\n      name: y\n      runFlux: true\n", 1), []string{"spec.containers[1].runFlux", "both ask to run Flux"}},
		{"unnamed sidecar", strings.Replace(hello, "      command: echo hello world\n", "      runFlux: true\n    - image: x\n      noWrapEntrypoint: true\n", 1), []string{"spec.containers[1].name is empty"}},
		{"volume without path", strings.Replace(hello, "      command:", "      volumes:\n        data:\n          claimName: data\n      command:", 1), []string{"spec.containers[0].volumes.data.path is empty"}},
		{"bad medium", strings.Replace(hello, "      command:", "      volumes:\n        shm:\n          emptyDir: true\n          emptyDirMedium: disk\n      command:", 1), []string{`emptyDirMedium "disk"`}},
		{"not yaml", "kind: [", []string{"not YAML"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Convert([]byte(tc.in), Options{})
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Nil(t, res.Values, "a refused input gives no values")
		})
	}
}

// A refused field set to the operator's own default is accepted.
func TestConvertAcceptsOperatorDefaults(t *testing.T) {
	in := strings.Replace(hello, "  size: 4", "  size: 4\n  deadlineSeconds: 31500000\n  flux:\n    container:\n      name: flux-view\n      mountPath: /mnt/flux", 1)
	res, err := Convert([]byte(in), Options{})
	require.NoError(t, err)
	assert.NotContains(t, res.Values, "job")
}

func TestConvertImages(t *testing.T) {
	in := strings.Replace(hello, "      command: echo hello world\n", "      runFlux: true\n      command: echo hi\n    - image: nginx\n      name: nginx\n      noWrapEntrypoint: true\n      ports: [80]\n", 1)
	res, err := Convert([]byte(in), Options{Images: map[string]string{"ubuntu:noble": "reg/app:1", "nginx": "reg/web:1", operatorViewImage: "reg/view:1"}})
	require.NoError(t, err)
	assert.Equal(t, "reg/app:1", res.Values["image"])
	assert.Equal(t, "reg/view:1", res.Values["flux"].(map[string]any)["view"].(map[string]any)["image"])
	side := res.Values["sidecars"].([]any)[0].(map[string]any)
	assert.Equal(t, "reg/web:1", side["image"])
	assert.Equal(t, []any{map[string]any{"containerPort": 80, "protocol": "TCP"}}, side["ports"])

	res, err = Convert([]byte(hello), Options{ViewImage: "reg/other-view:2"})
	require.NoError(t, err)
	assert.Equal(t, "reg/other-view:2", res.Values["flux"].(map[string]any)["view"].(map[string]any)["image"])
}

func TestConvertTasks(t *testing.T) {
	for _, tc := range []struct {
		tasks     string
		wantTasks any
		wantCmd   string
	}{
		{"", nil, "flux submit -n1 --quiet --watch echo hello world"},
		{"1", nil, "flux submit -n1 --quiet --watch echo hello world"},
		{"0", 4, "echo hello world"},
		{"4", 4, "echo hello world"},
		{"8", 8, "echo hello world"},
		{"2", nil, "flux submit -n2 --quiet --watch echo hello world"},
	} {
		t.Run("tasks="+tc.tasks, func(t *testing.T) {
			in := hello
			if tc.tasks != "" {
				in = strings.Replace(hello, "size: 4", "size: 4\n  tasks: "+tc.tasks, 1)
			}
			res, err := Convert([]byte(in), Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.wantTasks, res.Values["tasks"])
			assert.Equal(t, tc.wantCmd, res.Values["command"])
		})
	}
}

// Every MiniCluster of the operator's examples converts to the golden values (or the golden
// refusal), and the values render with the chart.
func TestConvertOperatorExamples(t *testing.T) {
	src := unpackOperator(t)
	files, err := filepath.Glob(filepath.Join(src, "examples", "tests", "*", "minicluster.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, extra := range []string{"mpi/mpich", "scaling/basic", "state/basic-job-completion", "services/single"} {
		if f := filepath.Join(src, "examples", extra, "minicluster.yaml"); fileExists(f) {
			files = append(files, f)
		}
	}
	for _, f := range files {
		rel, _ := filepath.Rel(filepath.Join(src, "examples"), filepath.Dir(f))
		name := strings.ReplaceAll(rel, "/", "-")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			require.NoError(t, err)
			res, err := Convert(in, Options{Images: map[string]string{"ubuntu:noble": "registry.test/app:1"}})
			var got []byte
			if err != nil {
				got = []byte("error: " + err.Error() + "\n")
			} else {
				got, err = Write(res)
				require.NoError(t, err)
			}
			golden := filepath.Join("testdata", "examples", name+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./convert -update")
			assert.Equal(t, string(want), string(got))
			if res.Values == nil {
				return
			}
			values := filepath.Join(t.TempDir(), "values.yaml")
			require.NoError(t, os.WriteFile(values, got, 0o644))
			out, err := helmtest.Template(helmtest.Options{ReleaseName: res.Name, ValuesFiles: []string{values}})
			require.NoError(t, err, "the converted values do not render")
			objs, err := helmtest.DecodeAll(out)
			require.NoError(t, err)
			job, ok := helmtest.Find(objs, "Job", res.Name)
			require.True(t, ok, "no Job %s", res.Name)
			var check map[string]any
			require.NoError(t, yaml.Unmarshal(got, &check))
			assert.NotNil(t, job)
		})
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestConvertSubmitLine(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{"  tasks: 2\n  flux:\n    optionFlags: -ompi=openmpi@5", "flux submit -n2 -ompi=openmpi@5 --quiet --watch echo hello world"},
		{"  tasks: 4\n  flux:\n    optionFlags: -o cpu-affinity=per-task", "flux submit -N 4 -n4 -o cpu-affinity=per-task --quiet --watch echo hello world"},
		{"  tasks: 0\n  flux:\n    submitCommand: flux run", "flux run -N 4 --quiet --watch echo hello world"},
	} {
		res, err := Convert([]byte(strings.Replace(hello, "  size: 4\n", "  size: 4\n"+tc.extra+"\n", 1)), Options{})
		require.NoError(t, err)
		assert.Equal(t, tc.want, res.Values["command"])
		assert.Nil(t, res.Values["tasks"])
	}
}

func TestConvertPodFields(t *testing.T) {
	in := strings.Replace(hello, "  size: 4\n", "  size: 4\n  jobLabels: {team: hpc}\n  shareProcessNamespace: true\n  pod:\n    serviceAccountName: mine\n", 1)
	res, err := Convert([]byte(in), Options{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"team": "hpc"}, res.Values["jobLabels"])
	assert.Equal(t, true, res.Values["shareProcessNamespace"])
	assert.Equal(t, false, res.Values["automountServiceAccountToken"], "the operator's false, with an account of the user's")
	res, err = Convert([]byte(strings.Replace(in, "serviceAccountName: mine", "automountServiceAccountToken: true", 1)), Options{})
	require.NoError(t, err)
	assert.Equal(t, true, res.Values["automountServiceAccountToken"])
}

// flux.minimalService, flux.wrap and flux.curveCert become chart values.
func TestConvertFluxSettings(t *testing.T) {
	cert := "curve\n    public-key = \"" + strings.Repeat("a", 40) + "\"\n    secret-key = \"" + strings.Repeat("b", 40) + "\"\n"
	in := strings.Replace(hello, "  size: 4\n", "  size: 4\n  flux:\n    minimalService: true\n    wrap: strace,-f\n    curveCert: |\n"+indent(cert, "      ")+"\n", 1)
	res, err := Convert([]byte(in), Options{})
	require.NoError(t, err)
	flux := res.Values["flux"].(map[string]any)
	assert.Equal(t, true, flux["minimalService"])
	assert.Equal(t, "", flux["topology"], "minimalService: a flat tree")
	assert.Equal(t, "strace,-f", flux["wrap"])
	assert.Equal(t, cert, res.Values["curve"].(map[string]any)["cert"])
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// A container without runFlux or noWrapEntrypoint uses its pod's broker: fluxContainers, with
// the operator's start script's parts in its order.
func TestConvertFluxContainers(t *testing.T) {
	sidecar := "      runFlux: true\n    - image: ubuntu:noble\n      name: queue\n      command: flux jobs -a\n      commands:\n        init: echo init\n        servicePre: echo service-pre\n        post: echo post\n      environment: {A: b}\n"
	in := strings.Replace(hello, "      command: echo hello world\n", "      command: echo hello world\n"+sidecar, 1)
	in = strings.Replace(in, "  size: 4\n", "  size: 4\n  flux:\n    noWaitSocket: true\n", 1)
	res, err := Convert([]byte(in), Options{Images: map[string]string{"ubuntu:noble": "reg/app:1"}})
	require.NoError(t, err)
	assert.Nil(t, res.Values["sidecars"])
	assert.Equal(t, []any{map[string]any{"name": "queue", "image": "reg/app:1", "command": "echo init\necho service-pre\nflux jobs -a\necho post",
		"env": []any{map[string]any{"name": "A", "value": "b"}}, "waitSocket": false}}, res.Values["fluxContainers"])

	for _, tc := range []struct{ extra, want string }{
		{"      commands:\n        pre: x\n", "spec.containers[1].commands.pre: only the container that runs Flux"},
		{"      batch: true\n", "spec.containers[1].batch"},
		{"      command: \"\"\n", "spec.containers[1].command is empty"},
	} {
		in := strings.Replace(hello, "      command: echo hello world\n", "      command: echo hello world\n      runFlux: true\n    - image: x\n      name: q\n"+tc.extra, 1)
		if !strings.Contains(tc.extra, "command:") {
			in += "      command: flux jobs\n"
		}
		_, err := Convert([]byte(in), Options{})
		require.Error(t, err, tc.extra)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err = Convert([]byte(strings.Replace(hello, "      command:", "      commands:\n        servicePre: x\n      command:", 1)), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.containers[0].commands.servicePre")
}

// lifeCycle hooks become Kubernetes lifecycle hooks run with /bin/sh -c, on every kind of
// container; the view's resources and securityContext become flux.view's; the fields the
// operator does not act on are accepted.
func TestConvertLifecycleAndView(t *testing.T) {
	hooks := "      lifeCycle:\n        postStartExec: /opt/start.sh\n        preStopExec: flux queue stop --all\n"
	in := strings.Replace(hello, "      command: echo hello world\n", "      command: echo hello world\n      runFlux: true\n"+hooks+
		"    - image: x\n      name: side\n      noWrapEntrypoint: true\n"+hooks+
		"    - image: x\n      name: user\n      command: flux jobs\n"+hooks, 1)
	in = strings.Replace(in, "  size: 4\n", "  size: 4\n  flux:\n    mungeSecret: mine\n    container:\n      workingDir: /x\n      resources:\n        limits: {memory: 256Mi}\n      securityContext: {runAsUser: 1000}\n      pythonPath: /opt/py\n", 1)
	in += "  services:\n    - image: nginx\n      name: web\n" + hooks
	res, err := Convert([]byte(in), Options{})
	require.NoError(t, err)
	want := map[string]any{
		"postStart": map[string]any{"exec": map[string]any{"command": []any{"/bin/sh", "-c", "/opt/start.sh"}}},
		"preStop":   map[string]any{"exec": map[string]any{"command": []any{"/bin/sh", "-c", "flux queue stop --all"}}},
	}
	assert.Equal(t, want, res.Values["lifecycle"])
	for _, list := range []string{"sidecars", "fluxContainers", "services"} {
		items, _ := res.Values[list].([]any)
		require.Len(t, items, 1, list)
		assert.Equal(t, want, items[0].(map[string]any)["lifecycle"], list)
	}
	view := res.Values["flux"].(map[string]any)["view"].(map[string]any)
	assert.Equal(t, map[string]any{"limits": map[string]any{"memory": "256Mi"}}, view["resources"])
	assert.Equal(t, map[string]any{"runAsUser": int64(1000)}, view["securityContext"])
	assert.NotContains(t, res.Values, "munge")
	assert.Equal(t, []any{map[string]any{"name": "PYTHONPATH", "value": "/opt/py"}}, res.Values["env"])

	// They render: the hooks on the containers, the view's resources on its container.
	got, err := Write(res)
	require.NoError(t, err)
	values := filepath.Join(t.TempDir(), "values.yaml")
	require.NoError(t, os.WriteFile(values, got, 0o644))
	out, err := helmtest.Template(helmtest.Options{ReleaseName: res.Name, ValuesFiles: []string{values}, Set: []string{"flux.view.mode=copy"}})
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(out, "- flux queue stop --all"), "the hook on flux, side and user in the broker pod, web in the services pod")
	assert.Contains(t, out, "memory: 256Mi")
	assert.Contains(t, out, "runAsUser: 1000")

	// A PYTHONPATH of the container's own comes first, as the operator's start script has it.
	own := strings.Replace(hello, "      command: echo hello world\n", "      command: echo hello world\n      environment: {PYTHONPATH: /mine}\n", 1)
	own = strings.Replace(own, "  size: 4\n", "  size: 4\n  flux:\n    container:\n      pythonPath: /opt/py\n", 1)
	res, err = Convert([]byte(own), Options{})
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"name": "PYTHONPATH", "value": "/mine:/opt/py"}}, res.Values["env"])
}

// spec.services: the chart's services pod, named <name>-services; the operator's name of it
// in commands and environment values becomes the chart's.
func TestConvertServices(t *testing.T) {
	in := strings.Replace(hello, "      command: echo hello world\n",
		"      command: curl -s flux-sample-services.flux-service.default.svc.cluster.local\n      environment: {REGISTRY: flux-sample-services.flux-service.default.svc.cluster.local}\n", 1)
	in += "  services:\n    - image: nginx\n      name: nginx\n      ports: [80]\n      volumes:\n        html:\n          configMapName: web\n          path: /usr/share/nginx/html\n"
	res, err := Convert([]byte(in), Options{Images: map[string]string{"nginx": "reg/web:1"}})
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"name": "nginx", "image": "reg/web:1", "ports": []any{map[string]any{"containerPort": 80, "protocol": "TCP"}},
		"volumeMounts": []any{map[string]any{"name": "html", "mountPath": "/usr/share/nginx/html"}}}}, res.Values["services"])
	assert.Equal(t, []any{map[string]any{"name": "html", "configMap": map[string]any{"name": "web"}}}, res.Values["servicesVolumes"])
	assert.Equal(t, "flux submit -n1 --quiet --watch curl -s flux-sample-services.default.svc.cluster.local", res.Values["command"])
	assert.Equal(t, []any{map[string]any{"name": "REGISTRY", "value": "flux-sample-services.default.svc.cluster.local"}}, res.Values["env"])

	for _, tc := range []struct{ extra, want string }{
		{"      command: nginx -g daemon\n", "spec.services[0].command: the operator ignores"},
		{"      batch: true\n", "spec.services[0].batch: a service runs no Flux"},
	} {
		_, err := Convert([]byte(hello+"  services:\n    - image: nginx\n      name: nginx\n"+tc.extra), Options{})
		require.Error(t, err, tc.extra)
		assert.Contains(t, err.Error(), tc.want)
	}
}
