package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// TestNoAuthNeedsAcknowledgement: api.requireAuth=false alone is refused, naming the value that
// confirms it; with it, NOTES warns in capitals.
func TestNoAuthNeedsAcknowledgement(t *testing.T) {
	_, err := helmtest.Template(helmtest.Options{Set: []string{"api.enabled=true", "api.requireAuth=false"}})
	require.Error(t, err)
	for _, want := range []string{"api.requireAuth=false serves the API without credentials", "port 5000", "api.acknowledgeNoAuth=true", "Set api.requireAuth=true"} {
		assert.Contains(t, err.Error(), want)
	}
	notes := func(set ...string) string {
		out, err := helmtest.TemplateWithLive(helmtest.Options{Set: set})
		require.NoError(t, err)
		return out["minicluster/templates/NOTES.txt"]
	}
	off := notes("api.enabled=true", "api.requireAuth=false", "api.acknowledgeNoAuth=true")
	assert.Contains(t, off, "WARNING: the API runs WITHOUT AUTHENTICATION")
	assert.Contains(t, off, "runs any command as the instance's user")
	assert.NotContains(t, notes("api.enabled=true"), "WARNING")
	// The API off: nothing to acknowledge.
	_, err = helmtest.Template(helmtest.Options{Set: []string{"api.requireAuth=false"}})
	assert.NoError(t, err)
}

// TestNoTokenInTheBrokersContainers: whatever the account, the pod mounts no token (the keys
// container has its own projected one); only automountServiceAccountToken=true asks for it.
func TestNoTokenInTheBrokersContainers(t *testing.T) {
	for _, set := range [][]string{nil, {"serviceAccountName=mine"}, {"serviceAccountName=mine", "automountServiceAccountToken=false"}} {
		pod := brokerPod(t, helmtest.Options{Set: set})
		assert.Equal(t, ptr.To(false), pod.AutomountServiceAccountToken, "%v", set)
		for _, c := range pod.Containers {
			for _, m := range c.VolumeMounts {
				if strings.HasPrefix(m.MountPath, "/var/run/secrets/kubernetes.io") {
					assert.Equal(t, "keys", c.Name, "a token mounted into container %s", c.Name)
				}
			}
		}
	}
	assert.Equal(t, ptr.To(true), brokerPod(t, helmtest.Options{Set: []string{"serviceAccountName=mine", "automountServiceAccountToken=true"}}).AutomountServiceAccountToken)
	test := get[*corev1.Pod](t, render(t, helmtest.Options{}), "Pod", "flux-sample-test-wiring")
	assert.Equal(t, ptr.To(false), test.Spec.AutomountServiceAccountToken, "the helm test pod needs no token")
}

// TestServiceAccountShared: `default` is refused at once; an account another MiniCluster's key
// Role is bound to (found with lookup) is refused naming that release; this release's own
// binding (an upgrade) and another chart's binding are not.
func TestServiceAccountShared(t *testing.T) {
	_, err := helmtest.Template(helmtest.Options{Set: []string{"serviceAccountName=default"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "serviceAccountName=default")
	assert.Contains(t, err.Error(), "kubectl create serviceaccount flux-sample-flux")

	binding := func(release, chart, account string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: release + "-broker", Namespace: "default",
				Labels:      map[string]string{"app.kubernetes.io/component": "broker", "helm.sh/chart": chart},
				Annotations: map[string]string{"meta.helm.sh/release-name": release}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: release + "-broker"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: "default"}},
		}
	}
	opts := helmtest.Options{Set: []string{"serviceAccountName=shared"}}
	_, err = helmtest.TemplateWithLive(opts, binding("other", "minicluster-0.3.0", "shared"))
	require.Error(t, err)
	for _, want := range []string{"serviceAccountName=shared is already the account of the MiniCluster other", "RoleBinding other-broker", "an account of its own"} {
		assert.Contains(t, err.Error(), want)
	}
	for name, live := range map[string]*rbacv1.RoleBinding{
		"this release":  binding("flux-sample", "minicluster-0.3.0", "shared"),
		"another chart": binding("other", "something-1.0.0", "shared"),
		"other account": binding("other", "minicluster-0.3.0", "theirs"),
	} {
		_, err := helmtest.TemplateWithLive(opts, live)
		assert.NoError(t, err, name)
	}
}

