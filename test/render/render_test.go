// Package render tests the chart's rendered manifests in process (Helm SDK, no cluster).
package render

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/internal/repo"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// render renders and strictly decodes, failing the test on any error. The view is copied
// (flux.view.mode=copy) unless the options name a mode: most tests here check the copy's wiring;
// TestGolden and TestViewModeAuto render the chart's default.
func render(t *testing.T, opts helmtest.Options) []helmtest.Object {
	t.Helper()
	out, err := helmtest.Template(copyView(t, opts))
	require.NoError(t, err)
	objs, err := helmtest.DecodeAll(out)
	require.NoError(t, err)
	return objs
}

// copyView adds flux.view.mode=copy before the options' own values, unless they set a mode.
func copyView(t *testing.T, opts helmtest.Options) helmtest.Options {
	t.Helper()
	for _, s := range opts.Set {
		if strings.Contains(s, "flux.view.mode=") {
			return opts
		}
	}
	for _, f := range opts.ValuesFiles {
		if !filepath.IsAbs(f) {
			root, err := repo.Root()
			require.NoError(t, err)
			f = filepath.Join(root, f)
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(raw), "mode:") {
			return opts
		}
	}
	opts.Set = append([]string{"flux.view.mode=copy"}, opts.Set...)
	return opts
}

func get[T any](t *testing.T, objs []helmtest.Object, kind, name string) T {
	t.Helper()
	o, ok := helmtest.Find(objs, kind, name)
	require.Truef(t, ok, "no %s %q rendered", kind, name)
	v, ok := o.Object.(T)
	require.Truef(t, ok, "%s %q has type %T", kind, name, o.Object)
	return v
}

// TestGolden holds the whole output of the default values and of every file in values/.
func TestGolden(t *testing.T) {
	files, err := helmtest.ValuesFiles()
	require.NoError(t, err)
	require.NotEmpty(t, files, "values/ holds no values files")
	cases := map[string][]string{"default": nil}
	for _, f := range files {
		cases[strings.TrimSuffix(filepath.Base(f), ".yaml")] = []string{f}
	}
	for name, valuesFiles := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := helmtest.Template(helmtest.Options{ValuesFiles: valuesFiles})
			require.NoError(t, err)
			_, err = helmtest.DecodeAll(got)
			require.NoError(t, err, "every object must decode strictly into its k8s.io/api type")
			checkGolden(t, filepath.Join("testdata", name+".golden.yaml"), withoutScripts(t, got))
		})
	}
}

// checkGolden compares got with the golden file, or with -update writes it.
func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run: go test ./test/render -update")
	assert.Equal(t, string(want), got, "WANT %s, GOT the render; if the change is intended, run with -update", golden)
}

// withoutScripts replaces each of the chart's files/ that the render holds as it is (the body
// of a block scalar, as minicluster.file writes it) with a line naming it: the scripts are
// goldened once, as the files they are (TestScriptsAreTheChartFiles holds that the pods get them
// byte for byte), so that an edit of a script changes no render golden.
func withoutScripts(t *testing.T, render string) string {
	t.Helper()
	files, err := os.ReadDir(filepath.Join(helmtest.ChartDir(), "files"))
	require.NoError(t, err)
	for _, f := range files {
		text := strings.TrimSuffix(chartFile(t, f.Name()), "\n")
		for _, indent := range []string{"    ", "          "} {
			var body strings.Builder
			for _, line := range strings.Split(text, "\n") {
				body.WriteString("\n")
				if line != "" {
					body.WriteString(indent + line)
				}
			}
			render = strings.ReplaceAll(render, body.String()+"\n", "\n"+indent+"# charts/minicluster/files/"+f.Name()+", as it is\n")
		}
	}
	return render
}

func TestEveryObjectIsNamespacedAndLabelled(t *testing.T) {
	objs := render(t, helmtest.Options{Namespace: "hpc", Set: []string{"munge.enabled=true"}})
	require.Len(t, objs, 15, "keygen and broker ServiceAccount, Role, RoleBinding; curve and munge Secrets; broker and entrypoint ConfigMaps; Service; NetworkPolicy; broker and keygen Jobs; helm test Pod")
	for _, o := range objs {
		assert.Equalf(t, "hpc", o.Meta.GetNamespace(), "%s %s", o.Kind, o.Name)
		labels := o.Meta.GetLabels()
		for _, key := range []string{"helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"} {
			assert.Containsf(t, labels, key, "%s %s", o.Kind, o.Name)
		}
	}
}

