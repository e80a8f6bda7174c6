package render

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
)

// api.enabled: a ClusterIP Service <release>-api on the lead alone, a Secret of generated
// credentials mounted for the lead's server, the port, and the keys container told to hand the
// server over. Off (the default): none of it.
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
	assert.Equal(t, "flux", string(secret.Data["user"]))
	assert.Len(t, secret.Data["token"], 40)
	assert.Len(t, secret.Data["secret-key"], 64)
	// Generated per render (no live Secret): two renders differ.
	again := get[*corev1.Secret](t, render(t, helmtest.Options{Set: []string{"api.enabled=true"}}), "Secret", "flux-sample-api")
	assert.NotEqual(t, secret.Data["token"], again.Data["token"])

	pod := get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	flux := pod.Containers[0]
	assert.Equal(t, "5050", envOf(flux)["MINICLUSTER_API_PORT"])
	assert.Contains(t, flux.Ports, corev1.ContainerPort{Name: "api", ContainerPort: 5050, Protocol: corev1.ProtocolTCP})
	assert.Contains(t, flux.VolumeMounts, corev1.VolumeMount{Name: "api-credentials", MountPath: "/minicluster/api/credentials", ReadOnly: true})
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "api-credentials" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "flux-sample-api", pod.Volumes[i].Secret.SecretName)
	keys := pod.Containers[slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "keys" })]
	assert.Contains(t, keys.Args, "--api-server=/minicluster/keys/minicluster-api")

	// The user's Secret and TLS: no Secret made, theirs mounted.
	objs = render(t, helmtest.Options{Set: []string{"api.enabled=true", "api.existingSecret=mine", "api.tls.secretName=api-tls"}})
	_, made := helmtest.Find(objs, "Secret", "flux-sample-api")
	assert.False(t, made, "a Secret made beside api.existingSecret")
	pod = get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	names := map[string]string{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			names[v.Name] = v.Secret.SecretName
		}
	}
	assert.Equal(t, "mine", names["api-credentials"])
	assert.Equal(t, "api-tls", names["api-tls"])
	assert.Equal(t, "https", get[*corev1.Service](t, objs, "Service", "flux-sample-api").Spec.Ports[0].Name)

	// No auth: no credentials at all.
	objs = render(t, helmtest.Options{Set: []string{"api.enabled=true", "api.requireAuth=false"}})
	_, made = helmtest.Find(objs, "Secret", "flux-sample-api")
	assert.False(t, made)

	// Off: nothing.
	objs = render(t, helmtest.Options{})
	for _, kind := range []string{"Service", "Secret"} {
		_, found := helmtest.Find(objs, kind, "flux-sample-api")
		assert.Falsef(t, found, "%s flux-sample-api rendered with api off", kind)
	}
	pod = get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	assert.NotContains(t, envOf(pod.Containers[0]), "MINICLUSTER_API_PORT")
}

// TestAPISecretKeptOnUpgrade: an upgrade renders the live Secret's credentials, not new ones.
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
}
