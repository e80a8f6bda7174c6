package postrender

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

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