func TestServiceAndJobWiring(t *testing.T) {
	objs := render(t, helmtest.Options{Set: []string{"size=6", "command=hostname", "flux.port=9000"}})
	svc := get[*corev1.Service](t, objs, "Service", "flux-sample")
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")

	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "the Service must be headless")
	assert.True(t, svc.Spec.PublishNotReadyAddresses, "DNS must exist before the pods are ready")
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, "broker", svc.Spec.Ports[0].Name)
	assert.EqualValues(t, 9000, svc.Spec.Ports[0].Port)

	pod := job.Spec.Template
	for k, v := range svc.Spec.Selector {
		assert.Equalf(t, v, pod.Labels[k], "Service selector %s must match the Job's pods", k)
	}
	assert.Equal(t, svc.Name, pod.Spec.Subdomain, "subdomain must be the Service")
	require.NotNil(t, job.Spec.CompletionMode)
	assert.Equal(t, batchv1.IndexedCompletion, *job.Spec.CompletionMode)
	assert.EqualValues(t, 6, *job.Spec.Completions)
	assert.EqualValues(t, 6, *job.Spec.Parallelism)
	require.NotNil(t, job.Spec.BackoffLimitPerIndex, "each broker has its own failure count and back-off")
	assert.EqualValues(t, 6, *job.Spec.BackoffLimitPerIndex)
	require.NotNil(t, job.Spec.MaxFailedIndexes)
	assert.EqualValues(t, 0, *job.Spec.MaxFailedIndexes, "a broker over its limit fails the Job")
	assert.Nil(t, job.Spec.BackoffLimit, "no Job-wide limit: its back-off grows with every failure the Job ever had")
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy, "podFailurePolicy needs Never")
	require.NotNil(t, job.Spec.PodFailurePolicy)
	rules := job.Spec.PodFailurePolicy.Rules
	require.Len(t, rules, 3)
	assert.Equal(t, batchv1.PodFailurePolicyActionFailJob, rules[0].Action)
	assert.Equal(t, []int32{78}, rules[0].OnExitCodes.Values, "a broker that cannot start fails the Job")
	assert.Nil(t, rules[0].OnExitCodes.ContainerName, "the keys step's exit code counts too")
	// Deleted with its namespace, the keys container exits 79: the failed Job lets its pods go.
	assert.Equal(t, batchv1.PodFailurePolicyActionFailJob, rules[1].Action)
	assert.Equal(t, []int32{79}, rules[1].OnExitCodes.Values)
	assert.Equal(t, ptr.To("keys"), rules[1].OnExitCodes.ContainerName, "only the keys container's code: a user's command may exit 79")
	assert.Contains(t, container(t, job, "keys").Args, "--namespace-deleted-code=79", "the keys container exits with the code the rule fails on")
	assert.Equal(t, batchv1.PodFailurePolicyActionIgnore, rules[2].Action)
	assert.Equal(t, corev1.DisruptionTarget, rules[2].OnPodConditions[0].Type)
	assert.NotContains(t, pod.Labels, "helm.sh/chart", "chart version on the pod template would make upgrades fail")
	assert.NotContains(t, pod.Labels, "app.kubernetes.io/version")

	// Spread across nodes by default, softly, with no pod anti-affinity (the scheduler would
	// look at every pod in the cluster for each broker).
	assert.Nil(t, pod.Spec.Affinity)
	require.Len(t, pod.Spec.TopologySpreadConstraints, 1)
	spread := pod.Spec.TopologySpreadConstraints[0]
	assert.Equal(t, corev1.ScheduleAnyway, spread.WhenUnsatisfiable, "a preference: more brokers than nodes must still schedule")
	assert.Equal(t, "kubernetes.io/hostname", spread.TopologyKey)
	assert.EqualValues(t, 1, spread.MaxSkew)
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "minicluster", "app.kubernetes.io/instance": "flux-sample", "app.kubernetes.io/component": "broker"},
		spread.LabelSelector.MatchLabels, "the release's brokers, and only them")

	assert.Equal(t, []string{"flux", "flux-view", "keys"}, containerNames(job), "the broker first (kustomizations address containers/0), the keys step beside it")
	assert.Empty(t, pod.Spec.InitContainers, "an init container would hold the broker back until the kubelet's next relist")
	c := pod.Spec.Containers[0]
	assert.Equal(t, []string{"/bin/sh", "/minicluster/scripts/entrypoint.sh"}, c.Command)
	assert.EqualValues(t, 9000, c.Ports[0].ContainerPort)
	assert.Equal(t, "broker", c.Ports[0].Name)

	// Ephemeral on a cluster with Job successPolicy: the Job succeeds with the lead, and the
	// workers rejoin whenever an instance ends (a lost lead comes back).
	require.NotNil(t, job.Spec.SuccessPolicy)
	assert.Equal(t, "0", *job.Spec.SuccessPolicy.Rules[0].SucceededIndexes)
	assert.Equal(t, "true", env(c)["MINICLUSTER_REJOIN"])
}

