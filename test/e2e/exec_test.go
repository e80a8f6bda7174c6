//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectl exec into any broker pod just works: plain flux (the chart's, on the image's PATH)
// reaches that pod's broker, and so does flux proxy of the pod's socket, named or as the
// container's FLUX_URI. With the view image mounted (the default on this cluster), a copy of
// the view, Flux in the image, and Flux in the image behind the chart's flux on a PATH of the
// user's (env), where the broker and flux must still run the image's Flux.
func TestExecFlux(t *testing.T) {
	t.Parallel()
	const stdPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, tc := range []struct {
		name  string
		set   []string
		copy  bool   // the view is copied (a flux-view container)
		which string // the flux PATH finds in the pod
	}{
		{name: "view-image", set: []string{"size=2"}, which: "/usr/local/sbin/flux"},
		{name: "view-copy", set: []string{"size=2,flux.view.mode=copy"}, copy: true, which: "/usr/local/sbin/flux"},
		{name: "flux-in-image", set: []string{"size=2,flux.view.enabled=false,image=" + fluxImage}, which: "/opt/view/bin/flux"},
		{name: "flux-in-image-behind-the-wrapper", set: []string{"size=2,flux.view.enabled=false,image=" + fluxImage,
			"--set-string", "env[0].name=PATH,env[0].value=" + stdPath + ":/opt/view/bin"}, which: "/usr/local/sbin/flux"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "exec")
			r := newRelease(t, ns, "flux-sample", helm3)
			r.install(append([]string{"--set"}, tc.set...)...)
			job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), r.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			copied := false
			for _, c := range job.Spec.Template.Spec.Containers {
				copied = copied || c.Name == "flux-view"
			}
			if copied != tc.copy {
				t.Errorf("the view is copied: %v, want %v", copied, tc.copy)
			}
			// waitFluxUp runs `flux resource list` in the lead as kubectl exec does.
			pods := waitFluxUp(t, ns, r.name, 2, 16, wiringTimeout)
			lead, worker := pods[0].Name, pods[1].Name
			run := func(pod string, cmd ...string) string {
				t.Helper()
				out, stderr, err := execIn(ns, pod, "flux", cmd...)
				t.Logf("kubectl exec %s -c flux -- %s:\n%s%s", pod, strings.Join(cmd, " "), indent(out), indent(stderr))
				if err != nil {
					t.Errorf("kubectl exec %s -c flux -- %s: %v\n%s", pod, strings.Join(cmd, " "), err, stderr)
				}
				return strings.TrimSpace(out)
			}
			if out := run(lead, "flux", "resource", "list"); !strings.Contains(out, "STATE") || !strings.Contains(out, "free") || !strings.Contains(out, "down") {
				t.Errorf("flux resource list in the lead: want free and down nodes, got\n%s", out)
			}
			if out := run(lead, "flux", "proxy", "local:///minicluster/run/flux/local", "flux", "getattr", "size"); out != "16" {
				t.Errorf("flux proxy local:///minicluster/run/flux/local flux getattr size in the lead = %q, want 16 (maxSize)", out)
			}
			if out := run(lead, "sh", "-c", "flux proxy $FLUX_URI flux getattr rank"); out != "0" {
				t.Errorf("flux proxy $FLUX_URI flux getattr rank in the lead = %q, want 0", out)
			}
			if out := run(worker, "flux", "getattr", "rank"); out != "1" {
				t.Errorf("flux getattr rank in the worker = %q, want 1", out)
			}
			if out := run(worker, "sh", "-c", "flux proxy $FLUX_URI flux getattr rank"); out != "1" {
				t.Errorf("flux proxy $FLUX_URI flux getattr rank in the worker = %q, want 1", out)
			}
			if out := run(lead, "sh", "-c", "command -v flux"); out != tc.which {
				t.Errorf("command -v flux in the lead = %q, want %q", out, tc.which)
			}
			r.uninstallToNothing()
		})
	}
}
