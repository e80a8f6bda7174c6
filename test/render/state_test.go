package render

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

var stateOn = []string{"flux.state.enabled=true", "flux.state.storageClassName=local-path"}

func envOf(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// flux.state with a storage class: the chart's claim <release>-state, kept on uninstall, which
// every broker pod mounts at /minicluster/state; the lead learns the archive's path and the
// dump's bound from the environment. Without state nothing of it is rendered.
func TestStateClaim(t *testing.T) {
	objs := render(t, helmtest.Options{Set: append([]string{"flux.state.size=2Gi"}, stateOn...)})
	pvc := get[*corev1.PersistentVolumeClaim](t, objs, "PersistentVolumeClaim", "flux-sample-state")
	assert.Equal(t, "keep", pvc.Annotations["helm.sh/resource-policy"], "the claim must outlive helm uninstall")
	assert.Equal(t, "local-path", *pvc.Spec.StorageClassName)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, pvc.Spec.AccessModes)
	assert.True(t, resource.MustParse("2Gi").Equal(pvc.Spec.Resources.Requests[corev1.ResourceStorage]))

	job := get[*batchv1.Job](t, objs, "Job", "flux-sample")
	assert.Equal(t, "claim=flux-sample-state,dumpTimeoutSeconds=10", job.Annotations["minicluster.dev/state"])
	pod := job.Spec.Template.Spec
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "state" })
	require.GreaterOrEqual(t, i, 0, "no state volume")
	assert.Equal(t, "flux-sample-state", pod.Volumes[i].PersistentVolumeClaim.ClaimName)
	flux := pod.Containers[0]
	assert.Contains(t, flux.VolumeMounts, corev1.VolumeMount{Name: "state", MountPath: "/minicluster/state"})
	env := envOf(flux)
	assert.Equal(t, "/minicluster/state/flux-content.tgz", env["MINICLUSTER_STATE"])
	assert.Equal(t, "10", env["MINICLUSTER_STATE_DUMP_TIMEOUT"])

	// A claim of the user's: mounted, none made.
	objs = render(t, helmtest.Options{Set: []string{"flux.state.enabled=true", "flux.state.existingClaim=my-flux-state"}})
	_, made := helmtest.Find(objs, "PersistentVolumeClaim", "flux-sample-state")
	assert.False(t, made, "the chart made a claim beside the user's")
	pod = get[*batchv1.Job](t, objs, "Job", "flux-sample").Spec.Template.Spec
	i = slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "state" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "my-flux-state", pod.Volumes[i].PersistentVolumeClaim.ClaimName)

	// State off (the default): no claim, no volume, no environment, no annotation.
	objs = render(t, helmtest.Options{})
	for _, o := range objs {
		assert.NotEqual(t, "PersistentVolumeClaim", o.Kind)
	}
	job = get[*batchv1.Job](t, objs, "Job", "flux-sample")
	assert.NotContains(t, job.Annotations, "minicluster.dev/state")
	assert.False(t, slices.ContainsFunc(job.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "state" }))
	assert.NotContains(t, envOf(job.Spec.Template.Spec.Containers[0]), "MINICLUSTER_STATE")
}