func TestSuccessPolicyOnlyWhereItExistsAndOnlyForEphemeral(t *testing.T) {
	old := get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"command=hostname"}, KubeVersion: "v1.30.4"}), "Job", "flux-sample")
	assert.Nil(t, old.Spec.SuccessPolicy, "Kubernetes 1.30 has no successPolicy")
	assert.Equal(t, "false", env(old.Spec.Template.Spec.Containers[0])["MINICLUSTER_REJOIN"], "without successPolicy every worker must succeed for the Job to complete")
	interactive := render(t, helmtest.Options{})
	assert.Nil(t, get[*batchv1.Job](t, interactive, "Job", "flux-sample").Spec.SuccessPolicy, "an interactive instance (no command) never succeeds on its own")
	_, err := helmtest.Template(helmtest.Options{KubeVersion: "v1.26.0"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kubeVersion: >=1.27.0-0")
}

// bootstrap is the [bootstrap] table of flux-config-bootstrap(5).
type bootstrap struct {
	CurveCert      string `toml:"curve_cert"`
	DefaultPort    int    `toml:"default_port"`
	DefaultBind    string `toml:"default_bind"`
	DefaultConnect string `toml:"default_connect"`
	Hosts          []struct {
		Host string `toml:"host"`
	} `toml:"hosts"`
}

type brokerConfig struct {
	Bootstrap bootstrap `toml:"bootstrap"`
	Resource  struct {
		Path     string `toml:"path"`
		Noverify bool   `toml:"noverify"`
	} `toml:"resource"`
	Access map[string]bool `toml:"access"`
	// Fluxion's queue manager (flux.scheduler=fluxion) or modprobe's choice of sched-simple.
	Qmanager map[string]string `toml:"sched-fluxion-qmanager"`
	Modules  struct {
		Alternatives map[string]string `toml:"alternatives"`
	} `toml:"modules"`
	// Jobs no MiniCluster of maxSize brokers could run are refused at submit by the scheduler's
	// feasibility.check; Fluxion's judges against the R file of all maxSize brokers.
	Ingest struct {
		Validator struct {
			Plugins []string `toml:"plugins"`
		} `toml:"validator"`
	} `toml:"ingest"`
	Feasibility map[string]string `toml:"sched-fluxion-feasibility"`
}

func TestBrokerConfig(t *testing.T) {
	objs := render(t, helmtest.Options{Namespace: "science", Set: []string{"size=6", "maxSize=6", "clusterDomain=example.org"}})
	cm := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")

	var cfg brokerConfig
	md, err := toml.Decode(cm.Data["broker.toml"], &cfg)
	require.NoError(t, err)
	assert.Empty(t, md.Undecoded(), "broker.toml has keys flux-config-bootstrap(5) does not know")
	b := cfg.Bootstrap
	assert.Equal(t, "/etc/curve/curve.cert", b.CurveCert)
	assert.Equal(t, 8050, b.DefaultPort)
	assert.Equal(t, "tcp://eth0:%p", b.DefaultBind)
	assert.Equal(t, "tcp://%h.flux-sample.science.svc.example.org:%p", b.DefaultConnect)
	require.Len(t, b.Hosts, 1)
	assert.Equal(t, "flux-sample-[0-5]", b.Hosts[0].Host)
	assert.Equal(t, "/minicluster/run/R", cfg.Resource.Path)
	assert.True(t, cfg.Access["allow-root-owner"])
	assert.Equal(t, map[string]string{"queue-policy": "fcfs"}, cfg.Qmanager, "Fluxion by default, first come first served")
	assert.Equal(t, []string{"jobspec", "/minicluster/scripts/validate-feasible.py", "/minicluster/scripts/validate-brokers-up.py"}, cfg.Ingest.Validator.Plugins)
	assert.Equal(t, map[string]string{"load-file": "/minicluster/run/R"}, cfg.Feasibility, "Fluxion's feasibility reads all maxSize brokers from [resource] path")
	assert.Empty(t, cfg.Modules.Alternatives)
	assert.Equal(t, "flux-sample-[0-5]", cm.Data["hosts"])
	assert.Equal(t, "6", cm.Data["size"])

	var params map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations["minicluster.dev/parameters"]), &params))
	assert.Equal(t, map[string]any{
		"job": "flux-sample", "service": "flux-sample", "maxSize": 6.0, "port": 8050.0,
		"clusterDomain": "example.org", "interface": "eth0", "curveCert": "/etc/curve/curve.cert",
		"resourcePath": "/minicluster/run/R", "custom": false,
	}, params)

	// The pods mount this ConfigMap where the entrypoint reads it.
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	assert.Contains(t, job.Spec.Template.Spec.Volumes, corev1.Volume{Name: "broker-config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}})
}

// The scheduler reaches broker.toml: Fluxion's queue policy, or sched-simple chosen over a
// Fluxion that flux modprobe would otherwise prefer.
func TestSchedulerConfig(t *testing.T) {
	for _, tc := range []struct {
		set      []string
		sched    string
		qmanager map[string]string
		alts     map[string]string
	}{
		{[]string{"flux.queuePolicy=easy"}, "fluxion", map[string]string{"queue-policy": "easy"}, nil},
		{[]string{"flux.queuePolicy=conservative"}, "fluxion", map[string]string{"queue-policy": "conservative"}, nil},
		{[]string{"flux.scheduler=simple"}, "simple", nil, map[string]string{"sched": "sched-simple", "feasibility": "sched-simple"}},
	} {
		fluxion := tc.sched == "fluxion"
		t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
			objs := render(t, helmtest.Options{Set: tc.set})
			cm := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")
			var cfg brokerConfig
			md, err := toml.Decode(cm.Data["broker.toml"], &cfg)
			require.NoError(t, err)
			assert.Empty(t, md.Undecoded())
			assert.Equal(t, tc.qmanager, cfg.Qmanager)
			assert.Equal(t, tc.alts, cfg.Modules.Alternatives)
			// Both schedulers answer the feasibility validator; only Fluxion's needs the R file.
			assert.Equal(t, []string{"jobspec", "/minicluster/scripts/validate-feasible.py", "/minicluster/scripts/validate-brokers-up.py"}, cfg.Ingest.Validator.Plugins)
			if fluxion {
				assert.Equal(t, map[string]string{"load-file": "/minicluster/run/R"}, cfg.Feasibility)
			} else {
				assert.Nil(t, cfg.Feasibility, "sched-simple's feasibility.check counts the brokers that are down by itself")
			}
			job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
			assert.Contains(t, job.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "MINICLUSTER_SCHEDULER", Value: tc.sched})
		})
	}
}

