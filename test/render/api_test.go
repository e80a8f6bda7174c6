package render

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// api.enabled: a ClusterIP Service <release>-api on the lead alone, a Secret the keygen Job fills
// (rendered without data, so that the credentials never enter Helm's release record), the
// lead's keys container told to hand the server, its credentials and TLS key over, and a private
// in-memory volume for them in the broker's container. Off (the default): none of it.
func TestAPIObjects(t *testing.T) {
	objs := render(t, helmtest.Options{Set: []string{"api.enabled=true", "api.port=5050"}})
	svc := get[*corev1.Service](t, objs, "Service", "flux-sample-api")
	assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
	assert.Equal(t, "0", svc.Spec.Selector["batch.kubernetes.io/job-completion-index"], "the Service must select the lead alone")
	assert.Equal(t, "broker", svc.Spec.Selector["app.kubernetes.io/component"])
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, int32(5050), svc.Spec.Ports[0].Port)
	assert.Equal(t, "api", svc.Spec.Ports[0].TargetPort.String())

	secret := get[*corev1.Secret](t, objs, "Secret", "flux-sample-api")
	assert.Empty(t, secret.Data, "credentials rendered into the release record")
	assert.Empty(t, secret.StringData)
	keygenJob := get[*batchv1.Job](t, objs, "Job", "flux-sample-keygen")
	assert.Contains(t, keygenJob.Spec.Template.Spec.Containers[0].Args, "--api-name=flux-sample-api")
	keygenRole := get[*rbacv1.Role](t, objs, "Role", "flux-sample-keygen")
	assert.True(t, grants(keygenRole, "secrets", "flux-sample-api", "update"), "the keygen Job may fill the API Secret: %v", keygenRole.Rules)

	pod := get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	flux := pod.Containers[0]
	assert.Equal(t, "5050", envOf(flux)["MINICLUSTER_API_PORT"])
	assert.Equal(t, "true", envOf(flux)["MINICLUSTER_API_AUTH"])
	assert.Equal(t, "false", envOf(flux)["MINICLUSTER_API_TLS"])
	assert.Equal(t, "8h", envOf(flux)["MINICLUSTER_API_TOKEN_LIFETIME"])
	for _, ok := range []string{"24h", "1440m", "30s"} {
		_, err := helmtest.Template(helmtest.Options{Set: []string{"api.enabled=true", "api.tokenLifetime=" + ok}})
		assert.NoError(t, err, ok)
	}
	assert.Contains(t, flux.Ports, corev1.ContainerPort{Name: "api", ContainerPort: 5050, Protocol: corev1.ProtocolTCP})
	assert.Contains(t, flux.VolumeMounts, corev1.VolumeMount{Name: "api-installed", MountPath: "/minicluster/api"})
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "api-installed" })
	require.GreaterOrEqual(t, i, 0)
	require.NotNil(t, pod.Volumes[i].EmptyDir)
	assert.Equal(t, corev1.StorageMediumMemory, pod.Volumes[i].EmptyDir.Medium)
	for _, v := range pod.Volumes {
		assert.Nil(t, v.Secret, "a Secret mounted into the broker pod: %s", v.Name)
	}
	keys := pod.Containers[slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "keys" })]
	assert.Contains(t, keys.Args, "--api-server=/minicluster/keys/minicluster-api")
	assert.Contains(t, keys.Args, "--api-name=flux-sample-api")
	brokerRole := get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
	assert.True(t, grants(brokerRole, "secrets", "flux-sample-api", "watch"), "the keys container reads the API Secret: %v", brokerRole.Rules)

	// The user's Secret and TLS: no Secret made, the keys container reads theirs.
	objs = render(t, helmtest.Options{Set: []string{"api.enabled=true", "api.existingSecret=mine", "api.tls.secretName=api-tls"}})
	_, made := helmtest.Find(objs, "Secret", "flux-sample-api")
	assert.False(t, made, "a Secret made beside api.existingSecret")
	_, made = helmtest.Find(objs, "Job", "flux-sample-keygen")
	assert.True(t, made, "the keygen Job still makes the CURVE key")
	assert.NotContains(t, get[*batchv1.Job](t, objs, "Job", "flux-sample-keygen").Spec.Template.Spec.Containers[0].Args, "--api-name=flux-sample-api")
	pod = get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	keys = pod.Containers[slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "keys" })]
	assert.Contains(t, keys.Args, "--api-name=mine")
	assert.Contains(t, keys.Args, "--api-tls-name=api-tls")
	assert.Equal(t, "true", envOf(pod.Containers[0])["MINICLUSTER_API_TLS"])
	brokerRole = get[*rbacv1.Role](t, objs, "Role", "flux-sample-broker")
	assert.True(t, grants(brokerRole, "secrets", "mine", "get"))
	assert.True(t, grants(brokerRole, "secrets", "api-tls", "get"))
	assert.False(t, grants(get[*rbacv1.Role](t, objs, "Role", "flux-sample-keygen"), "secrets", "mine", "update"), "the keygen Job may write the user's Secret")
	assert.Equal(t, "https", get[*corev1.Service](t, objs, "Service", "flux-sample-api").Spec.Ports[0].Name)

	// No auth (acknowledged): no credentials at all.
	objs = render(t, helmtest.Options{Set: []string{"api.enabled=true", "api.requireAuth=false", "api.acknowledgeNoAuth=true"}})
	_, made = helmtest.Find(objs, "Secret", "flux-sample-api")
	assert.False(t, made)
	pod = get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	assert.Equal(t, "false", envOf(pod.Containers[0])["MINICLUSTER_API_AUTH"])

	// Off: nothing.
	objs = render(t, helmtest.Options{})
	for _, kind := range []string{"Service", "Secret"} {
		_, found := helmtest.Find(objs, kind, "flux-sample-api")
		assert.Falsef(t, found, "%s flux-sample-api rendered with api off", kind)
	}
	pod = get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	assert.NotContains(t, envOf(pod.Containers[0]), "MINICLUSTER_API_PORT")
}

// TestAPISecretKeptOnUpgrade: the credentials of a Secret an earlier chart rendered itself are
// rendered again on upgrade (dropping them would delete them from the live Secret); those the
// keygen Job filled (its annotation) are not rendered at all.
func TestAPISecretKeptOnUpgrade(t *testing.T) {
	live := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "flux-sample-api", Namespace: "default"},
		Data:       map[string][]byte{"user": []byte("flux"), "token": []byte("the-live-token"), "secret-key": []byte("the-live-key")},
	}
	out, err := helmtest.TemplateWithLive(helmtest.Options{Set: []string{"api.enabled=true"}}, live)
	require.NoError(t, err)
	var got corev1.Secret
	require.NoError(t, yaml.Unmarshal([]byte(out["minicluster/templates/api-secret.yaml"]), &got))
	assert.Equal(t, live.Data, got.Data)

	live.Annotations = map[string]string{"minicluster.dev/filled-by": "flux-keygen"}
	out, err = helmtest.TemplateWithLive(helmtest.Options{Set: []string{"api.enabled=true"}}, live)
	require.NoError(t, err)
	got = corev1.Secret{}
	require.NoError(t, yaml.Unmarshal([]byte(out["minicluster/templates/api-secret.yaml"]), &got))
	assert.Empty(t, got.Data, "the keygen Job's credentials rendered into the release record")
}

// grants: role allows verb on the named object of resource.
func grants(role *rbacv1.Role, resource, name, verb string) bool {
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, resource) && slices.Contains(r.ResourceNames, name) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}