// Bad flux.state values fail the render, naming the value and the fix.
func TestStateRejected(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     []string
		wantErr []string
	}{
		{"state without a claim", []string{"flux.state.enabled=true"},
			[]string{"flux.state.enabled=true but the state has no claim to live in (state without a claim)", "flux.state.existingClaim", "flux.state.storageClassName", "kubectl get storageclass"}},
		{"claim name invalid", []string{"flux.state.enabled=true", "flux.state.existingClaim=My_Claim"},
			[]string{`flux.state.existingClaim="My_Claim" is not a valid PersistentVolumeClaim name`, "kubectl get pvc -n default"}},
		{"storage class name invalid", append(slices.Clone(stateOn), "flux.state.storageClassName=Local Path"),
			[]string{`flux.state.storageClassName="Local Path" is not a valid storage class name`}},
		{"claim and class both", []string{"flux.state.enabled=true", "flux.state.existingClaim=mine", "flux.state.storageClassName=local-path"},
			[]string{`flux.state.existingClaim="mine" and flux.state.storageClassName="local-path"`, "set one of them"}},
		{"size not a quantity", append(slices.Clone(stateOn), "flux.state.size=1 GB"),
			[]string{`flux.state.size="1 GB" is not a Kubernetes quantity`, "1Gi"}},
		{"grace period without room for the dump", append(slices.Clone(stateOn), "terminationGracePeriodSeconds=25", "flux.cleanupTimeout=10s"),
			[]string{"terminationGracePeriodSeconds=25 is too short for flux.cleanupTimeout=10s + flux.state.dumpTimeoutSeconds=10",
				"its content dump (up to flux.state.dumpTimeoutSeconds)", "at least 30, or flux.cleanupTimeout to at most 5s"}},
		{"dump timeout too long for the default grace period", append(slices.Clone(stateOn), "flux.state.dumpTimeoutSeconds=25"),
			[]string{"terminationGracePeriodSeconds=30 (Kubernetes' default: the value is not set) is too short", "at least 35"}},
		{"dump timeout zero", append(slices.Clone(stateOn), "flux.state.dumpTimeoutSeconds=0"), []string{"/flux/state/dumpTimeoutSeconds", "minimum"}},
		{"unknown access mode", append(slices.Clone(stateOn), "flux.state.accessModes[0]=ReadOnce"), []string{"/flux/state/accessModes/0"}},
		{"unknown state key", []string{"flux.state.claim=x"}, []string{"/flux/state", "additional properties 'claim' not allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmtest.Template(helmtest.Options{Set: tc.set})
			require.Error(t, err)
			for _, want := range tc.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
	_, err := helmtest.Template(helmtest.Options{Set: append(slices.Clone(stateOn), "terminationGracePeriodSeconds=30", "flux.cleanupTimeout=10s")})
	assert.NoError(t, err, "30 s is room for a 10 s clean-up, a 10 s dump and 10 s to stop")
}

// On upgrade flux.state is fixed like the rest of the pod template; on install, a claim kept
// from an earlier install is reused only as it is (its class cannot change, its size would be
// an expansion).
func TestStateFixedAtInstall(t *testing.T) {
	base := append([]string{"size=4"}, stateOn...)
	job, cert := liveRelease(t, base...)
	upgrade := func(set ...string) error {
		_, err := helmtest.TemplateWithLive(helmtest.Options{Set: append(slices.Clone(base), set...)}, toObjects(t, []any{job, cert})...)
		return err
	}
	require.NoError(t, upgrade("size=8"), "a resize keeps the state")
	for _, set := range [][]string{{"flux.state.dumpTimeoutSeconds=5"}, {"flux.state.enabled=false"}, {"flux.state.storageClassName=", "flux.state.existingClaim=other"}} {
		err := upgrade(set...)
		require.Errorf(t, err, "%v", set)
		assert.Contains(t, err.Error(), "flux.state (")
		assert.Contains(t, err.Error(), "differs from the running MiniCluster's (claim=flux-sample-state,dumpTimeoutSeconds=10)")
		assert.Contains(t, err.Error(), "only size can change on a running MiniCluster")
	}
	offJob, _ := liveRelease(t, "size=4")
	_, err := helmtest.TemplateWithLive(helmtest.Options{Set: base}, toObjects(t, []any{offJob, cert})...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "flux.state (claim=flux-sample-state,dumpTimeoutSeconds=10) differs from the running MiniCluster's (off)")

	class := "local-path"
	kept := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "flux-sample-state", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	install := func(set ...string) error {
		_, err := helmtest.TemplateWithLive(helmtest.Options{Set: append(slices.Clone(stateOn), set...)}, toObjects(t, []any{kept})...)
		return err
	}
	require.NoError(t, install(), "the kept claim as it is")
	err = install("flux.state.storageClassName=fast")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "flux.state.storageClassName=fast, but the claim flux-sample-state kept from an earlier install (with its state) has storage class local-path")
	assert.Contains(t, err.Error(), "kubectl delete pvc -n default flux-sample-state")
	err = install("flux.state.size=5Gi")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "flux.state.size=5Gi, but the claim flux-sample-state kept from an earlier install (with its state) asks for 1Gi: set flux.state.size=1Gi")
}