func TestHostlistForms(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"size=1", "maxSize=1"}, "flux-sample-0"},
		{[]string{"size=2", "maxSize=2"}, "flux-sample-[0-1]"},
		{[]string{"size=3"}, "flux-sample-[0-15]"}, // automatic maxSize
		{[]string{"size=40"}, "flux-sample-[0-39]"},
	} {
		objs := render(t, helmtest.Options{Set: tc.set})
		cm := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")
		assert.Equalf(t, tc.want, cm.Data["hosts"], "%v", tc.set)
		var cfg brokerConfig
		_, err := toml.Decode(cm.Data["broker.toml"], &cfg)
		require.NoError(t, err)
		require.Lenf(t, cfg.Bootstrap.Hosts, 1, "%v", tc.set)
		assert.Equalf(t, tc.want, cfg.Bootstrap.Hosts[0].Host, "%v", tc.set)
	}
}

// TestResizeTouchesOnlySize compares renders at size 2 and 9: broker.toml, the entrypoint and the
// Job's pod template must be identical, or a resize would restart Flux or be refused.
func TestResizeTouchesOnlySize(t *testing.T) {
	small := render(t, helmtest.Options{Set: []string{"size=2", "maxSize=10", "command=hostname"}})
	large := render(t, helmtest.Options{Set: []string{"size=9", "maxSize=10", "command=hostname"}})
	require.Equal(t, len(small), len(large))
	for i := range small {
		s, l := small[i], large[i]
		require.Equal(t, s.Kind+"/"+s.Name, l.Kind+"/"+l.Name)
		switch {
		case s.Kind == "Job" && s.Name == "flux-sample":
			sj, lj := s.Object.(*batchv1.Job), l.Object.(*batchv1.Job)
			assert.Equal(t, sj.Spec.Template, lj.Spec.Template, "the pod template must not depend on size")
			assert.Equal(t, sj.Annotations, lj.Annotations)
			assert.EqualValues(t, 2, *sj.Spec.Parallelism)
			assert.EqualValues(t, 9, *lj.Spec.Parallelism)
			assert.EqualValues(t, 9, *lj.Spec.Completions)
		case s.Kind == "ConfigMap" && s.Name == "flux-sample-broker":
			sc, lc := s.Object.(*corev1.ConfigMap), l.Object.(*corev1.ConfigMap)
			assert.Equal(t, sc.Data["broker.toml"], lc.Data["broker.toml"], "broker.toml must not depend on size")
			assert.Equal(t, sc.Data["hosts"], lc.Data["hosts"])
			assert.Equal(t, sc.Annotations, lc.Annotations)
			assert.Equal(t, "2", sc.Data["size"])
			assert.Equal(t, "9", lc.Data["size"])
		case s.Kind == "Pod": // the helm test pod checks every broker of the current size
		default:
			assert.Equalf(t, s.Source, l.Source, "%s %s changed with size", s.Kind, s.Name)
		}
	}
}

func env(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

func TestModesReachThePods(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want map[string]string
	}{
		{"interactive by default", nil, map[string]string{"MINICLUSTER_COMMAND": ""}},
		{"ephemeral command", []string{"command=lmp -in in.lj"}, map[string]string{"MINICLUSTER_COMMAND": "lmp -in in.lj", "MINICLUSTER_TASKS": "0"}},
		{"tasks", []string{"command=hostname", "tasks=8"}, map[string]string{"MINICLUSTER_TASKS": "8"}},
		{"flux options", []string{"flux.logLevel=7", "flux.connectTimeout=2s", "flux.cleanupTimeout=20s", "flux.topology=kary:2", "flux.brokerOptions={-Sa=1,-Sb=x y}"},
			map[string]string{"MINICLUSTER_LOG_LEVEL": "7", "MINICLUSTER_CONNECT_TIMEOUT": "2s", "MINICLUSTER_CLEANUP_TIMEOUT": "20s", "MINICLUSTER_TOPOLOGY": "kary:2", "MINICLUSTER_BROKER_OPTIONS": "-Sa=1\n-Sb=x y"}},
		{"view", nil, map[string]string{"MINICLUSTER_FLUX_VIEW": "/mnt/flux/view", "MINICLUSTER_FLUX_VIEW_ROOT": ""}},
		{"no view", []string{"flux.view.enabled=false"}, map[string]string{"MINICLUSTER_FLUX_VIEW": "", "MINICLUSTER_FLUX_VIEW_ROOT": ""}},
		{"view image", []string{"flux.view.mode=image"}, map[string]string{"MINICLUSTER_FLUX_VIEW": "", "MINICLUSTER_FLUX_VIEW_ROOT": "/mnt/flux"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: tc.set}), "Job", "flux-sample")
			got := env(job.Spec.Template.Spec.Containers[0])
			for k, v := range tc.want {
				assert.Equalf(t, v, got[k], "env %s", k)
			}
		})
	}
}

