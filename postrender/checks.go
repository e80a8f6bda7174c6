package postrender

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// jobShape checks that the Job runs every broker at once, as an Indexed Job of 1 to maxSize
// pods.
type jobShape struct{}

func (jobShape) apply(mc *miniCluster) error {
	job, p := mc.job, mc.params
	if mode := scalar(job.node, "spec", "completionMode"); mode != "Indexed" {
		return fmt.Errorf("the Job %s has completionMode %q; a MiniCluster needs an Indexed Job (pod i is hostname <job>-i): set spec.completionMode: Indexed", ref(job), mode)
	}
	size, err := mc.size()
	if err != nil {
		return err
	}
	if size > p.MaxSize {
		return fmt.Errorf("the Job %s has size %d (completions and parallelism) but maxSize is %d, the number of hosts broker.toml lists; set size to at most %d, or install with maxSize >= %d", ref(job), size, p.MaxSize, p.MaxSize, size)
	}
	if v, ok := annotations(job)[MaxSizeAnnotation]; ok && v != strconv.Itoa(p.MaxSize) {
		return fmt.Errorf("the Job %s has annotation %s=%q but its broker ConfigMap %s says maxSize=%d; keep both as the chart renders them", ref(job), MaxSizeAnnotation, v, ref(mc.config), p.MaxSize)
	}
	return nil
}

// size is the number of brokers: the Job's completions, which must equal its parallelism.
func (mc *miniCluster) size() (int, error) {
	completions, err := intField(mc.job, "spec", "completions")
	if err != nil {
		return 0, err
	}
	parallelism, err := intField(mc.job, "spec", "parallelism")
	if err != nil {
		return 0, err
	}
	if completions != parallelism {
		return 0, fmt.Errorf("the Job %s has completions=%d but parallelism=%d; every broker runs at once, so set both to the size", ref(mc.job), completions, parallelism)
	}
	if completions < 1 {
		return 0, fmt.Errorf("the Job %s has completions=%d; a MiniCluster needs at least 1 broker: set completions and parallelism to the size", ref(mc.job), completions)
	}
	return completions, nil
}

// intField reads an integer field of the Job.
func intField(o *object, path ...string) (int, error) {
	v := scalar(o.node, path...)
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("the Job %s: %s is %q, not an integer; set it to the MiniCluster's size", ref(o), strings.Join(path, "."), v)
	}
	return n, nil
}

// hostnames checks the names the brokers find each other by: Kubernetes names pod i of an
// Indexed Job "<job>-<i>", uses that as its hostname, and gives it the FQDN
// <hostname>.<service>.<namespace>.svc.<domain>.
type hostnames struct{}

func (hostnames) apply(mc *miniCluster) error {
	job, svc, maxSize := mc.job, mc.service, mc.params.MaxSize
	if !dnsLabel.MatchString(job.name) {
		return fmt.Errorf("the Job name %q cannot start the pods' hostnames (<job>-<index>): a hostname must be a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit); rename the Job", job.name)
	}
	if last := fmt.Sprintf("%s-%d", job.name, maxSize-1); len(last) > 63 {
		return fmt.Errorf("hostname %q (Job %s, maxSize=%d) is %d characters; a hostname may have at most 63: shorten the Job name to at most %d characters", last, ref(job), maxSize, len(last), 62-len(strconv.Itoa(maxSize-1)))
	}
	if !dns1035Label.MatchString(svc.name) || len(svc.name) > 63 {
		return fmt.Errorf("the Service name %q is not a DNS label (at most 63 lower-case letters, digits and '-', starting with a letter); the pods' FQDNs need one: rename the Service and the Job's subdomain", svc.name)
	}
	return nil
}

// headlessService checks that the Service publishes the pods' DNS names: it is headless and
// selects the Job's pods.
type headlessService struct{}

func (headlessService) apply(mc *miniCluster) error {
	job, svc := mc.job, mc.service
	if ip := scalar(svc.node, "spec", "clusterIP"); ip != "None" {
		return fmt.Errorf("the Service %s is not headless (spec.clusterIP is %q): pods get per-pod DNS names only from a headless Service; set spec.clusterIP: None", ref(svc), ip)
	}
	selector := stringMap(svc.node, "spec", "selector")
	if len(selector) == 0 {
		return fmt.Errorf("the Service %s has no spec.selector: it would publish no pod's DNS name; select the Job's pods (e.g. job-name: %s)", ref(svc), job.name)
	}
	labels := podLabels(job)
	for _, key := range sortedKeys(selector) {
		if key == completionIndexLabel {
			// flux.minimalService: the lead's name alone; the workers connect to it (flat tree).
			if selector[key] != "0" {
				return fmt.Errorf("the Service %s selects %s=%s: it would publish the name of broker %s and not the lead's, which every broker connects to; select index 0 (the lead alone) or drop the key", ref(svc), key, selector[key], selector[key])
			}
			continue
		}
		if labels[key] != selector[key] {
			return fmt.Errorf("the Service %s selects %s=%s, but the pods of Job %s have %s; the Service must select the Job's pods (fix the selector or the pod template's labels)", ref(svc), key, selector[key], ref(job), describeLabel(labels, key))
		}
	}
	return nil
}

