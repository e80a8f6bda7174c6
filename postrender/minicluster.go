package postrender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/minicluster/minicluster/internal/hostlist"
)

// Annotations the chart writes (charts/minicluster/templates/_helpers.tpl).
const (
	// ParametersAnnotation on the broker ConfigMap holds what broker.toml is computed from.
	ParametersAnnotation = "minicluster.dev/parameters"
	// MaxSizeAnnotation on the Job marks it as a MiniCluster and records its maxSize.
	MaxSizeAnnotation = "minicluster.dev/max-size"
)

// parameters is the JSON of ParametersAnnotation. The names of the Job and the Service are the
// chart's; an overlay may rename them, so the final objects win and the annotation is updated.
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

// miniCluster is one MiniCluster of the stream: its three objects and what they say.
type miniCluster struct {
	config, job, service *object
	params               parameters
	size, port           int
	volume               string // name of the pod volume that mounts the broker ConfigMap
}

func (mc *miniCluster) hostList() string { return hostlist.Indexed(mc.job.name, mc.params.MaxSize) }

// domain is what follows a pod's hostname in its FQDN.
func (mc *miniCluster) domain() string {
	return fmt.Sprintf("%s.%s.svc.%s", mc.service.name, mc.job.namespace, mc.params.ClusterDomain)
}

func (mc *miniCluster) connectTemplate() string { return "tcp://%h." + mc.domain() + ":%p" }

// fixMiniClusters finds every MiniCluster of the stream by its broker ConfigMap, checks that it
// works as Kubernetes will create it, and brings the ConfigMap (broker.toml, hosts, size,
// parameters) in line with the final Job and Service.
func fixMiniClusters(segs []*segment) error {
	objs := objectsOf(segs)
	claimed := map[*object]bool{}
	for _, cm := range objs {
		if !cm.is("v1", "ConfigMap") {
			continue
		}
		if _, ok := annotations(cm)[ParametersAnnotation]; !ok {
			continue
		}
		mc, err := resolve(cm, objs)
		if err != nil {
			return err
		}
		claimed[mc.job] = true
		if err := mc.check(); err != nil {
			return err
		}
		if err := mc.update(); err != nil {
			return err
		}
	}
	// A Job the chart made but no broker ConfigMap claims has lost its ConfigMap.
	for _, job := range objs {
		if !job.is("batch/v1", "Job") || claimed[job] {
			continue
		}
		if _, ok := annotations(job)[MaxSizeAnnotation]; !ok {
			continue
		}
		missing := "no ConfigMap volume"
		for _, v := range elements(job.node, "spec", "template", "spec", "volumes") {
			if name := scalar(v, "configMap", "name"); name != "" && scalar(v, "name") == "broker-config" {
				missing = fmt.Sprintf("its volume broker-config names ConfigMap %q, which is not among the manifests or has no %s annotation", name, ParametersAnnotation)
			}
		}
		return fmt.Errorf("Job %s is a MiniCluster (annotation %s) but its broker ConfigMap is missing: %s; keep the chart's broker ConfigMap (<release>-broker) in the output of your overlay", ref(job), MaxSizeAnnotation, missing)
	}
	return nil
}

// ref names an object for messages: namespace/name, or name alone when it has no namespace.
func ref(o *object) string {
	if o.namespace == "" {
		return o.name
	}
	return o.namespace + "/" + o.name
}