func TestFluxView(t *testing.T) {
	job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"flux.view.mountPath=/opt/fluxview", "flux.view.image=example.org/view:1"}}), "Job", "flux-sample")
	spec := job.Spec.Template.Spec
	assert.Equal(t, []string{"flux", "flux-view", "keys"}, containerNames(job), "the copy beside the broker, before the keys step (it takes longer)")
	view := container(t, job, "flux-view")
	assert.Equal(t, "example.org/view:1", view.Image)
	// The real flux-view layout: /opt/view links to the view tree, which links into /opt/software
	// (files/view-copy.sh; TestViewCopy runs it).
	assert.Equal(t, map[string]string{"MINICLUSTER_FLUX_VIEW_MOUNT": "/opt/fluxview", "MINICLUSTER_FLUX_VIEW_IMAGE": "example.org/view:1",
		"MINICLUSTER_FLUX_VIEW_SOFTWARE": "/opt/software"}, env(view))
	assert.Equal(t, "/minicluster/keys /opt/fluxview", env(spec.Containers[0])["MINICLUSTER_HELPERS"], "the entrypoint waits for the copy and the keys")
	assert.Contains(t, spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "flux-view", MountPath: "/opt/fluxview"})
	assert.Contains(t, spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "flux-view", MountPath: "/opt/software", SubPath: "software"},
		"the software must be back at its build prefix")

	assert.Empty(t, volume(t, job, "flux-view").EmptyDir.Medium, "the node's disk by default")
	job = get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"flux.view.medium=Memory"}}), "Job", "flux-sample")
	assert.Equal(t, corev1.StorageMediumMemory, volume(t, job, "flux-view").EmptyDir.Medium)

	job = get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"flux.view.enabled=false"}}), "Job", "flux-sample")
	assert.Equal(t, []string{"flux", "keys"}, containerNames(job))
	assert.Equal(t, "/minicluster/keys", env(job.Spec.Template.Spec.Containers[0])["MINICLUSTER_HELPERS"])
	for _, v := range job.Spec.Template.Spec.Volumes {
		assert.NotEqual(t, "flux-view", v.Name)
	}
}

// flux.view.mode=image: the view image is a read-only image volume, nothing is copied, and the
// software subtree is mounted back at its build prefix.
func TestFluxViewImage(t *testing.T) {
	job := get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"flux.view.mode=image", "flux.view.image=example.org/view:1", "flux.view.imagePullPolicy=Always"}}), "Job", "flux-sample")
	spec := job.Spec.Template.Spec
	assert.Equal(t, []string{"flux", "keys"}, containerNames(job), "no copy step")
	assert.Equal(t, &corev1.ImageVolumeSource{Reference: "example.org/view:1", PullPolicy: corev1.PullAlways}, volume(t, job, "flux-view").Image)
	assert.Nil(t, volume(t, job, "flux-view").EmptyDir)
	assert.Contains(t, spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "flux-view", MountPath: "/mnt/flux", ReadOnly: true})
	assert.Contains(t, spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "flux-view", MountPath: "/opt/software", SubPath: "opt/software", ReadOnly: true},
		"the software must be back at its build prefix")

	job = get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"flux.view.mode=image", "flux.view.softwarePath="}}), "Job", "flux-sample")
	for _, m := range job.Spec.Template.Spec.Containers[0].VolumeMounts {
		assert.False(t, m.Name == "flux-view" && m.SubPath != "", "no software mount without softwarePath: %+v", m)
	}
	job = get[*batchv1.Job](t, render(t, helmtest.Options{Set: []string{"flux.view.mode=image", "flux.view.enabled=false"}}), "Job", "flux-sample")
	for _, v := range job.Spec.Template.Spec.Volumes {
		assert.NotEqual(t, "flux-view", v.Name)
	}
}

// container is the Job's pod container name: flux (the broker), keys (flux-keygen sidecar)
// or flux-view (the copy of the view), the last two beside the broker.
func container(t *testing.T, job *batchv1.Job, name string) corev1.Container {
	t.Helper()
	for _, c := range job.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("Job %s has no container %s", job.Name, name)
	return corev1.Container{}
}

