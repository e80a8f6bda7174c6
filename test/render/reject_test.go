package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/internal/tbon"
)

// TestBadValuesAreRejected: every bad input fails the render (so nothing is created) with a
// message that names the value and the fix.
func TestBadValuesAreRejected(t *testing.T) {
	var messages strings.Builder
	for _, tc := range []struct {
		name    string
		opts    helmtest.Options
		wantErr []string
	}{
		{"size 0", helmtest.Options{Set: []string{"size=0"}}, []string{"/size", "minimum: got 0, want 1"}},
		{"negative size", helmtest.Options{Set: []string{"size=-3"}}, []string{"/size", "minimum"}},
		{"size above maxSize", helmtest.Options{Set: []string{"size=8", "maxSize=6"}},
			[]string{"size=8 is larger than maxSize=6", "set maxSize to 8 or more"}},
		{"unknown key", helmtest.Options{Set: []string{"sise=3"}}, []string{"additional properties 'sise' not allowed"}},
		{"unknown nested key", helmtest.Options{Set: []string{"flux.prot=9000"}}, []string{"/flux", "additional properties 'prot' not allowed"}},
		{"port too large", helmtest.Options{Set: []string{"flux.port=70000"}}, []string{"/flux/port", "maximum: got 70,000, want 65,535"}},
		{"port zero", helmtest.Options{Set: []string{"flux.port=0"}}, []string{"/flux/port", "minimum"}},
		{"readiness port is the broker port", helmtest.Options{Set: []string{"flux.readinessPort=8050"}}, []string{"flux.readinessPort=8050 is flux.port too", "set flux.readinessPort to another port"}},
		{"wrong storage", helmtest.Options{Set: []string{"curve.storage=Vault"}}, []string{"/curve/storage", "Secret", "ConfigMap"}},
		{"cleanup timeout not a Flux duration", helmtest.Options{Set: []string{"flux.cleanupTimeout=soon"}}, []string{"/flux/cleanupTimeout", "soon"}},
		{"log level", helmtest.Options{Set: []string{"flux.logLevel=9"}}, []string{"/flux/logLevel", "maximum"}},
		{"release name not a DNS label", helmtest.Options{ReleaseName: "flux.sample"},
			[]string{`release name "flux.sample"`, "must be a DNS label", "install with another name"}},
		// The schema's maximum refuses these first; _validate.tpl says why to whoever skips it.
		{"maxSize beyond an indexed Job", helmtest.Options{Set: []string{"size=2", "maxSize=100001"}},
			[]string{"/maxSize", "maximum: got 100,001, want 100,000"}},
		{"size beyond an indexed Job", helmtest.Options{Set: []string{"size=250000"}},
			[]string{"/size", "maximum: got 250,000, want 100,000"}},
		{"maxSize beyond an indexed Job, no schema", helmtest.Options{Set: []string{"size=2", "maxSize=100001"}, SkipSchemaValidation: true},
			[]string{"maxSize=100001 is more than 100000", "Indexed Job", "set maxSize to at most 100000"}},
		{"size beyond an indexed Job, no schema", helmtest.Options{Set: []string{"size=250000"}, SkipSchemaValidation: true},
			[]string{"size=250000 is more than 100000", "Indexed Job", "set size to at most 100000", "several MiniClusters"}},
		{"size beyond an indexed Job, maxSize too, no schema", helmtest.Options{Set: []string{"size=100001", "maxSize=100001"}, SkipSchemaValidation: true},
			[]string{"size=100001 is more than 100000", "set size to at most 100000"}},
		{"topology flux-core rejects", helmtest.Options{Set: []string{"flux.topology=star"}}, []string{"/flux/topology", "star"}},
		{"interactive, removed", helmtest.Options{Set: []string{"interactive=true"}},
			[]string{"interactive=true: the value interactive was removed", "command alone", "Delete interactive from your values file", "--set interactive=null"}},
		{"interactive=false, removed too", helmtest.Options{Set: []string{"command=hostname", "interactive=false"}},
			[]string{"interactive=false: the value interactive was removed"}},
		{"tasks without command", helmtest.Options{Set: []string{"tasks=4"}}, []string{"tasks=4 needs a command"}},
		{"api with a command", helmtest.Options{Set: []string{"api.enabled=true", "command=hostname"}},
			[]string{`api.enabled=true with command="hostname"`, "persistent", "Unset command"}},
		{"api on the brokers' port", helmtest.Options{Set: []string{"api.enabled=true", "api.port=8050"}},
			[]string{"api.port=8050 is flux.port", "another port"}},
		{"api on the readiness port", helmtest.Options{Set: []string{"api.enabled=true", "api.port=8051"}},
			[]string{"api.port=8051 is flux.readinessPort", "another port"}},
		{"api port out of range", helmtest.Options{Set: []string{"api.port=0"}}, []string{"/api/port", "minimum"}},
		{"api TLS Secret name", helmtest.Options{Set: []string{"api.enabled=true", "api.tls.secretName=My_TLS"}},
			[]string{`api.tls.secretName="My_TLS" is not a valid Secret name`}},
		{"api Secret without auth", helmtest.Options{Set: []string{"api.enabled=true", "api.existingSecret=mine", "api.requireAuth=false"}},
			[]string{`api.existingSecret="mine" with api.requireAuth=false`}},
		{"api without auth, unacknowledged", helmtest.Options{Set: []string{"api.enabled=true", "api.requireAuth=false"}},
			[]string{"api.requireAuth=false serves the API without credentials", "api.acknowledgeNoAuth=true"}},
		{"default service account", helmtest.Options{Set: []string{"serviceAccountName=default"}},
			[]string{"serviceAccountName=default", "an account for this release alone"}},
		{"api token lifetime past 24h", helmtest.Options{Set: []string{"api.enabled=true", "api.tokenLifetime=25h"}},
			[]string{"api.tokenLifetime=25h is longer than 24h", "give at most 24h"}},
		{"api token lifetime in days", helmtest.Options{Set: []string{"api.enabled=true", "api.tokenLifetime=2d"}},
			[]string{"/api/tokenLifetime", "2d"}},
		{"api unknown key", helmtest.Options{Set: []string{"api.tokn=x"}}, []string{"/api", "additional properties 'tokn' not allowed"}},
		{"old kubernetes", helmtest.Options{KubeVersion: "v1.25.3"}, []string{"kubeVersion: >=1.27.0-0", "v1.25.3"}},
		{"view image without image volumes", helmtest.Options{Set: []string{"flux.view.mode=image"}, KubeVersion: "v1.32.5"},
			[]string{"flux.view.mode=image", "needs Kubernetes >= 1.33", "runs v1.32.5", "set flux.view.mode=copy"}},
		{"unknown view mode", helmtest.Options{Set: []string{"flux.view.mode=link"}}, []string{"/flux/view/mode", "copy", "image"}},
		{"unknown scheduler", helmtest.Options{Set: []string{"flux.scheduler=slurm"}}, []string{"/flux/scheduler", "fluxion", "simple"}},
		{"unknown queue policy", helmtest.Options{Set: []string{"flux.queuePolicy=lifo"}}, []string{"/flux/queuePolicy", "fcfs", "easy", "conservative", "hybrid"}},
		{"queue policy without Fluxion", helmtest.Options{Set: []string{"flux.scheduler=simple", "flux.queuePolicy=easy"}},
			[]string{"flux.queuePolicy=easy", "flux.scheduler=simple", "set flux.scheduler=fluxion"}},
		{"minimal service with a tree", helmtest.Options{Set: []string{"flux.minimalService=true", "flux.topology=kary:8"}},
			[]string{"flux.minimalService=true", `flux.topology="kary:8"`, `set flux.topology="" (flat)`}},
		{"wrap with spaces", helmtest.Options{Set: []string{"flux.wrap=strace -f"}}, []string{"/flux/wrap", "strace -f"}},
		{"curve cert not a certificate", helmtest.Options{Set: []string{"curve.cert=secret-key-123"}},
			[]string{"curve.cert is not a CURVE certificate", "public-key", "--set-file curve.cert=curve.cert"}},
		{"curve cert and existing secret", helmtest.Options{Set: []string{"curve.cert=x", "curve.existingSecret=mine"}},
			[]string{`curve.cert and curve.existingSecret="mine" are both set`}},
		{"services name not a DNS label", helmtest.Options{Set: []string{"services[0].name=Web", "services[0].image=nginx"}},
			[]string{`services[0].name="Web" is not a DNS label`}},
		{"services names twice", helmtest.Options{Set: []string{"services[0].name=web", "services[0].image=a", "services[1].name=web", "services[1].image=b"}},
			[]string{`services[1].name="web" is also the name of services[0]`}},
		{"curve cert in a configmap", helmtest.Options{Set: []string{"curve.cert=x", "curve.storage=ConfigMap"}},
			[]string{"curve.cert is stored in a Secret, but curve.storage=ConfigMap"}},
		{"shared memory not a quantity", helmtest.Options{Set: []string{"sharedMemory=1 GB"}},
			[]string{`sharedMemory="1 GB" is not a Kubernetes quantity`, "1Gi"}},
		{"negative GPUs", helmtest.Options{Set: []string{"flux.gpusPerBroker=-1"}}, []string{"/flux/gpusPerBroker", "minimum"}},
		{"priority class not a DNS subdomain", helmtest.Options{Set: []string{"priorityClassName=High_Priority"}},
			[]string{`priorityClassName="High_Priority" is not a DNS subdomain`, "kubectl get priorityclasses"}},
		{"scheduler name not a DNS subdomain", helmtest.Options{Set: []string{"schedulerName=Fluence"}},
			[]string{`schedulerName="Fluence" is not a DNS subdomain`, "schedulerName"}},
		{"runtime class not a DNS subdomain", helmtest.Options{Set: []string{"runtimeClassName=kata."}},
			[]string{`runtimeClassName="kata." is not a DNS subdomain`, "kubectl get runtimeclasses"}},
		{"unknown DNS policy", helmtest.Options{Set: []string{"dnsPolicy=ClusterLast"}}, []string{"/dnsPolicy", "ClusterFirst", "None"}},
		{"DNS policy of the node", helmtest.Options{Set: []string{"dnsPolicy=Default"}},
			[]string{"dnsPolicy=Default gives the pods the node's resolver", "flux-sample-0.flux-sample.default.svc.cluster.local", "leave dnsPolicy empty (ClusterFirst)", "dnsConfig"}},
		{"DNS policy None without nameservers", helmtest.Options{Set: []string{"dnsPolicy=None", "dnsConfig.searches[0]=example.org"}},
			[]string{"dnsPolicy=None", "dnsConfig.nameservers is empty", "kube-dns"}},
		{"unknown DNS config key", helmtest.Options{Set: []string{"dnsConfig.servers[0]=10.0.0.1"}}, []string{"/dnsConfig", "servers"}},
		{"host IPC and a /dev/shm volume", helmtest.Options{Set: []string{"hostIPC=true", "sharedMemory=1Gi"}},
			[]string{"hostIPC=true gives the pods the node's /dev/shm", `sharedMemory="1Gi"`, "set one of them"}},
		{"sidecar named like the broker", helmtest.Options{Set: []string{"sidecars[0].name=flux", "sidecars[0].image=x"}},
			[]string{`sidecars[0].name="flux" is the name of one of the chart's own containers`, "another name"}},
		{"init container named like the keys step", helmtest.Options{Set: []string{"initContainers[0].name=keys", "initContainers[0].image=x"}},
			[]string{`initContainers[0].name="keys" is the name of one of the chart's own containers`}},
		{"view copy name taken even without the view", helmtest.Options{Set: []string{"flux.view.enabled=false", "sidecars[0].name=flux-view", "sidecars[0].image=x"}},
			[]string{`sidecars[0].name="flux-view" is the name of one of the chart's own containers`}},
		{"two extra containers of one name", helmtest.Options{Set: []string{"initContainers[0].name=prep", "initContainers[0].image=x", "sidecars[0].name=prep", "sidecars[0].image=y"}},
			[]string{`sidecars[0].name="prep" is also the name of initContainers[0]`, "rename one"}},
		{"extra container name not a DNS label", helmtest.Options{Set: []string{"sidecars[0].name=My_Sidecar", "sidecars[0].image=x"}},
			[]string{`sidecars[0].name="My_Sidecar" is not a DNS label`}},
		{"extra container without image", helmtest.Options{Set: []string{"initContainers[0].name=prep"}}, []string{"/initContainers/0", "image"}},
		{"sidecar that does not restart", helmtest.Options{Set: []string{"sidecars[0].name=once", "sidecars[0].image=x", "sidecars[0].restartPolicy=Never"}},
			[]string{"sidecars[0].restartPolicy=Never", "belongs in initContainers"}},
		{"sidecars before Kubernetes has them", helmtest.Options{Set: []string{"sidecars[0].name=metrics", "sidecars[0].image=x"}, KubeVersion: "v1.28.9"},
			[]string{"sidecars[0] (metrics) is a Kubernetes sidecar", "needs Kubernetes >= 1.29", "runs v1.28.9"}},
		{"sidecar among the init containers before Kubernetes has them", helmtest.Options{Set: []string{"initContainers[0].name=proxy", "initContainers[0].image=x", "initContainers[0].restartPolicy=Always"}, KubeVersion: "v1.28.9"},
			[]string{"initContainers[0] (proxy) is a Kubernetes sidecar", "needs Kubernetes >= 1.29"}},
		{"spread constraint missing its key", helmtest.Options{Set: []string{"topologySpreadConstraints[0].maxSkew=1"}}, []string{"/topologySpreadConstraints/0", "topologyKey"}},
		{"clean-up longer than the default grace period", helmtest.Options{Set: []string{"flux.cleanupTimeout=25s"}},
			[]string{"terminationGracePeriodSeconds=30 (Kubernetes' default: the value is not set) is too short for flux.cleanupTimeout=25s",
				"Set terminationGracePeriodSeconds to at least 35, or flux.cleanupTimeout to at most 20s"}},
		{"grace period shorter than the clean-up", helmtest.Options{Set: []string{"terminationGracePeriodSeconds=60", "flux.cleanupTimeout=1m"}},
			[]string{"terminationGracePeriodSeconds=60 is too short for flux.cleanupTimeout=1m", "at least 70", "at most 50s"}},
		{"grace period without room to stop", helmtest.Options{Set: []string{"terminationGracePeriodSeconds=5"}},
			[]string{"terminationGracePeriodSeconds=5 is too short for flux.cleanupTimeout=0s", "10 s more", "at least 10"}},
		{"negative grace period", helmtest.Options{Set: []string{"terminationGracePeriodSeconds=-1"}}, []string{"/terminationGracePeriodSeconds", "minimum"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmtest.Template(tc.opts)
			require.Error(t, err)
			for _, want := range tc.wantErr {
				assert.Contains(t, err.Error(), want)
			}
			messages.WriteString("## " + tc.name + "\n" + err.Error() + "\n\n")
		})
	}
	// Every message whole, as a user reads it: a change of wording shows in review.
	checkGolden(t, filepath.Join("testdata", "rejected.golden.txt"), messages.String())
}