// resolve finds the Job that mounts the broker ConfigMap cm and the Service of the Job's pods.
func resolve(cm *object, objs []*object) (*miniCluster, error) {
	mc := &miniCluster{config: cm}
	dec := json.NewDecoder(strings.NewReader(annotations(cm)[ParametersAnnotation]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&mc.params); err != nil {
		return nil, fmt.Errorf("ConfigMap %s: annotation %s is not the chart's parameters JSON: %v; keep the annotation as the chart renders it", ref(cm), ParametersAnnotation, err)
	}
	p := mc.params
	if p.MaxSize < 1 || p.MaxSize > maxIndexedCompletions {
		return nil, fmt.Errorf("ConfigMap %s: annotation %s has maxSize=%d; it must be 1-%d (an indexed Job's completions limit)", ref(cm), ParametersAnnotation, p.MaxSize, maxIndexedCompletions)
	}
	if !dnsSubdomain.MatchString(p.ClusterDomain) {
		return nil, fmt.Errorf("ConfigMap %s: annotation %s has clusterDomain=%q, which is not a DNS name; set clusterDomain to your cluster's DNS domain (cluster.local by default)", ref(cm), ParametersAnnotation, p.ClusterDomain)
	}
	if cm.namespace == "" {
		return nil, fmt.Errorf("ConfigMap %s has no metadata.namespace: the brokers' FQDNs (<host>.<service>.<namespace>.svc.%s) need it; render with the chart unchanged (it sets the namespace on every object) or set namespace: in your kustomization", cm.name, p.ClusterDomain)
	}

	var mounting []*object
	for _, job := range objs {
		if !job.is("batch/v1", "Job") || (job.namespace != cm.namespace && job.namespace != "") {
			continue
		}
		for _, v := range elements(job.node, "spec", "template", "spec", "volumes") {
			if scalar(v, "configMap", "name") == cm.name {
				if job.namespace == "" {
					return nil, fmt.Errorf("Job %s has no metadata.namespace (its broker ConfigMap is in %s): the brokers' FQDNs need it; set namespace: in your kustomization or keep the chart's", job.name, cm.namespace)
				}
				mounting = append(mounting, job)
				mc.volume = scalar(v, "name")
				break
			}
		}
	}
	named := find(objs, "batch/v1", "Job", cm.namespace, p.Job)
	switch {
	case len(mounting) == 0 && named != nil:
		return nil, fmt.Errorf("broker ConfigMap %s names Job %q in its parameters, but that Job does not mount it (no pod volume with configMap.name: %s); mount the broker ConfigMap in the Job's pods", ref(cm), p.Job, cm.name)
	case len(mounting) == 0:
		return nil, fmt.Errorf("broker ConfigMap %s is mounted by no Job in namespace %s (its parameters name Job %q, which is not among the manifests); keep the chart's Job and its broker-config volume", ref(cm), cm.namespace, p.Job)
	case len(mounting) > 1:
		return nil, fmt.Errorf("broker ConfigMap %s is mounted by %d Jobs (%s and %s); each MiniCluster needs its own broker ConfigMap", ref(cm), len(mounting), mounting[0].name, mounting[1].name)
	}
	mc.job = mounting[0]
	if named != nil && named != mc.job {
		return nil, fmt.Errorf("broker ConfigMap %s names Job %q in its parameters but is mounted by Job %q; a broker ConfigMap belongs to one MiniCluster: give each Job its own", ref(cm), p.Job, mc.job.name)
	}

	subdomain := scalar(mc.job.node, "spec", "template", "spec", "subdomain")
	if subdomain == "" {
		return nil, fmt.Errorf("Job %s has no spec.template.spec.subdomain: its pods get no DNS names; set it to the name of the MiniCluster's headless Service", ref(mc.job))
	}
	mc.service = find(objs, "v1", "Service", mc.job.namespace, subdomain)
	if mc.service == nil {
		return nil, fmt.Errorf("Job %s has subdomain %q, but there is no Service %q in namespace %s (Services there: %s); the subdomain must name the MiniCluster's headless Service", ref(mc.job), subdomain, subdomain, mc.job.namespace, serviceNames(objs, mc.job.namespace))
	}
	return mc, nil
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

// intField reads an integer field of the Job.
func intField(o *object, path ...string) (int, error) {
	v := scalar(o.node, path...)
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("Job %s: %s is %q, not an integer; set it to the MiniCluster's size", ref(o), strings.Join(path, "."), v)
	}
	return n, nil
}

// check validates the MiniCluster as Kubernetes and flux-core will see it.
func (mc *miniCluster) check() error {
	job, svc, p := mc.job, mc.service, mc.params
	if job.namespace == "" {
		return fmt.Errorf("Job %s has no metadata.namespace: the brokers' FQDNs need it; set namespace: in your kustomization", job.name)
	}
	if mode := scalar(job.node, "spec", "completionMode"); mode != "Indexed" {
		return fmt.Errorf("Job %s has completionMode %q; a MiniCluster needs an Indexed Job (pod i is hostname <job>-i): set spec.completionMode: Indexed", ref(job), mode)
	}
	completions, err := intField(job, "spec", "completions")
	if err != nil {
		return err
	}
	parallelism, err := intField(job, "spec", "parallelism")
	if err != nil {
		return err
	}
	if completions != parallelism {
		return fmt.Errorf("Job %s has completions=%d but parallelism=%d; every broker runs at once, so set both to the size", ref(job), completions, parallelism)
	}
	mc.size = completions
	if mc.size < 1 {
		return fmt.Errorf("Job %s has completions=%d; a MiniCluster needs at least 1 broker", ref(job), mc.size)
	}
	if mc.size > p.MaxSize {
		return fmt.Errorf("Job %s has size %d (completions and parallelism) but maxSize is %d, the number of hosts broker.toml lists; set size to at most %d, or install with maxSize >= %d", ref(job), mc.size, p.MaxSize, p.MaxSize, mc.size)
	}
	if v, ok := annotations(job)[MaxSizeAnnotation]; ok && v != strconv.Itoa(p.MaxSize) {
		return fmt.Errorf("Job %s has annotation %s=%q but its broker ConfigMap %s says maxSize=%d; keep both as the chart renders them", ref(job), MaxSizeAnnotation, v, ref(mc.config), p.MaxSize)
	}

	// Kubernetes names pod i "<job>-<i>" and uses that as its hostname.
	if !dnsLabel.MatchString(job.name) {
		return fmt.Errorf("Job name %q cannot start the pods' hostnames (<job>-<index>): a hostname must be a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit); rename the Job", job.name)
	}
	if last := fmt.Sprintf("%s-%d", job.name, p.MaxSize-1); len(last) > 63 {
		return fmt.Errorf("hostname %q (Job %s, maxSize=%d) is %d characters; a hostname may have at most 63: shorten the Job name to at most %d characters", last, ref(job), p.MaxSize, len(last), 62-len(strconv.Itoa(p.MaxSize-1)))
	}
	if !dns1035Label.MatchString(svc.name) || len(svc.name) > 63 {
		return fmt.Errorf("Service name %q is not a DNS label (at most 63 lower-case letters, digits and '-', starting with a letter); the pods' FQDNs need one: rename the Service and the Job's subdomain", svc.name)
	}

	if ip := scalar(svc.node, "spec", "clusterIP"); ip != "None" {
		return fmt.Errorf("Service %s is not headless (spec.clusterIP is %q): pods get per-pod DNS names only from a headless Service; set spec.clusterIP: None", ref(svc), ip)
	}
	selector := stringMap(svc.node, "spec", "selector")
	if len(selector) == 0 {
		return fmt.Errorf("Service %s has no spec.selector: it would publish no pod's DNS name; select the Job's pods (e.g. job-name: %s)", ref(svc), job.name)
	}
	labels := stringMap(job.node, "spec", "template", "metadata", "labels")
	if labels == nil {
		labels = map[string]string{}
	}
	// Kubernetes adds these to every pod of the Job.
	labels["job-name"] = job.name
	labels["batch.kubernetes.io/job-name"] = job.name
	for _, key := range sortedKeys(selector) {
		if labels[key] != selector[key] {
			return fmt.Errorf("Service %s selects %s=%s, but the pods of Job %s have %s; the Service must select the Job's pods (fix the selector or the pod template's labels)", ref(svc), key, selector[key], ref(job), describeLabel(labels, key))
		}
	}
	return mc.checkPort()
}

func describeLabel(labels map[string]string, key string) string {
	if v, ok := labels[key]; ok {
		return key + "=" + v
	}
	return "no label " + key
}

// checkPort decides the brokers' port: the containerPort named "broker" of the container that
// mounts the broker ConfigMap (what the pods declare they listen on), else the chart's value.
// The Service, through which clients and helm test reach the brokers, must agree with it.
func (mc *miniCluster) checkPort() error {
	mc.port = mc.params.Port
	from := fmt.Sprintf("the chart's flux.port (ConfigMap %s)", ref(mc.config))
	namedPort := false
	for _, c := range elements(mc.job.node, "spec", "template", "spec", "containers") {
		mounts := false
		for _, m := range elements(c, "volumeMounts") {
			if scalar(m, "name") == mc.volume {
				mounts = true
			}
		}
		if !mounts {
			continue
		}
		for _, port := range elements(c, "ports") {
			if scalar(port, "name") != "broker" {
				continue
			}
			n, err := strconv.Atoi(scalar(port, "containerPort"))
			if err != nil {
				return fmt.Errorf("Job %s: container %s port broker has containerPort %q, not a number", ref(mc.job), scalar(c, "name"), scalar(port, "containerPort"))
			}
			mc.port, namedPort = n, true
			from = fmt.Sprintf("Job %s container %s port broker", ref(mc.job), scalar(c, "name"))
		}
	}
	if mc.port < 1 || mc.port > 65535 {
		return fmt.Errorf("%s is %d, not a TCP port; use 1-65535 (8050 by convention)", from, mc.port)
	}
	ports := elements(mc.service.node, "spec", "ports")
	var svcPort *yaml.RNode
	for _, port := range ports {
		if scalar(port, "name") == "broker" {
			svcPort = port
		}
	}
	if svcPort == nil && len(ports) == 1 {
		svcPort = ports[0]
	}
	if svcPort == nil {
		return nil
	}
	if port := scalar(svcPort, "port"); port != strconv.Itoa(mc.port) {
		return fmt.Errorf("Service %s port is %s but the brokers listen on %d (%s); brokers connect pod to pod on that port: patch the Service port and the container port to the same value", ref(mc.service), port, mc.port, from)
	}
	target := scalar(svcPort, "targetPort")
	switch {
	case target == "" || target == strconv.Itoa(mc.port):
	case target == "broker" && namedPort:
	default:
		return fmt.Errorf("Service %s targetPort is %q but the brokers listen on %d (%s); set targetPort: broker", ref(mc.service), target, mc.port, from)
	}
	return nil
}

// update writes broker.toml, hosts, size and the parameters into the broker ConfigMap when
// they differ from what the final objects require; equal content keeps the input's bytes.
func (mc *miniCluster) update() error {
	cm := mc.config
	text := scalar(cm.node, "data", "broker.toml")
	if text == "" {
		return fmt.Errorf("broker ConfigMap %s has no data broker.toml; keep the chart's broker.toml (or set flux.brokerConfig)", ref(cm))
	}
	cfg, err := parseBrokerTOML(text)
	if err != nil {
		return fmt.Errorf("broker ConfigMap %s data broker.toml is %w", ref(cm), err)
	}
	if err := checkBootstrap(cfg); err != nil {
		return fmt.Errorf("broker ConfigMap %s data broker.toml: %w", ref(cm), err)
	}
	changed := false
	if mc.params.Custom {
		if err := mc.checkCustom(cfg); err != nil {
			return fmt.Errorf("broker ConfigMap %s data broker.toml (your flux.brokerConfig): %w", ref(cm), err)
		}
	} else if want := withComputed(cfg, mc); !sameConfig(cfg, want) {
		out, err := encodeBrokerTOML(want)
		if err != nil {
			return fmt.Errorf("broker ConfigMap %s: encode broker.toml: %w", ref(cm), err)
		}
		if _, err := setScalar(cm.node, out, yaml.LiteralStyle, "data", "broker.toml"); err != nil {
			return err
		}
		changed = true
	}
	for _, kv := range [][2]string{{"hosts", mc.hostList()}, {"size", strconv.Itoa(mc.size)}} {
		c, err := setScalar(cm.node, kv[1], yaml.DoubleQuotedStyle, "data", kv[0])
		if err != nil {
			return err
		}
		changed = changed || c
	}
	p := mc.params
	p.Job, p.Service, p.Port = mc.job.name, mc.service.name, mc.port
	if p != mc.params {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(true)
		if err := enc.Encode(p); err != nil {
			return err
		}
		if _, err := setScalar(cm.node, strings.TrimSpace(b.String()), yaml.SingleQuotedStyle, "metadata", "annotations", ParametersAnnotation); err != nil {
			return err
		}
		changed = true
	}
	cm.seg.changed = cm.seg.changed || changed
	return nil
}

// checkCustom checks a user's broker.toml against the final objects: its hosts must be the
// Job's pod hostnames in index order (rank i is pod i) and its port the brokers' port.
func (mc *miniCluster) checkCustom(cfg map[string]any) error {
	bs, _ := cfg["bootstrap"].(map[string]any)
	if bs == nil {
		return fmt.Errorf("it has no [bootstrap] table; list the brokers: hosts = [{ host = %q }]", mc.hostList())
	}
	if port, ok := bs["default_port"].(int64); ok && port != int64(mc.port) {
		return fmt.Errorf("default_port = %d but the brokers listen on %d; set default_port = %d", port, mc.port, mc.port)
	}
	hosts, _ := tables(bs["hosts"])
	var got []string
	for _, h := range hosts {
		list, _ := h["host"].(string)
		expanded, err := hostlist.Expand(list, mc.params.MaxSize)
		if err != nil {
			return fmt.Errorf("hosts: %w; the pods are %s", err, mc.hostList())
		}
		got = append(got, expanded...)
		if len(got) > mc.params.MaxSize {
			break
		}
	}
	same := len(got) == mc.params.MaxSize
	for i := 0; same && i < len(got); i++ {
		same = got[i] == fmt.Sprintf("%s-%d", mc.job.name, i)
	}
	if !same {
		return fmt.Errorf("hosts lists %s, but the brokers are the pods %s in this order (rank i is pod i); set hosts = [{ host = %q }]", describeHosts(got), mc.hostList(), mc.hostList())
	}
	return nil
}

func describeHosts(hosts []string) string {
	switch {
	case len(hosts) == 0:
		return "no host"
	case len(hosts) <= 4:
		return strings.Join(hosts, ",")
	}
	return fmt.Sprintf("%d hosts (%s ... %s)", len(hosts), hosts[0], hosts[len(hosts)-1])
}
