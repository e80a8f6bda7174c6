package main

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func parse(t *testing.T, s string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(s), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// Only the webhooks of Kueue's own kinds and of batch/job stay, the Job ones with an
// objectSelector on the queue label: no other Job and no Pod waits on Kueue.
func TestEditKeepsOnlyJobAndKueueWebhooks(t *testing.T) {
	obj := parse(t, `
kind: MutatingWebhookConfiguration
metadata: {name: kueue-mutating-webhook-configuration}
webhooks:
- {name: mpod.kb.io, clientConfig: {service: {path: /mutate--v1-pod}}}
- {name: mdeployment.kb.io, clientConfig: {service: {path: /mutate-apps-v1-deployment}}}
- {name: mjob.kb.io, clientConfig: {service: {path: /mutate-batch-v1-job}}}
- {name: mworkload.kb.io, clientConfig: {service: {path: /mutate-kueue-x-k8s-io-v1beta2-workload}}}
`)
	if keep, err := edit(obj, "img"); !keep || err != nil {
		t.Fatalf("edit: %v %v", keep, err)
	}
	out, _ := yaml.Marshal(obj)
	got := string(out)
	for _, gone := range []string{"mpod", "mdeployment"} {
		if strings.Contains(got, gone) {
			t.Errorf("%s kept:\n%s", gone, got)
		}
	}
	for _, want := range []string{"mjob.kb.io", "mworkload.kb.io", "key: kueue.x-k8s.io/queue-name", "operator: Exists"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "objectSelector") != 1 {
		t.Errorf("the objectSelector belongs on the Job webhook alone:\n%s", got)
	}

	noJob := parse(t, `
kind: ValidatingWebhookConfiguration
webhooks:
- {name: vpod.kb.io, clientConfig: {service: {path: /validate--v1-pod}}}
`)
	if _, err := edit(noJob, "img"); err == nil || !strings.Contains(err.Error(), "no batch/job webhook") {
		t.Errorf("a layout without the Job webhook: err %v", err)
	}
}

func TestEditDeploymentConfigAndAPIService(t *testing.T) {
	if keep, _ := edit(parse(t, "kind: APIService\nmetadata: {name: v1beta2.visibility.kueue.x-k8s.io}"), "img"); keep {
		t.Error("the visibility APIService is kept")
	}
	cm := parse(t, "kind: ConfigMap\nmetadata: {name: kueue-manager-config}\ndata: {controller_manager_config.yaml: x}")
	if _, err := edit(cm, "img"); err != nil {
		t.Fatal(err)
	}
	conf := cm["data"].(map[string]any)["controller_manager_config.yaml"].(string)
	for _, want := range []string{"manageJobsWithoutQueueName: false", "- batch/job", "leaderElect: false"} {
		if !strings.Contains(conf, want) {
			t.Errorf("the configuration lacks %q", want)
		}
	}
	if strings.Contains(conf, "- pod") {
		t.Error("the pod integration is on")
	}
	dep := parse(t, `
kind: Deployment
metadata: {name: kueue-controller-manager}
spec: {template: {spec: {containers: [{name: manager, image: controller:latest, imagePullPolicy: Always}]}}}
`)
	if _, err := edit(dep, "reg/kueue:v0.19.2"); err != nil {
		t.Fatal(err)
	}
	out, _ := yaml.Marshal(dep)
	for _, want := range []string{"image: reg/kueue:v0.19.2", "imagePullPolicy: IfNotPresent", "type: Recreate", "cpu: 100m"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the Deployment lacks %q:\n%s", want, out)
		}
	}
}
