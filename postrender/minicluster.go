package postrender

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/minicluster/minicluster/internal/hostlist"
	"github.com/minicluster/minicluster/internal/limits"
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

// isBrokerConfig reports whether o is a broker ConfigMap: the chart marks it with its parameters.
func isBrokerConfig(o *object) bool {
	_, ok := annotations(o)[ParametersAnnotation]
	return ok && o.is("v1", "ConfigMap")
}

// parseParameters decodes and checks the broker ConfigMap's parameters annotation.
func parseParameters(cm *object) (parameters, error) {
	var p parameters
	dec := json.NewDecoder(strings.NewReader(annotations(cm)[ParametersAnnotation]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("broker ConfigMap %s: annotation %s is not the chart's parameters JSON: %w; keep the annotation as the chart renders it", ref(cm), ParametersAnnotation, err)
	}
	if p.MaxSize < 1 || p.MaxSize > limits.MaxBrokers {
		return p, fmt.Errorf("broker ConfigMap %s: annotation %s has maxSize=%d; it must be 1-%d (an indexed Job's completions limit)", ref(cm), ParametersAnnotation, p.MaxSize, limits.MaxBrokers)
	}
	if !dnsSubdomain.MatchString(p.ClusterDomain) {
		return p, fmt.Errorf("broker ConfigMap %s: annotation %s has clusterDomain=%q, which is not a DNS name; set clusterDomain to your cluster's DNS domain (cluster.local by default)", ref(cm), ParametersAnnotation, p.ClusterDomain)
	}
	if cm.namespace == "" {
		return p, fmt.Errorf("broker ConfigMap %s has no metadata.namespace: the brokers' FQDNs (<host>.<service>.<namespace>.svc.%s) need it; render with the chart unchanged (it sets the namespace on every object) or set namespace: in your kustomization", cm.name, p.ClusterDomain)
	}
	return p, nil
}