// containerNames are the names of the Job's pod containers, in order.
func containerNames(job *batchv1.Job) []string {
	var names []string
	for _, c := range job.Spec.Template.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func TestKeyMaterial(t *testing.T) {
	t.Run("secret by default", func(t *testing.T) {
		objs := render(t, helmtest.Options{})
		secret := get[*corev1.Secret](t, objs, "Secret", "flux-sample-curve")
		assert.Empty(t, secret.Data, "the chart never renders key material: the keygen Job makes it")
		job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
		keys := container(t, job, "keys")
		assert.Equal(t, "ghcr.io/minicluster/flux-keygen:"+helmtest.AppVersion(), keys.Image)
		assert.Equal(t, []string{"sidecar", "--namespace=$(POD_NAMESPACE)", "--out=/minicluster/keys", "--curve-name=flux-sample-curve",
			"--storage=Secret", "--readiness-addr=:8051", "--supervisor=/minicluster/keys/minicluster-broker", "--wait-parent", "--hosts-file=/minicluster/config/hosts", "--topology=",
			"--namespace-deleted-code=79", "--job=flux-sample"}, keys.Args)
		// The broker's readiness is the keys container's answer on that port.
		probe := container(t, job, "keys").ReadinessProbe
		require.NotNil(t, probe, "the keys container has the pod's readiness probe")
		require.NotNil(t, probe.HTTPGet, "an HTTP probe, not an exec one")
		assert.Equal(t, "/readyz", probe.HTTPGet.Path)
		startup := container(t, job, "keys").StartupProbe
		require.NotNil(t, startup, "the keys container, which answers it, has a startup probe")
		assert.Nil(t, container(t, job, "flux").StartupProbe, "the broker container is not probed before the keys container listens")
		assert.Equal(t, int32(1), startup.InitialDelaySeconds, "the first probe gives the keys container's program a second to listen")
		assert.Equal(t, "/readyz?hold=20s", startup.HTTPGet.Path, "the startup probe is held until the broker is online")
		assert.Equal(t, 8051, probe.HTTPGet.Port.IntValue())
		assert.Equal(t, corev1.StorageMediumMemory, volume(t, job, "keys").EmptyDir.Medium, "keys stay in memory")
		// The API token reaches the keys step alone.
		pod := job.Spec.Template.Spec
		assert.False(t, *pod.AutomountServiceAccountToken)
		assert.Equal(t, "flux-sample-broker", pod.ServiceAccountName)
		assert.Contains(t, keys.VolumeMounts, corev1.VolumeMount{Name: "api-token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
		for _, m := range pod.Containers[0].VolumeMounts {
			assert.NotEqual(t, "api-token", m.Name, "the application container gets no API token")
		}

		role := get[*rbacv1.Role](t, objs, "Role", "flux-sample-keygen")
		assert.Equal(t, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"flux-sample-curve"}, Verbs: []string{"get", "update"}},
		}, role.Rules, "least privilege: read and fill only its own objects, which Helm creates")
		broker := get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
		assert.Equal(t, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"flux-sample-curve"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"default"}, Verbs: []string{"get"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, ResourceNames: []string{"flux-sample"}, Verbs: []string{"delete"}},
		}, broker.Rules, "the brokers only read their key, watch endpoints, read their own namespace and may delete their own Job")
		keygen := get[*batchv1.Job](t, objs, "Job", "flux-sample-keygen")
		assert.Empty(t, keygen.Annotations["helm.sh/hook"], "the keygen Job is part of the release, not a hook")
		c := keygen.Spec.Template.Spec.Containers[0]
		assert.Equal(t, "ghcr.io/minicluster/flux-keygen:"+helmtest.AppVersion(), c.Image)
		assert.Equal(t, []string{"kube", "--release=flux-sample", "--namespace=$(POD_NAMESPACE)", "--curve-name=flux-sample-curve", "--storage=Secret"}, c.Args)
		assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
		assert.True(t, *keygen.Spec.Template.Spec.SecurityContext.RunAsNonRoot)
	})
	t.Run("configmap storage", func(t *testing.T) {
		objs := render(t, helmtest.Options{Set: []string{"curve.storage=ConfigMap"}})
		get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-curve")
		_, hasSecret := helmtest.Find(objs, "Secret", "flux-sample-curve")
		assert.False(t, hasSecret)
		assert.Contains(t, container(t, get[*batchv1.Job](t, objs, "Job", "flux-sample"), "keys").Args, "--storage=ConfigMap")
		role := get[*rbacv1.Role](t, objs, "Role", "flux-sample-keygen")
		assert.Equal(t, []string{"configmaps"}, role.Rules[0].Resources)
		broker := get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
		assert.Equal(t, []string{"configmaps"}, broker.Rules[0].Resources)
	})
	t.Run("existing secret skips keygen", func(t *testing.T) {
		objs := render(t, helmtest.Options{Set: []string{"curve.existingSecret=my-cert"}})
		for _, o := range objs {
			assert.NotEqual(t, "flux-sample-keygen", o.Name, "no keygen Job for a user's own certificate")
			assert.NotEqual(t, "flux-sample-curve", o.Name)
		}
		assert.Contains(t, container(t, get[*batchv1.Job](t, objs, "Job", "flux-sample"), "keys").Args, "--curve-name=my-cert")
		broker := get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
		assert.Equal(t, []string{"my-cert"}, broker.Rules[0].ResourceNames, "the brokers read the user's Secret")
	})
	t.Run("munge", func(t *testing.T) {
		objs := render(t, helmtest.Options{Set: []string{"munge.enabled=true", "curve.existingSecret=my-cert"}})
		get[*corev1.Secret](t, objs, "Secret", "flux-sample-munge")
		job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
		assert.Contains(t, container(t, job, "keys").Args, "--munge-name=flux-sample-munge")
		assert.Contains(t, job.Spec.Template.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "munge-installed", MountPath: "/etc/munge"})
		keygen := get[*batchv1.Job](t, objs, "Job", "flux-sample-keygen")
		assert.Equal(t, []string{"kube", "--release=flux-sample", "--namespace=$(POD_NAMESPACE)", "--skip-curve", "--munge", "--munge-name=flux-sample-munge"}, keygen.Spec.Template.Spec.Containers[0].Args)
		role := get[*rbacv1.Role](t, objs, "Role", "flux-sample-keygen")
		assert.Equal(t, []string{"flux-sample-munge"}, role.Rules[0].ResourceNames)
		broker := get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
		assert.Equal(t, []string{"my-cert", "flux-sample-munge"}, broker.Rules[0].ResourceNames)
	})
}