// completionIndexLabel is the label Kubernetes gives each pod of an Indexed Job: its index.
const completionIndexLabel = "batch.kubernetes.io/job-completion-index"

// podLabels are the labels of the Job's pods: its template's and the two Kubernetes adds.
func podLabels(job *object) map[string]string {
	labels := stringMap(job.node, "spec", "template", "metadata", "labels")
	if labels == nil {
		labels = map[string]string{}
	}
	labels["job-name"] = job.name
	labels["batch.kubernetes.io/job-name"] = job.name
	return labels
}

func describeLabel(labels map[string]string, key string) string {
	if v, ok := labels[key]; ok {
		return key + "=" + v
	}
	return "no label " + key
}

// brokerPort is the port the brokers listen on and where it was read, for messages.
type brokerPort struct {
	n     int
	from  string
	named bool // a containerPort named "broker" declares it
}

// brokerPort decides the brokers' port: the containerPort named "broker" of the container that
// mounts the broker ConfigMap (what the pods declare they listen on), else the chart's value.
func (mc *miniCluster) brokerPort() (brokerPort, error) {
	bp := brokerPort{n: mc.params.Port, from: fmt.Sprintf("the chart's flux.port (ConfigMap %s)", ref(mc.config))}
	for _, c := range mc.brokerContainers() {
		for _, port := range elements(c, "ports") {
			if scalar(port, "name") != "broker" {
				continue
			}
			from := fmt.Sprintf("Job %s container %s port broker", ref(mc.job), scalar(c, "name"))
			n, err := strconv.Atoi(scalar(port, "containerPort"))
			if err != nil {
				return bp, fmt.Errorf("the %s has containerPort %q, not a number; set it to the brokers' port (8050 by convention)", from, scalar(port, "containerPort"))
			}
			bp = brokerPort{n: n, from: from, named: true}
		}
	}
	if bp.n < 1 || bp.n > 65535 {
		return bp, fmt.Errorf("the brokers' port %d (%s) is not a TCP port; use 1-65535 (8050 by convention)", bp.n, bp.from)
	}
	return bp, nil
}

// brokerContainers are the Job's containers that mount the broker ConfigMap.
func (mc *miniCluster) brokerContainers() []*yaml.RNode {
	var out []*yaml.RNode
	for _, c := range elements(mc.job.node, "spec", "template", "spec", "containers") {
		if slices.ContainsFunc(elements(c, "volumeMounts"), func(m *yaml.RNode) bool { return scalar(m, "name") == mc.volume }) {
			out = append(out, c)
		}
	}
	return out
}

// brokerPorts checks that the Service, through which clients and helm test reach the brokers,
// uses the brokers' port.
type brokerPorts struct{}

func (brokerPorts) apply(mc *miniCluster) error {
	bp, err := mc.brokerPort()
	if err != nil {
		return err
	}
	svcPort := mc.servicePort()
	if svcPort == nil {
		return nil
	}
	if port := scalar(svcPort, "port"); port != strconv.Itoa(bp.n) {
		return fmt.Errorf("the Service %s port is %s but the brokers listen on %d (%s); brokers connect pod to pod on that port: patch the Service port and the container port to the same value", ref(mc.service), port, bp.n, bp.from)
	}
	target := scalar(svcPort, "targetPort")
	switch {
	case target == "" || target == strconv.Itoa(bp.n):
	case target == "broker" && bp.named:
	default:
		return fmt.Errorf("the Service %s targetPort is %q but the brokers listen on %d (%s); set targetPort: broker", ref(mc.service), target, bp.n, bp.from)
	}
	return nil
}

// servicePort is the Service's port named "broker", else its only port, else nil.
func (mc *miniCluster) servicePort() *yaml.RNode {
	ports := elements(mc.service.node, "spec", "ports")
	var named *yaml.RNode
	for _, port := range ports {
		if scalar(port, "name") == "broker" {
			named = port
		}
	}
	if named == nil && len(ports) == 1 {
		return ports[0]
	}
	return named
}