// TestBrokerSecurityDefaults: no privilege escalation and the runtime's seccomp profile unless
// a value says otherwise; privileged or SYS_ADMIN (which Kubernetes refuses beside
// allowPrivilegeEscalation=false) keep escalation; a pod seccomp profile is left to apply.
func TestBrokerSecurityDefaults(t *testing.T) {
	sc := func(set ...string) *corev1.SecurityContext {
		return brokerPod(t, helmtest.Options{Set: set}).Containers[0].SecurityContext
	}
	runtimeDefault := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	def := sc()
	require.NotNil(t, def)
	assert.Equal(t, ptr.To(false), def.AllowPrivilegeEscalation)
	assert.Equal(t, runtimeDefault, def.SeccompProfile)

	mine := sc("securityContext.runAsUser=1000")
	assert.Equal(t, ptr.To(int64(1000)), mine.RunAsUser)
	assert.Equal(t, ptr.To(false), mine.AllowPrivilegeEscalation)

	assert.Equal(t, ptr.To(true), sc("securityContext.allowPrivilegeEscalation=true").AllowPrivilegeEscalation)
	assert.Equal(t, corev1.SeccompProfileTypeUnconfined, sc("securityContext.seccompProfile.type=Unconfined").SeccompProfile.Type)
	priv := sc("securityContext.privileged=true")
	assert.Nil(t, priv.AllowPrivilegeEscalation)
	assert.Nil(t, priv.SeccompProfile)
	assert.Nil(t, sc("securityContext.capabilities.add[0]=SYS_ADMIN").AllowPrivilegeEscalation)
	assert.Nil(t, sc("podSecurityContext.seccompProfile.type=Unconfined").SeccompProfile)

	pod := brokerPod(t, helmtest.Options{Set: []string{"fluxContainers[0].name=q", "fluxContainers[0].image=app", "fluxContainers[0].command=x"}})
	assert.Equal(t, ptr.To(false), pod.Containers[len(pod.Containers)-1].SecurityContext.AllowPrivilegeEscalation, "a fluxContainer")
}

// TestNetworkPolicy: on by default, the broker pods admit the release's own pods on every port,
// and the API's port from networkPolicy.apiFrom alone (never from everyone); off, none.
func TestNetworkPolicy(t *testing.T) {
	np := get[*networkingv1.NetworkPolicy](t, render(t, helmtest.Options{Set: []string{"api.enabled=true"}}), "NetworkPolicy", "flux-sample")
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "minicluster", "app.kubernetes.io/instance": "flux-sample", "app.kubernetes.io/component": "broker"}, np.Spec.PodSelector.MatchLabels)
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	require.Len(t, np.Spec.Ingress, 1, "the API admitted from anyone")
	release := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "minicluster", "app.kubernetes.io/instance": "flux-sample"}}}
	assert.Equal(t, []networkingv1.NetworkPolicyPeer{release}, np.Spec.Ingress[0].From)
	assert.Empty(t, np.Spec.Ingress[0].Ports, "the release's pods reach every port (MPI)")

	np = get[*networkingv1.NetworkPolicy](t, render(t, helmtest.Options{Set: []string{"api.enabled=true",
		"networkPolicy.apiFrom[0].namespaceSelector.matchLabels.team=ci", "networkPolicy.extraIngress[0].ports[0].port=8080"}}), "NetworkPolicy", "flux-sample")
	require.Len(t, np.Spec.Ingress, 3)
	api := np.Spec.Ingress[1]
	assert.Equal(t, []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(5000))}}, api.Ports)
	assert.Equal(t, map[string]string{"team": "ci"}, api.From[0].NamespaceSelector.MatchLabels)
	assert.Equal(t, intstr.FromInt32(8080), *np.Spec.Ingress[2].Ports[0].Port)

	_, found := helmtest.Find(render(t, helmtest.Options{Set: []string{"networkPolicy.enabled=false"}}), "NetworkPolicy", "flux-sample")
	assert.False(t, found)
}
