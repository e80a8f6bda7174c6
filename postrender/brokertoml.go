package postrender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// The [bootstrap] keys flux-core accepts (flux-config-bootstrap(5)); it rejects any other.
var (
	bootstrapKeys = []string{"curve_cert", "default_port", "default_bind", "default_connect", "hosts", "enable_ipv6"}
	hostKeys      = []string{"host", "bind", "connect", "parent"}
)

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseBrokerTOML decodes broker.toml into a map, as flux-core reads it.
func parseBrokerTOML(text string) (map[string]any, error) {
	cfg := map[string]any{}
	if _, err := toml.Decode(text, &cfg); err != nil {
		return nil, fmt.Errorf("not valid TOML: %w", err)
	}
	return cfg, nil
}

// tables returns v as a list of tables: TOML decodes [[a.b]] and a.b = [{...}] to different Go
// types.
func tables(v any) ([]map[string]any, bool) {
	switch t := v.(type) {
	case []map[string]any:
		return t, true
	case []any:
		out := make([]map[string]any, 0, len(t))
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out = append(out, m)
		}
		return out, true
	}
	return nil, false
}

// checkBootstrap applies flux-core's strict rules for [bootstrap]: known keys only, hosts an
// array of tables each with a host string and only known keys.
func checkBootstrap(cfg map[string]any) error {
	raw, ok := cfg["bootstrap"]
	if !ok {
		return nil
	}
	bs, ok := raw.(map[string]any)
	if !ok {
		return fmt.Errorf("bootstrap must be a table ([bootstrap]), not %T", raw)
	}
	for _, key := range sortedKeys(bs) {
		if !contains(bootstrapKeys, key) {
			return fmt.Errorf("[bootstrap] has key %q, which flux-core rejects: the allowed keys are %s", key, strings.Join(bootstrapKeys, ", "))
		}
	}
	if port, ok := bs["default_port"]; ok {
		if _, isInt := port.(int64); !isInt {
			return fmt.Errorf("[bootstrap] default_port = %#v must be an integer", port)
		}
	}
	for _, key := range []string{"curve_cert", "default_bind", "default_connect"} {
		if v, ok := bs[key]; ok {
			if _, isString := v.(string); !isString {
				return fmt.Errorf("[bootstrap] %s = %v must be a string", key, v)
			}
		}
	}
	hostsRaw, ok := bs["hosts"]
	if !ok {
		return nil
	}
	hosts, ok := tables(hostsRaw)
	if !ok {
		return fmt.Errorf("[bootstrap] hosts must be an array of tables like [{ host = \"name-[0-3]\" }], not %v", hostsRaw)
	}
	for i, h := range hosts {
		for _, key := range sortedKeys(h) {
			if !contains(hostKeys, key) {
				return fmt.Errorf("[bootstrap] hosts[%d] has key %q, which flux-core rejects: the allowed keys are %s", i, key, strings.Join(hostKeys, ", "))
			}
			if _, isString := h[key].(string); !isString {
				return fmt.Errorf("[bootstrap] hosts[%d].%s = %v must be a string", i, key, h[key])
			}
		}
		if _, ok := h["host"]; !ok {
			return fmt.Errorf("[bootstrap] hosts[%d] has no host", i)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// withComputed returns a copy of cfg whose [bootstrap] keys the post-renderer owns and
// [resource] path are set from the MiniCluster; every other key and table is kept.
func withComputed(cfg map[string]any, mc *miniCluster) map[string]any {
	out := make(map[string]any, len(cfg)+2)
	for k, v := range cfg {
		out[k] = v
	}
	bs := map[string]any{}
	if old, ok := cfg["bootstrap"].(map[string]any); ok {
		for k, v := range old {
			bs[k] = v
		}
	}
	bs["curve_cert"] = mc.params.CurveCert
	bs["default_port"] = int64(mc.port)
	bs["default_bind"] = "tcp://" + mc.params.Interface + ":%p"
	bs["default_connect"] = mc.connectTemplate()
	bs["hosts"] = []map[string]any{{"host": mc.hostList()}}
	out["bootstrap"] = bs
	res := map[string]any{}
	if old, ok := cfg["resource"].(map[string]any); ok {
		for k, v := range old {
			res[k] = v
		}
	}
	res["path"] = mc.params.ResourcePath
	out["resource"] = res
	return out
}

// sameConfig compares two decoded configs by value, whatever Go types the decoder chose.
func sameConfig(a, b map[string]any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// encodeBrokerTOML writes cfg as TOML (keys sorted, stable).
func encodeBrokerTOML(cfg map[string]any) (string, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(cfg); err != nil {
		return "", err
	}
	return b.String(), nil
}