// liveRelease renders the chart at install and turns its Job and key object into the objects
// a later `helm upgrade` finds in the cluster.
func liveRelease(t *testing.T, set ...string) (*batchv1.Job, *corev1.Secret) {
	t.Helper()
	objs := render(t, helmtest.Options{Set: set})
	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	job.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
	// What the API server adds to a live Job's pod template must not confuse the checks.
	job.Spec.Template.Labels["batch.kubernetes.io/job-name"] = "flux-sample"
	cert := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "flux-sample-curve", Namespace: "default"},
		Data:       map[string][]byte{"curve.cert": []byte("# a certificate\n")},
	}
	return job, cert
}

func TestUpgradeChecksAgainstTheLiveJob(t *testing.T) {
	base := []string{"size=6", "command=hostname"}
	job, cert := liveRelease(t, base...)

	for _, tc := range []struct {
		name    string
		set     []string
		live    []any
		wantErr []string
	}{
		{"resize up to maxSize", []string{"size=16"}, nil, nil},
		{"resize down to 1", []string{"size=1"}, nil, nil},
		{"resize past the live maxSize", []string{"size=17"}, nil,
			[]string{"size=17 is larger than maxSize=16", "uninstall and install again"}},
		{"maxSize change", []string{"maxSize=32"}, nil,
			[]string{"maxSize=32 differs from the running MiniCluster's maxSize=16", "only size can change", "helm uninstall flux-sample -n default"}},
		{"image change", []string{"image=rockylinux:9"}, nil,
			[]string{`image="rockylinux:9" differs from the running MiniCluster's image "ubuntu:24.04"`, "only size can change", "helm uninstall flux-sample"}},
		{"command change", []string{"command=date"}, nil,
			[]string{"changes the Job's pod template", "only size can change"}},
		{"env change", []string{"env[0].name=A", "env[0].value=b"}, nil, []string{"changes the Job's pod template"}},
		{"schedulerName change", []string{"schedulerName=fluence"}, nil, []string{"changes the Job's pod template", "only size can change"}},
		{"priorityClassName change", []string{"priorityClassName=high"}, nil, []string{"changes the Job's pod template"}},
		{"runtimeClassName change", []string{"runtimeClassName=kata"}, nil, []string{"changes the Job's pod template"}},
		{"dnsPolicy change", []string{"dnsPolicy=ClusterFirst"}, nil, []string{"changes the Job's pod template"}},
		{"dnsConfig change", []string{"dnsConfig.searches[0]=example.org"}, nil, []string{"changes the Job's pod template"}},
		{"hostIPC change", []string{"hostIPC=true"}, nil, []string{"changes the Job's pod template"}},
		{"hostPID change", []string{"hostPID=true"}, nil, []string{"changes the Job's pod template"}},
		{"initContainers change", []string{"initContainers[0].name=prep", "initContainers[0].image=busybox"}, nil, []string{"changes the Job's pod template"}},
		{"sidecars change", []string{"sidecars[0].name=metrics", "sidecars[0].image=busybox"}, nil, []string{"changes the Job's pod template"}},
		{"topologySpreadConstraints change", []string{"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=zone",
			"topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule"}, nil, []string{"changes the Job's pod template"}},
		{"ephemeral-storage change", []string{"resources.limits.ephemeral-storage=1Gi"}, nil, []string{"changes the Job's pod template"}},
		{"terminationGracePeriodSeconds change", []string{"terminationGracePeriodSeconds=60"}, nil, []string{"changes the Job's pod template"}},
		{"certificate gone", nil, []any{"no-cert"},
			[]string{"Secret default/flux-sample-curve with the CURVE certificate is missing", "a new key would split the cluster", "helm uninstall flux-sample"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := []any{job, cert}
			if len(tc.live) > 0 {
				live = []any{job}
			}
			_, err := helmtest.TemplateWithLive(helmtest.Options{Set: append(append([]string{}, base...), tc.set...)}, toObjects(t, live)...)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tc.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// The pod settings are fixed at install like the rest, and a resize still applies with them.
func TestResizeWithPodSettings(t *testing.T) {
	settings := []string{"command=hostname", "schedulerName=fluence", "priorityClassName=high", "runtimeClassName=kata",
		"dnsConfig.options[0].name=edns0", "hostIPC=true", "hostPID=true",
		"initContainers[0].name=prep", "initContainers[0].image=busybox", "sidecars[0].name=metrics", "sidecars[0].image=busybox",
		"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=zone", "topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
		"resources.limits.ephemeral-storage=1Gi", "terminationGracePeriodSeconds=60", "flux.cleanupTimeout=20s"}
	job, cert := liveRelease(t, append([]string{"size=6"}, settings...)...)
	_, err := helmtest.TemplateWithLive(helmtest.Options{Set: append([]string{"size=12"}, settings...)}, toObjects(t, []any{job, cert})...)
	require.NoError(t, err)
	_, err = helmtest.TemplateWithLive(helmtest.Options{Set: append(append([]string{"size=12"}, settings...), "terminationGracePeriodSeconds=90")}, toObjects(t, []any{job, cert})...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "changes the Job's pod template")
}

func TestAutomaticMaxSizeIsKeptOnUpgrade(t *testing.T) {
	job, cert := liveRelease(t, "size=20") // automatic maxSize = 20 at install
	out, err := helmtest.TemplateWithLive(helmtest.Options{Set: []string{"size=3"}}, toObjects(t, []any{job, cert})...)
	require.NoError(t, err)
	cm := out["minicluster/templates/broker-configmap.yaml"]
	var parsed corev1.ConfigMap
	require.NoError(t, yaml.Unmarshal([]byte(cm), &parsed))
	assert.Equal(t, "flux-sample-[0-19]", parsed.Data["hosts"], "maxSize must stay what the running brokers have")
	assert.Equal(t, "3", parsed.Data["size"])
}

func toObjects(t *testing.T, in []any) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for _, o := range in {
		obj, ok := o.(runtime.Object)
		require.Truef(t, ok, "%T is not a runtime.Object", o)
		out = append(out, obj)
	}
	return out
}

// TestTopologyFormsAgreeWithGo: the schema's flux.topology pattern accepts exactly what
// internal/tbon (flux-core's forms, which the brokers' init step uses) accepts.
func TestTopologyFormsAgreeWithGo(t *testing.T) {
	for _, topo := range []string{"", "kary:0", "kary:2", "kary:32", "kary", "kary:", "kary:-1", "kary:02", "kary:x",
		"mincrit", "mincrit:3", "mincrit:", "binomial", "binomial:2", "custom", "custom:1", "star", "Kary:2"} {
		_, err := helmtest.Template(helmtest.Options{Set: []string{"flux.topology=" + topo}})
		goErr := tbon.Validate(topo)
		if (err == nil) != (goErr == nil) {
			t.Errorf("flux.topology=%q: chart error %v, internal/tbon error %v: they must agree", topo, err, goErr)
		}
	}
}

// TestValidateLinesAreShort: the fail messages of _validate*.tpl are written in pieces of
// (print "..." "...") so that a reviewer reads them without scrolling; the golden above holds
// the messages themselves.
func TestValidateLinesAreShort(t *testing.T) {
	const most = 200
	files, err := filepath.Glob(filepath.Join(helmtest.ChartDir(), "templates", "_validate*.tpl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, line := range strings.Split(string(raw), "\n") {
			if len(line) > most {
				t.Errorf("%s:%d is %d characters, more than %d: wrap its message in (print ...) pieces", filepath.Base(f), i+1, len(line), most)
			}
		}
	}
}
