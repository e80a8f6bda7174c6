// Command manifests prints the objects that run Kueue in the local cluster, for ci/kueue/up.sh
// to apply:
//
//	go run ./ci/kueue/manifests --src DIR --image REF
//
// They are Kueue's own kustomization (config/default of its source: CRDs, RBAC, the
// kueue-system Deployment with its internal certificate management, webhooks) built with
// kustomize, then narrowed to what the MiniCluster chart needs and made safe for a cluster that
// other tests share:
//   - the configuration: batch/job the only integration, manageJobsWithoutQueueName false,
//     no leader election (one replica, replaced by Recreate);
//   - the webhooks of Kueue's own kinds and of batch/job only: Kueue ships one for Pods,
//     Deployments, StatefulSets... (failurePolicy Fail) even for integrations it does not run,
//     so a stopped Kueue would block every Pod of the cluster. The Job webhooks see only Jobs
//     with the kueue.x-k8s.io/queue-name label (an objectSelector): every other Job is
//     untouched, whether Kueue runs or not;
//   - no visibility APIService: an aggregated API whose server is gone breaks discovery, which
//     kubectl and helm do on every call;
//   - the image (REF), pulled if not present, and small requests (a 2-core machine).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// QueueLabel is the label that puts a Job in a Kueue LocalQueue.
const QueueLabel = "kueue.x-k8s.io/queue-name"

// config is Kueue's configuration file (config.kueue.x-k8s.io/v1beta2 Configuration).
const config = `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
# One replica: no lease to wait for when it restarts.
leaderElection:
  leaderElect: false
# Jobs without the queue-name label are not Kueue's.
manageJobsWithoutQueueName: false
# Kueue makes and renews the webhook's serving certificate itself (Secret kueue-webhook-server-cert).
internalCertManagement:
  enable: true
integrations:
  frameworks:
    - batch/job
`

func main() {
	src := flag.String("src", "", "Kueue's source tree (ci/kueue/build.sh --print-dir, then /src)")
	image := flag.String("image", "", "the Kueue image the cluster pulls, e.g. 10.250.0.2:5000/minicluster/kueue:v0.19.2")
	flag.Parse()
	if *src == "" || *image == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./ci/kueue/manifests --src KUEUE_SOURCE_DIR --image REF")
		os.Exit(2)
	}
	out, err := render(filepath.Join(*src, "config", "default"), *image)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kueue manifests: %v\n", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

// render builds the kustomization in dir and edits its objects; the result is a YAML stream.
func render(dir, image string) ([]byte, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // Namespace and CRDs first, webhooks last: an order kubectl apply can follow
	resources, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	var out bytes.Buffer
	for _, r := range resources.Resources() {
		obj, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		keep, err := edit(obj, image)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		if !keep {
			continue
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return out.Bytes(), nil
}

// edit changes obj in place; false drops it.
func edit(obj map[string]any, image string) (bool, error) {
	kind, _ := obj["kind"].(string)
	name, _ := get(obj, "metadata", "name").(string)
	switch kind {
	case "APIService":
		return false, nil
	case "ConfigMap":
		if name == "kueue-manager-config" {
			obj["data"] = map[string]any{"controller_manager_config.yaml": config}
		}
	case "Deployment":
		// One replica without leader election: a restart must stop the old pod first.
		obj["spec"].(map[string]any)["strategy"] = map[string]any{"type": "Recreate"}
		containers, _ := get(obj, "spec", "template", "spec", "containers").([]any)
		for _, c := range containers {
			c := c.(map[string]any)
			if c["name"] != "manager" {
				continue
			}
			c["image"] = image
			c["imagePullPolicy"] = "IfNotPresent"
			c["resources"] = map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
				"limits":   map[string]any{"memory": "512Mi"},
			}
			return true, nil
		}
		return false, fmt.Errorf("no container named manager")
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		hooks, _ := obj["webhooks"].([]any)
		var kept []any
		for _, h := range hooks {
			h := h.(map[string]any)
			path, _ := get(h, "clientConfig", "service", "path").(string)
			switch {
			case strings.Contains(path, "-kueue-x-k8s-io-"): // Kueue's own kinds
			case strings.HasSuffix(path, "-batch-v1-job"):
				h["objectSelector"] = map[string]any{"matchExpressions": []any{
					map[string]any{"key": QueueLabel, "operator": "Exists"},
				}}
			default:
				continue
			}
			kept = append(kept, h)
		}
		if !slices.ContainsFunc(kept, func(h any) bool { return strings.HasSuffix(h.(map[string]any)["name"].(string), "job.kb.io") }) {
			return false, fmt.Errorf("no batch/job webhook among %d: Kueue's layout changed", len(hooks))
		}
		obj["webhooks"] = kept
	}
	return true, nil
}

// get walks nested maps; nil when a key is missing.
func get(obj map[string]any, keys ...string) any {
	var v any = obj
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