func volume(t *testing.T, job *batchv1.Job, name string) corev1.Volume {
	t.Helper()
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("Job %s has no volume %q", job.Name, name)
	return corev1.Volume{}
}

func TestUserSettingsReachThePods(t *testing.T) {
	objs := render(t, helmtest.Options{ValuesFiles: []string{"values/gpu.yaml"}, Set: []string{
		"serviceAccountName=runner", "podLabels.team=hpc", "podAnnotations.note=x", "workingDir=/data",
		"imagePullSecrets[0].name=regcred", "job.activeDeadlineSeconds=600", "job.ttlSecondsAfterFinished=60",
	}})
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	spec := job.Spec.Template.Spec
	c := spec.Containers[0]
	assert.Equal(t, "1", c.Resources.Limits.Name("nvidia.com/gpu", "").String())
	assert.Contains(t, c.Env, corev1.EnvVar{Name: "MINICLUSTER_GPUS", Value: "1"}, "Flux describes the GPU of the limit")
	assert.Equal(t, "nvidia.com/gpu", spec.Tolerations[0].Key)
	assert.Equal(t, "true", spec.NodeSelector["nvidia.com/gpu.present"])
	assert.Equal(t, "runner", spec.ServiceAccountName)
	assert.Equal(t, ptr.To(false), spec.AutomountServiceAccountToken, "a user's own service account: no token in the broker's containers either")
	rb := get[*rbacv1.RoleBinding](t, objs, "RoleBinding", "flux-sample-broker")
	assert.Equal(t, "runner", rb.Subjects[0].Name, "the user's service account may read the keys")
	_, chartSA := helmtest.Find(objs, "ServiceAccount", "flux-sample-broker")
	assert.False(t, chartSA)
	assert.Equal(t, "hpc", job.Spec.Template.Labels["team"])
	assert.Equal(t, "x", job.Spec.Template.Annotations["note"])
	assert.Equal(t, "/data", c.WorkingDir)
	assert.Equal(t, "regcred", spec.ImagePullSecrets[0].Name)
	assert.EqualValues(t, 600, *job.Spec.ActiveDeadlineSeconds)
	assert.EqualValues(t, 60, *job.Spec.TTLSecondsAfterFinished)
}

// An affinity of the user's replaces the default spread, as it replaced the default affinity.
func TestAffinityReplacesTheDefaultSpread(t *testing.T) {
	objs := render(t, helmtest.Options{Set: []string{"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
		"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"}})
	spec := get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	require.NotNil(t, spec.Affinity)
	require.NotNil(t, spec.Affinity.NodeAffinity)
	assert.Equal(t, "pool", spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key)
	assert.Empty(t, spec.TopologySpreadConstraints)
}

func TestBrokerConfigOverride(t *testing.T) {
	custom := "[bootstrap]\ncurve_cert = \"/etc/curve/curve.cert\"\ndefault_port = 8050\nhosts = [{ host = \"flux-sample-[0-3]\" }]\n"
	objs := render(t, helmtest.Options{Set: []string{"size=4", "maxSize=4", "flux.brokerConfig=" + custom}})
	cm := get[*corev1.ConfigMap](t, objs, "ConfigMap", "flux-sample-broker")
	assert.Equal(t, custom, cm.Data["broker.toml"])
	assert.Contains(t, cm.Annotations["minicluster.dev/parameters"], `"custom":true`)
}

