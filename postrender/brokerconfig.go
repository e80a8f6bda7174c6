package postrender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The edits of the broker ConfigMap. Each writes a value only when it differs from what the
// final objects require, so that equal content keeps the input's bytes.

// brokerTOML checks data broker.toml as flux-core reads it, and recomputes the keys the
// post-renderer owns from the final Job, Service and namespace. A user's flux.brokerConfig is
// checked against them instead, never rewritten.
type brokerTOML struct{}

func (brokerTOML) apply(mc *miniCluster) error {
	cm := mc.config
	cfg, err := readBrokerTOML(cm)
	if err != nil {
		return err
	}
	bp, err := mc.brokerPort()
	if err != nil {
		return err
	}
	if mc.params.Custom {
		if err := mc.checkCustom(cfg, bp.n); err != nil {
			return fmt.Errorf("broker ConfigMap %s data broker.toml (your flux.brokerConfig): %w", ref(cm), err)
		}
		return nil
	}
	want := withComputed(cfg, mc.bootstrap(bp.n), mc.params.ResourcePath)
	if sameConfig(cfg, want) {
		return nil
	}
	out, err := encodeBrokerTOML(want)
	if err != nil {
		return fmt.Errorf("broker ConfigMap %s: encode broker.toml: %w", ref(cm), err)
	}
	return setData(cm, "broker.toml", out, yaml.LiteralStyle)
}

// readBrokerTOML parses and checks the broker ConfigMap's data broker.toml.
func readBrokerTOML(cm *object) (map[string]any, error) {
	text := scalar(cm.node, "data", "broker.toml")
	if text == "" {
		return nil, fmt.Errorf("broker ConfigMap %s has no data broker.toml; keep the chart's broker.toml (or set flux.brokerConfig)", ref(cm))
	}
	cfg, err := parseBrokerTOML(text)
	if err != nil {
		return nil, fmt.Errorf("broker ConfigMap %s data broker.toml is %w", ref(cm), err)
	}
	if err := checkBootstrap(cfg); err != nil {
		return nil, fmt.Errorf("broker ConfigMap %s data broker.toml: %w", ref(cm), err)
	}
	return cfg, nil
}

// bootstrap is the [bootstrap] table the post-renderer writes for brokers on port.
func (mc *miniCluster) bootstrap(port int) map[string]any {
	return map[string]any{
		"curve_cert":      mc.params.CurveCert,
		"default_port":    int64(port),
		"default_bind":    "tcp://" + mc.params.Interface + ":%p",
		"default_connect": mc.connectTemplate(),
		"hosts":           []map[string]any{{"host": mc.hostList()}},
	}
}

// plainKeys writes the plain values scripts read instead of parsing broker.toml: data hosts
// (the brokers' hostlist), size (the Job's completions), domain (what follows a broker's
// hostname in its FQDN) and port.
type plainKeys struct{}

func (plainKeys) apply(mc *miniCluster) error {
	size, err := mc.size()
	if err != nil {
		return err
	}
	bp, err := mc.brokerPort()
	if err != nil {
		return err
	}
	for _, kv := range [][2]string{{"hosts", mc.hostList()}, {"size", strconv.Itoa(size)}, {"domain", mc.domain()}, {"port", strconv.Itoa(bp.n)}} {
		if err := setData(mc.config, kv[0], kv[1], yaml.DoubleQuotedStyle); err != nil {
			return err
		}
	}
	return nil
}

// setData sets data[key] of the ConfigMap, keeping the style of an existing value.
func setData(cm *object, key, value string, style yaml.Style) error {
	if _, err := setScalar(cm.node, value, style, "data", key); err != nil {
		return fmt.Errorf("broker ConfigMap %s: set data %s: %w", ref(cm), key, err)
	}
	return nil
}

// parametersOut records the final names of the Job and the Service and the brokers' port in
// the parameters annotation, so a second run (and helm test) sees the MiniCluster as it is.
type parametersOut struct{}

func (parametersOut) apply(mc *miniCluster) error {
	bp, err := mc.brokerPort()
	if err != nil {
		return err
	}
	p := mc.params
	p.Job, p.Service, p.Port = mc.job.name, mc.service.name, bp.n
	if p == mc.params {
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("broker ConfigMap %s: encode annotation %s: %w", ref(mc.config), ParametersAnnotation, err)
	}
	if _, err := setScalar(mc.config.node, strings.TrimSpace(b.String()), yaml.SingleQuotedStyle, "metadata", "annotations", ParametersAnnotation); err != nil {
		return fmt.Errorf("broker ConfigMap %s: set annotation %s: %w", ref(mc.config), ParametersAnnotation, err)
	}
	return nil
}

// checkCustom checks a user's broker.toml against the final objects: its hosts must be the
// Job's pod hostnames in index order (rank i is pod i) and its port the brokers' port.
func (mc *miniCluster) checkCustom(cfg map[string]any, port int) error {
	bs, _ := cfg["bootstrap"].(map[string]any)
	if bs == nil {
		return fmt.Errorf("it has no [bootstrap] table; list the brokers: hosts = [{ host = %q }]", mc.hostList())
	}
	if p, ok := bs["default_port"].(int64); ok && p != int64(port) {
		return fmt.Errorf("default_port = %d but the brokers listen on %d; set default_port = %d", p, port, port)
	}
	got, err := expandHosts(bs, mc.params.MaxSize)
	if err != nil {
		return fmt.Errorf("hosts: %w; the pods are %s", err, mc.hostList())
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
