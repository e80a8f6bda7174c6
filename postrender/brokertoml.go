package postrender

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/minicluster/minicluster/internal/hostlist"
)

// The [bootstrap] keys flux-core accepts (flux-config-bootstrap(5)); it rejects any other.
// This is the one list in the repository: use BootstrapKeys and HostKeys elsewhere.
var (
	bootstrapKeys = []string{"curve_cert", "default_port", "default_bind", "default_connect", "hosts", "enable_ipv6"}
	hostKeys      = []string{"host", "bind", "connect", "parent"}
	// stringKeys are the [bootstrap] keys whose values are strings.
	stringKeys = []string{"curve_cert", "default_bind", "default_connect"}
)

// BootstrapKeys returns the keys flux-core accepts in broker.toml's [bootstrap] table, in the
// order of flux-config-bootstrap(5).
func BootstrapKeys() []string { return slices.Clone(bootstrapKeys) }

// HostKeys returns the keys flux-core accepts in an entry of [bootstrap] hosts.
func HostKeys() []string { return slices.Clone(hostKeys) }

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

// checkBootstrap applies flux-core's strict rules for [bootstrap]: known keys only, each of
// its type, and hosts an array of tables each with a host string and only known keys.
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
		if !slices.Contains(bootstrapKeys, key) {
			return fmt.Errorf("[bootstrap] has key %q, which flux-core rejects: the allowed keys are %s", key, strings.Join(bootstrapKeys, ", "))
		}
	}
	if port, ok := bs["default_port"]; ok {
		if _, isInt := port.(int64); !isInt {
			return fmt.Errorf("[bootstrap] default_port = %#v must be an integer", port)
		}
	}
	for _, key := range stringKeys {
		if v, ok := bs[key]; ok {
			if _, isString := v.(string); !isString {
				return fmt.Errorf("[bootstrap] %s = %v must be a string", key, v)
			}
		}
	}
	if hosts, ok := bs["hosts"]; ok {
		return checkHosts(hosts)
	}
	return nil
}

// checkHosts applies flux-core's rules to the value of [bootstrap] hosts.
func checkHosts(raw any) error {
	hosts, ok := tables(raw)
	if !ok {
		return fmt.Errorf("[bootstrap] hosts must be an array of tables like [{ host = \"name-[0-3]\" }], not %v", raw)
	}
	for i, h := range hosts {
		for _, key := range sortedKeys(h) {
			if !slices.Contains(hostKeys, key) {
				return fmt.Errorf("[bootstrap] hosts[%d] has key %q, which flux-core rejects: the allowed keys are %s", i, key, strings.Join(hostKeys, ", "))
			}
			if _, isString := h[key].(string); !isString {
				return fmt.Errorf("[bootstrap] hosts[%d].%s = %v must be a string", i, key, h[key])
			}
		}
		if _, ok := h["host"]; !ok {
			return fmt.Errorf("[bootstrap] hosts[%d] has no host; give each entry one: { host = \"name-[0-3]\" }", i)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// withComputed returns a copy of cfg with the given [bootstrap] keys and [resource] path set;
// every other key and table is kept.
func withComputed(cfg, bootstrap map[string]any, resourcePath string) map[string]any {
	out := maps.Clone(cfg)
	bs := map[string]any{}
	if old, ok := cfg["bootstrap"].(map[string]any); ok {
		maps.Copy(bs, old)
	}
	maps.Copy(bs, bootstrap)
	out["bootstrap"] = bs
	res := map[string]any{}
	if old, ok := cfg["resource"].(map[string]any); ok {
		maps.Copy(res, old)
	}
	res["path"] = resourcePath
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
	if err := enc.Encode(cfg); err != nil {
		return "", err
	}
	return b.String(), nil
}

// expandHosts lists the hosts of [bootstrap] hosts in rank order, stopping past limit+1.
func expandHosts(bs map[string]any, limit int) ([]string, error) {
	hosts, _ := tables(bs["hosts"])
	var got []string
	for _, h := range hosts {
		list, _ := h["host"].(string)
		expanded, err := hostlist.Expand(list, limit)
		if err != nil {
			return nil, err
		}
		got = append(got, expanded...)
		if len(got) > limit {
			break
		}
	}
	return got, nil
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
