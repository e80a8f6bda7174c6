package postrender

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/minicluster/minicluster/internal/hostlist"
)

// Annotations the chart writes: the parameters on the broker ConfigMap (templates/broker-configmap.yaml,
// from minicluster.parameters in _brokerconfig.tpl), max-size on the Job (templates/broker-job.yaml).
const (
	// ParametersAnnotation on the broker ConfigMap holds what broker.toml is computed from.
	ParametersAnnotation = "minicluster.dev/parameters"
	// MaxSizeAnnotation on the Job marks it as a MiniCluster and records its maxSize.
	MaxSizeAnnotation = "minicluster.dev/max-size"
)

// parameters is the JSON of ParametersAnnotation. The names of the Job and the Service are the
// chart's; a kustomization may rename them, so the final objects win and the annotation is updated.
type parameters struct {
	Job           string `json:"job"`
	Service       string `json:"service"`
	MaxSize       int    `json:"maxSize"`
	Port          int    `json:"port"`
	ClusterDomain string `json:"clusterDomain"`
	Interface     string `json:"interface"`
	CurveCert     string `json:"curveCert"`
	ResourcePath  string `json:"resourcePath"`
	Custom        bool   `json:"custom"` // broker.toml is the user's flux.brokerConfig: check it, never rewrite it
}

// miniCluster is one MiniCluster of the stream: its broker ConfigMap, the Job that mounts it,
// the Service its pods' subdomain names, and the parameters the chart rendered it with.
type miniCluster struct {
	config, job, service *object
	params               parameters
	volume               string // name of the pod volume that mounts the broker ConfigMap
}

func (mc *miniCluster) hostList() string { return hostlist.Indexed(mc.job.name, mc.params.MaxSize) }

// domain is what follows a pod's hostname in its FQDN.
func (mc *miniCluster) domain() string {
	return fmt.Sprintf("%s.%s.svc.%s", mc.service.name, mc.job.namespace, mc.params.ClusterDomain)
}

func (mc *miniCluster) connectTemplate() string { return "tcp://%h." + mc.domain() + ":%p" }

// A step checks or edits one resolved MiniCluster. Steps are small and run in order, so a later
// step may rely on what an earlier one checked.
type step interface {
	apply(mc *miniCluster) error
}

// miniClusterSteps are the checks, then the edits, that every MiniCluster goes through.
var miniClusterSteps = []step{
	jobShape{}, hostnames{}, headlessService{}, brokerPorts{}, // checks
	brokerTOML{}, plainKeys{}, parametersOut{}, // edits of the broker ConfigMap
}

// miniClusters is the kio.Filter that finds every MiniCluster of the stream by its broker
// ConfigMap, resolves its Job and Service as they are now, and runs the steps on it.
type miniClusters struct {
	steps []step
}

var _ kio.Filter = miniClusters{}

func (f miniClusters) Filter(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
	objs := objectsOf(nodes)
	for _, cm := range objs {
		if !isBrokerConfig(cm) {
			continue
		}
		mc, err := resolve(cm, objs)
		if err != nil {
			return nil, err
		}
		for _, s := range f.steps {
			if err := s.apply(mc); err != nil {
				return nil, err
			}
		}
	}
	return nodes, nil
}

// isBrokerConfig reports whether o is a broker ConfigMap: the chart marks it with its parameters.
func isBrokerConfig(o *object) bool {
	_, ok := annotations(o)[ParametersAnnotation]
	return ok && o.is("v1", "ConfigMap")
}

// claimedJobs is the kio.Filter that fails for a Job the chart made (it has MaxSizeAnnotation)
// when it mounts no broker ConfigMap of its namespace: a kustomization dropped or renamed it away.
type claimedJobs struct{}

var _ kio.Filter = claimedJobs{}

func (claimedJobs) Filter(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
	objs := objectsOf(nodes)
	for _, job := range objs {
		if _, ok := annotations(job)[MaxSizeAnnotation]; !ok || !job.is("batch/v1", "Job") {
			continue
		}
		if !mountsBrokerConfig(job, objs) {
			return nil, fmt.Errorf("the Job %s is a MiniCluster (annotation %s) but its broker ConfigMap is missing: %s; keep the chart's broker ConfigMap (<release>-broker) in the output of your kustomization", ref(job), MaxSizeAnnotation, missingBrokerConfig(job))
		}
	}
	return nodes, nil
}

func mountsBrokerConfig(job *object, objs []*object) bool {
	for _, cm := range objs {
		if _, ok := configMapVolume(job, cm.name); ok && cm.namespace == job.namespace && isBrokerConfig(cm) {
			return true
		}
	}
	return false
}

// missingBrokerConfig says what the Job's broker-config volume names instead.
func missingBrokerConfig(job *object) string {
	missing := "no ConfigMap volume"
	for _, v := range elements(job.node, "spec", "template", "spec", "volumes") {
		if name := scalar(v, "configMap", "name"); name != "" && scalar(v, "name") == "broker-config" {
			missing = fmt.Sprintf("its volume broker-config names ConfigMap %q, which is not among the manifests or has no %s annotation", name, ParametersAnnotation)
		}
	}
	return missing
}

// ref names an object for messages: namespace/name, or name alone when it has no namespace.
func ref(o *object) string {
	if o.namespace == "" {
		return o.name
	}
	return o.namespace + "/" + o.name
}

func find(objs []*object, apiVersion, kind, namespace, name string) *object {
	for _, o := range objs {
		if o.is(apiVersion, kind) && o.namespace == namespace && o.name == name {
			return o
		}
	}
	return nil
}

func serviceNames(objs []*object, namespace string) string {
	var names []string
	for _, o := range objs {
		if o.is("v1", "Service") && o.namespace == namespace {
			names = append(names, o.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// configMapVolume returns the name of the Job's pod volume that mounts ConfigMap name.
func configMapVolume(job *object, name string) (string, bool) {
	for _, v := range elements(job.node, "spec", "template", "spec", "volumes") {
		if scalar(v, "configMap", "name") == name {
			return scalar(v, "name"), true
		}
	}
	return "", false
}

// parseParameters decodes and checks the broker ConfigMap's parameters annotation.
func parseParameters(cm *object) (parameters, error) {
	var p parameters
	dec := json.NewDecoder(strings.NewReader(annotations(cm)[ParametersAnnotation]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("broker ConfigMap %s: annotation %s is not the chart's parameters JSON: %w; keep the annotation as the chart renders it", ref(cm), ParametersAnnotation, err)
	}
	if p.MaxSize < 1 || p.MaxSize > maxIndexedCompletions {
		return p, fmt.Errorf("broker ConfigMap %s: annotation %s has maxSize=%d; it must be 1-%d (an indexed Job's completions limit)", ref(cm), ParametersAnnotation, p.MaxSize, maxIndexedCompletions)
	}
	if !dnsSubdomain.MatchString(p.ClusterDomain) {
		return p, fmt.Errorf("broker ConfigMap %s: annotation %s has clusterDomain=%q, which is not a DNS name; set clusterDomain to your cluster's DNS domain (cluster.local by default)", ref(cm), ParametersAnnotation, p.ClusterDomain)
	}
	if cm.namespace == "" {
		return p, fmt.Errorf("broker ConfigMap %s has no metadata.namespace: the brokers' FQDNs (<host>.<service>.<namespace>.svc.%s) need it; render with the chart unchanged (it sets the namespace on every object) or set namespace: in your kustomization", cm.name, p.ClusterDomain)
	}
	return p, nil
}
