package render

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// renderedPod is a pod the render makes: a Job's or Deployment's template, or a Pod.
type renderedPod struct {
	name string // Kind/name of the object
	meta *metav1.ObjectMeta
	spec *corev1.PodSpec
}

// podsOf are every pod the render makes (Jobs' and Deployments' templates and pods, hooks and
// helm test included).
func podsOf(t *testing.T, rendered string) []renderedPod {
	t.Helper()
	objs, err := helmtest.DecodeAll(rendered)
	require.NoError(t, err)
	var pods []renderedPod
	for _, o := range objs {
		name := o.Kind + "/" + o.Name
		switch v := o.Object.(type) {
		case *batchv1.Job:
			pods = append(pods, renderedPod{name, &v.Spec.Template.ObjectMeta, &v.Spec.Template.Spec})
		case *appsv1.Deployment:
			pods = append(pods, renderedPod{name, &v.Spec.Template.ObjectMeta, &v.Spec.Template.Spec})
		case *corev1.Pod:
			pods = append(pods, renderedPod{name, &v.ObjectMeta, &v.Spec})
		}
	}
	require.GreaterOrEqual(t, len(pods), 3, "the render has the broker Job, the keygen Job and the test pod")
	return pods
}

// violations are the "restricted" Pod Security Standard's objections to every pod the render
// makes, by the API server's own PodSecurity checks (k8s.io/pod-security-admission).
func violations(t *testing.T, rendered string) map[string]string {
	t.Helper()
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range podsOf(t, rendered) {
		res := policy.AggregateCheckResults(eval.EvaluatePod(psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}, p.meta, p.spec))
		if !res.Allowed {
			out[p.name] = res.ForbiddenReason() + ": " + res.ForbiddenDetail()
		}
	}
	return out
}

// The chart's own pods (the keygen Job, the helm test pod) are restricted always; with
// values/restricted.yaml every pod is, whatever other values file it is combined with.
func TestRestrictedPods(t *testing.T) {
	out, err := helmtest.Template(helmtest.Options{})
	require.NoError(t, err)
	v := violations(t, out)
	assert.Contains(t, v, "Job/flux-sample", "the defaults run Flux as the image's user (root): restricted refuses the brokers")
	for name, why := range v {
		if name != "Job/flux-sample" {
			t.Errorf("the chart's own %s breaks restricted with the defaults: %s", name, why)
		}
	}

	files, err := helmtest.ValuesFiles()
	require.NoError(t, err)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := helmtest.Template(helmtest.Options{ValuesFiles: []string{"values/restricted.yaml", f}})
			require.NoError(t, err)
			assert.Empty(t, violations(t, out))
		})
	}
	for _, set := range []string{"flux.view.mode=image", "flux.view.enabled=false,image=flux", "munge.enabled=true",
		"fluxContainers[0].name=q,fluxContainers[0].image=app,fluxContainers[0].command=flux jobs"} {
		out, err := helmtest.Template(helmtest.Options{ValuesFiles: []string{"values/restricted.yaml"}, Set: []string{set}})
		require.NoError(t, err, set)
		assert.Empty(t, violations(t, out), set)
	}
}

// With podSecurityStandard=restricted a value restricted forbids fails the render (nothing is
// created), naming the value; the same values without it render, and the API server refuses them.
func TestRestrictedRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{"hostIPC", []string{"hostIPC=true"}, []string{"hostIPC=true is forbidden", "set hostIPC=false"}},
		{"hostPID", []string{"hostPID=true"}, []string{"hostPID=true is forbidden"}},
		{"root", []string{"podSecurityContext.runAsUser=0"}, []string{"securityContext (the flux and flux-view containers): runAsUser 0 (root) is forbidden"}},
		{"no runAsNonRoot", []string{"podSecurityContext.runAsNonRoot=false", "securityContext.runAsNonRoot=null"}, []string{"runAsNonRoot must be true"}},
		{"privileged", []string{"securityContext.privileged=true"}, []string{"privileged=true is forbidden"}},
		{"escalation", []string{"securityContext.allowPrivilegeEscalation=true"}, []string{"allowPrivilegeEscalation must be false"}},
		{"capability", []string{"securityContext.capabilities.add[0]=SYS_PTRACE"}, []string{"capabilities.add SYS_PTRACE is forbidden", "only NET_BIND_SERVICE"}},
		{"seccomp", []string{"securityContext.seccompProfile.type=Unconfined"}, []string{"seccompProfile.type must be RuntimeDefault or Localhost"}},
		{"hostPath", []string{"volumes[0].name=data", "volumes[0].hostPath.path=/data"}, []string{"volumes[0] (data) is a hostPath volume, which is forbidden", "PersistentVolumeClaim"}},
		{"init container", []string{"initContainers[0].name=prep", "initContainers[0].image=busybox"},
			[]string{"initContainers[0].securityContext (container prep): allowPrivilegeEscalation must be false"}},
		{"flux container", []string{"fluxContainers[0].name=q", "fluxContainers[0].image=app", "fluxContainers[0].command=x", "fluxContainers[0].securityContext.runAsUser=0"},
			[]string{"fluxContainers[0].securityContext (container q): runAsUser 0 (root) is forbidden"}},
		{"view copy", []string{"flux.view.mode=copy", "flux.view.securityContext.runAsUser=0"},
			[]string{"flux.view.securityContext (the flux-view container): runAsUser 0 (root) is forbidden"}},
		{"service", []string{"services[0].name=web", "services[0].image=nginx"},
			[]string{"services[0].securityContext (container web): allowPrivilegeEscalation must be false"}},
		{"sidecar", []string{"sidecars[0].name=log", "sidecars[0].image=busybox", "sidecars[0].securityContext.allowPrivilegeEscalation=false"},
			[]string{"sidecars[0].securityContext (container log): capabilities.drop must list ALL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmtest.Template(helmtest.Options{ValuesFiles: []string{"values/restricted.yaml"}, Set: tc.set})
			require.Error(t, err)
			for _, w := range append(tc.want, "podSecurityStandard=restricted") {
				assert.Contains(t, err.Error(), w)
			}
			// Without the check the chart renders them, and PodSecurity would refuse the pods.
			out, err := helmtest.Template(helmtest.Options{ValuesFiles: []string{"values/restricted.yaml"}, Set: append(tc.set, "podSecurityStandard=")})
			require.NoError(t, err)
			assert.NotEmpty(t, violations(t, out), "restricted allows %s: the chart need not refuse it", strings.Join(tc.set, ","))
		})
	}
}
