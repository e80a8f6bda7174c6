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
		{"unknown field", strings.Replace(hello, "  size: 4", "  size: 4\n  sise: 4", 1), []string{`"sise"`, "not in the v1alpha2 MiniCluster"}},
		{"unknown nested field", strings.Replace(hello, "      command:", "      comand: x\n      command:", 1), []string{`"comand"`}},
		{"several MiniClusters", hello + "---\n" + hello, []string{"2 documents", "one MiniCluster at a time"}},
		{"size too large", strings.Replace(hello, "size: 4", "size: 100001", 1), []string{"spec.size 100001", "1 to 100000"}},
		{"size negative", strings.Replace(hello, "size: 4", "size: -1", 1), []string{"spec.size -1"}},
		{"maxSize below size", strings.Replace(hello, "size: 4", "size: 4\n  maxSize: 2", 1), []string{"spec.maxSize 2"}},
		{"refused field", strings.Replace(hello, "size: 4", "size: 4\n  minSize: 2", 1), []string{"spec.minSize:", "set size"}},
		{"refused nested field", strings.Replace(hello, "size: 4", "size: 4\n  flux:\n    wrap: strace", 1), []string{"spec.flux.wrap:"}},
		{"refused in a list", strings.Replace(hello, "      command:", "      lifeCycle:\n        preStopExec: x\n      command:", 1), []string{"spec.containers[0].lifeCycle.preStopExec:"}},
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
		{"", nil, "echo hello world"},
		{"1", nil, "echo hello world"},
		{"0", 4, "echo hello world"},
		{"4", 4, "echo hello world"},
		{"8", 8, "echo hello world"},
		{"2", nil, "flux submit -n 2 --quiet --watch echo hello world"},
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