// TestHelmTestPodChecksEveryBroker runs the helm test pod's script with busybox sh against the
// rendered broker ConfigMap, with nslookup and nc replaced by shell functions (nslookup knows
// only the right FQDNs).
func TestHelmTestPodChecksEveryBroker(t *testing.T) {
	requireBusybox(t)
	objs := render(t, helmtest.Options{ReleaseName: "mc", Namespace: "team", Set: []string{"size=3,maxSize=5,flux.port=9000"}})
	pod := get[*corev1.Pod](t, objs, "Pod", "mc-test-wiring")
	assert.Equal(t, "test", pod.Annotations["helm.sh/hook"])
	cm := get[*corev1.ConfigMap](t, objs, "ConfigMap", "mc-broker")
	require.Equal(t, "mc-broker", volume(t, &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: pod.Spec}}}, "broker-config").ConfigMap.Name)
	config := t.TempDir()
	for k, v := range cm.Data {
		require.NoError(t, os.WriteFile(filepath.Join(config, k), []byte(v), 0o644))
	}
	script := strings.ReplaceAll(pod.Spec.Containers[0].Command[2], "/minicluster/config", config)
	// nc answers like a ZeroMQ CURVE server (zmq), like some other TCP server (http), or not at
	// all (down); it records its arguments and the greeting it was sent.
	sent := filepath.Join(t.TempDir(), "greeting")
	run := func(server string) (string, error) {
		stubs := `nslookup() { case $1 in mc-[0-4].mc.team.svc.cluster.local) return 0;; esac; return 1; }
sleep() { :; }
nc() {
  echo "nc $*" >&2
  cat >` + sent + `
  case ` + server + ` in
    zmq) printf '\377\0\0\0\0\0\0\0\001\177\003\001CURVE\0\0\0' ;;
    http) printf 'HTTP/1.0 400 Bad Request\r\n' ;;
    down) return 1 ;;
  esac
}
`
		out, err := exec.Command(busybox, "sh", "-c", stubs+script).CombinedOutput()
		return string(out), err
	}
	out, err := run("zmq")
	require.NoError(t, err, out)
	for i := 0; i < 3; i++ {
		assert.Contains(t, out, fmt.Sprintf("ok: mc-%d.mc.team.svc.cluster.local resolves\n", i))
	}
	assert.NotContains(t, out, "mc-3.", "only size brokers are checked, not maxSize")
	assert.Contains(t, out, "nc -w 3 mc-0.mc.team.svc.cluster.local 9000")
	assert.Contains(t, out, "answers on mc-0.mc.team.svc.cluster.local:9000 as a ZeroMQ CURVE server")
	greeting, err := os.ReadFile(sent)
	require.NoError(t, err)
	require.Len(t, greeting, 64, "a ZMTP 3.0 greeting is 64 bytes")
	assert.Equal(t, []byte{0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0}, greeting[:12], "signature and version 3.0")
	assert.Equal(t, "CURVE", string(greeting[12:17]), "mechanism")

	for _, server := range []string{"http", "down"} {
		out, err = run(server)
		require.Error(t, err, "a lead that does not answer as a CURVE server must fail helm test (%s)", server)
		assert.Contains(t, out, "FAIL: no ZeroMQ CURVE greeting from the lead broker at mc-0.mc.team.svc.cluster.local:9000")
	}
}

// maxUnavailable: no PodDisruptionBudget by default; with a value, one that selects exactly the
// broker pods (not the keygen Job's or the helm test pod) and allows that many evictions.
func TestDisruptionBudget(t *testing.T) {
	for _, o := range render(t, helmtest.Options{}) {
		assert.NotEqual(t, "PodDisruptionBudget", o.Kind, "no budget unless maxUnavailable is set")
	}
	// A Job has no scale subresource, so the budget is a number of brokers that must stay.
	for _, c := range []struct {
		set          string
		minAvailable int
	}{{"size=6,maxUnavailable=0", 6}, {"size=6,maxUnavailable=2", 4}, {"size=2,maxUnavailable=5", 0}} {
		pdb := get[*policyv1.PodDisruptionBudget](t, render(t, helmtest.Options{Set: []string{c.set}}), "PodDisruptionBudget", "flux-sample")
		require.NotNil(t, pdb.Spec.MinAvailable, c.set)
		assert.Equal(t, c.minAvailable, pdb.Spec.MinAvailable.IntValue(), c.set)
		assert.Nil(t, pdb.Spec.MaxUnavailable, "the disruption controller cannot read a Job's scale for maxUnavailable")
	}
	objs := render(t, helmtest.Options{Set: []string{"maxUnavailable=0"}})
	pdb := get[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", "flux-sample")
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	require.NoError(t, err)
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	assert.True(t, selector.Matches(labels.Set(job.Spec.Template.Labels)), "the budget must select the broker pods")
	keygen := get[*batchv1.Job](t, objs, "Job", "flux-sample-keygen")
	assert.False(t, selector.Matches(labels.Set(keygen.Spec.Template.Labels)), "the keygen Job's pod is not a broker")
}

// flux.view.mode=auto (the default) mounts the view image on Kubernetes 1.35 and later, where
// image volumes are on by default, and copies it before; an upgrade keeps the running
// MiniCluster's mode (the e2e TestViewModeAutoKeepsTheRunningMode).
func TestViewModeAuto(t *testing.T) {
	for _, tc := range []struct {
		kube  string
		image bool
	}{{"v1.34.4", false}, {"v1.35.0", true}, {"v1.36.3", true}} {
		t.Run(tc.kube, func(t *testing.T) {
			out, err := helmtest.Template(helmtest.Options{KubeVersion: tc.kube})
			require.NoError(t, err)
			objs, err := helmtest.DecodeAll(out)
			require.NoError(t, err)
			job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
			var image bool
			for _, v := range job.Spec.Template.Spec.Volumes {
				if v.Name == "flux-view" {
					image = v.Image != nil
				}
			}
			assert.Equal(t, tc.image, image, "an image volume flux-view")
			assert.Equal(t, !tc.image, slices.Contains(containerNames(job), "flux-view"), "a flux-view container that copies the view")
		})
	}
}
