package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/minicluster/minicluster/internal/helmtest"
)

const mirror = "registry.example.org:5000/mirror"

// podSpecs are the pod specs of every object the chart renders that makes pods, by "Kind/name".
func podSpecs(t *testing.T, objs []helmtest.Object) map[string]corev1.PodSpec {
	t.Helper()
	specs := map[string]corev1.PodSpec{}
	for _, o := range objs {
		switch v := o.Object.(type) {
		case *batchv1.Job:
			specs[o.Kind+"/"+o.Name] = v.Spec.Template.Spec
		case *corev1.Pod:
			specs[o.Kind+"/"+o.Name] = v.Spec
		}
	}
	return specs
}

// images are the image references of every container and init container, by "Kind/name/container".
func images(t *testing.T, objs []helmtest.Object) map[string]string {
	t.Helper()
	refs := map[string]string{}
	for where, spec := range podSpecs(t, objs) {
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			refs[where+"/"+c.Name] = c.Image
		}
	}
	return refs
}

// The chart's own images are flux-keygen (the keygen Job and the brokers' keys step) and the
// helm test image; the application image and the view image are the user's.
var chartOwned = map[string]bool{
	"Job/flux-sample-keygen/keygen":      true,
	"Job/flux-sample/keys":               true,
	"Pod/flux-sample-test-wiring/wiring": true,
}

func TestImageRegistryRewritesTheChartsOwnImages(t *testing.T) {
	objs := render(t, helmtest.Options{Set: []string{"imageRegistry=" + mirror}})
	refs := images(t, objs)
	seen := 0
	for where, ref := range refs {
		switch {
		case chartOwned[where]:
			seen++
			assert.Truef(t, strings.HasPrefix(ref, mirror+"/"), "%s: image %q is not in %s", where, ref, mirror)
		case strings.HasSuffix(where, "/flux-view"):
			assert.Equal(t, "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble", ref, where)
		case strings.HasSuffix(where, "/flux"):
			assert.Equal(t, "ubuntu:24.04", ref, "%s: the application image is used as written", where)
		default:
			t.Errorf("%s: image %q is neither the chart's own nor the application or view image", where, ref)
		}
	}
	assert.Equal(t, len(chartOwned), seen, "chart-owned containers found in %v", refs)
	assert.Equal(t, mirror+"/flux-keygen:"+helmtest.AppVersion(), refs["Job/flux-sample-keygen/keygen"])
	assert.Equal(t, mirror+"/flux-keygen:"+helmtest.AppVersion(), refs["Job/flux-sample/keys"])
	assert.Equal(t, mirror+"/busybox:1.37", refs["Pod/flux-sample-test-wiring/wiring"])
}

func TestImageRegistryForms(t *testing.T) {
	cases := []struct {
		name, set         string
		keygen, testImage string
	}{
		{"empty: as written", "imageRegistry=",
			"ghcr.io/minicluster/flux-keygen:" + helmtest.AppVersion(), "busybox:1.37"},
		{"host only", "imageRegistry=10.0.0.1:5000",
			"10.0.0.1:5000/flux-keygen:" + helmtest.AppVersion(), "10.0.0.1:5000/busybox:1.37"},
		{"own tag, digest and nested paths", "imageRegistry=reg.local/a/b,keygen.image.repository=quay.io/x/y/flux-keygen,keygen.image.tag=1.2.3,tests.image=docker.io/library/busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"reg.local/a/b/flux-keygen:1.2.3", "reg.local/a/b/busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"application and view images untouched", "imageRegistry=reg.local,image=app:1,flux.view.image=my.reg/view:2",
			"reg.local/flux-keygen:" + helmtest.AppVersion(), "reg.local/busybox:1.37"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refs := images(t, render(t, helmtest.Options{Set: []string{c.set}}))
			assert.Equal(t, c.keygen, refs["Job/flux-sample-keygen/keygen"])
			assert.Equal(t, c.keygen, refs["Job/flux-sample/keys"])
			assert.Equal(t, c.testImage, refs["Pod/flux-sample-test-wiring/wiring"])
			if strings.Contains(c.set, "image=app:1") {
				assert.Equal(t, "app:1", refs["Job/flux-sample/flux"])
				assert.Equal(t, "my.reg/view:2", refs["Job/flux-sample/flux-view"])
			}
		})
	}
}

func TestImageRegistryRejectsWhatIsNotHostPortPath(t *testing.T) {
	for _, bad := range []string{"https://reg.local", "reg.local/", "reg.local:port", "/path", "reg local", "reg.local/UPPER"} {
		t.Run(bad, func(t *testing.T) {
			_, err := helmtest.Template(helmtest.Options{Set: []string{"imageRegistry=" + bad}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "imageRegistry")
		})
	}
}

func TestImagePullSecretsReachEveryPod(t *testing.T) {
	for _, set := range []string{
		"imagePullSecrets[0].name=regcred,imageRegistry=" + mirror,
		"imagePullSecrets[0].name=regcred,munge.enabled=true,flux.view.enabled=false",
		"imagePullSecrets[0].name=regcred,curve.storage=ConfigMap",
	} {
		t.Run(set, func(t *testing.T) {
			specs := podSpecs(t, render(t, helmtest.Options{Set: []string{set}}))
			for _, want := range []string{"Job/flux-sample", "Job/flux-sample-keygen", "Pod/flux-sample-test-wiring"} {
				assert.Containsf(t, specs, want, "the chart makes no %s", want)
			}
			for where, spec := range specs {
				assert.Equalf(t, []corev1.LocalObjectReference{{Name: "regcred"}}, spec.ImagePullSecrets, "%s", where)
			}
		})
	}
}
