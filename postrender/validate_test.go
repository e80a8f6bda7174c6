package postrender_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/minicluster/minicluster/internal/helmtest"
	"github.com/minicluster/minicluster/postrender"
)

// TestRejects: each way a MiniCluster cannot work is an error that says what and how to fix it,
// and nothing is written.
func TestRejects(t *testing.T) {
	base := chart(t, helmtest.Options{})
	custom := chart(t, helmtest.Options{ValuesFiles: []string{"postrender/testdata/custom-broker-config.yaml"}})
	job := func(fn ...func(*yaml.RNode)) string {
		s := base
		for _, f := range fn {
			s = edit(t, s, "Job", "flux-sample", f)
		}
		return s
	}
	service := func(fn func(*yaml.RNode)) string { return edit(t, base, "Service", "flux-sample", fn) }
	config := func(fn func(*yaml.RNode)) string { return edit(t, base, "ConfigMap", "flux-sample-broker", fn) }
	allNamespaces := func(s string) string {
		return strings.ReplaceAll(s, "\n  namespace: default\n", "\n")
	}
	long := strings.Repeat("a", 61)

	cases := []struct {
		name, in string
		want     []string
	}{
		{"empty input", "", []string{"no manifests on the input", "--post-renderer"}},
		{"comments only", "---\n# Source: minicluster/templates/x.yaml\n", []string{"no manifests on the input"}},
		{"not YAML", "a: [b\n", []string{"manifest 0 is not valid YAML"}},

		{"Service missing", drop(t, base, "Service", "flux-sample"),
			[]string{`Job default/flux-sample has subdomain "flux-sample", but there is no Service "flux-sample" in namespace default (Services there: none)`}},
		{"Service not headless", service(set(t, "10.96.0.10", "spec", "clusterIP")),
			[]string{`Service default/flux-sample is not headless (spec.clusterIP is "10.96.0.10")`, "set spec.clusterIP: None"}},
		{"Service without selector", service(clear(t, "spec", "selector")),
			[]string{"Service default/flux-sample has no spec.selector"}},
		{"selector does not match the pods", service(set(t, "other", "spec", "selector", "app.kubernetes.io/instance")),
			[]string{"Service default/flux-sample selects app.kubernetes.io/instance=other, but the pods of Job default/flux-sample have app.kubernetes.io/instance=flux-sample"}},
		{"selector on a label the pods lack", service(set(t, "x", "spec", "selector", "tier")),
			[]string{"selects tier=x, but the pods of Job default/flux-sample have no label tier"}},
		{"subdomain not the Service", job(set(t, "brokers", "spec", "template", "spec", "subdomain")),
			[]string{`Job default/flux-sample has subdomain "brokers", but there is no Service "brokers" in namespace default (Services there: flux-sample)`}},
		{"no subdomain", job(clear(t, "spec", "template", "spec", "subdomain")),
			[]string{"Job default/flux-sample has no spec.template.spec.subdomain"}},
		{"completions != parallelism", job(set(t, "3", "spec", "parallelism")),
			[]string{"Job default/flux-sample has completions=4 but parallelism=3"}},
		{"size > maxSize", job(set(t, "17", "spec", "parallelism"), set(t, "17", "spec", "completions")),
			[]string{"Job default/flux-sample has size 17 (completions and parallelism) but maxSize is 16"}},
		{"size 0", job(set(t, "0", "spec", "parallelism"), set(t, "0", "spec", "completions")),
			[]string{"has completions=0; a MiniCluster needs at least 1 broker"}},
		{"not indexed", job(set(t, "NonIndexed", "spec", "completionMode")),
			[]string{`Job default/flux-sample has completionMode "NonIndexed"`, "Indexed"}},
		{"max-size annotation differs", job(set(t, `"20"`, "metadata", "annotations", "minicluster.dev/max-size")),
			[]string{`annotation minicluster.dev/max-size="20" but its broker ConfigMap default/flux-sample-broker says maxSize=16`}},
		{"hostname over 63 characters", job(set(t, long, "metadata", "name")),
			[]string{`hostname "` + long + `-15" (Job default/` + long + `, maxSize=16) is 64 characters; a hostname may have at most 63: shorten the Job name to at most 60 characters`}},
		{"hostname not a DNS label", job(set(t, "Flux_Sample", "metadata", "name")),
			[]string{`Job name "Flux_Sample" cannot start the pods' hostnames`}},
		{"namespace missing everywhere", allNamespaces(base),
			[]string{"ConfigMap flux-sample-broker has no metadata.namespace"}},
		{"namespace missing on the Job", job(clear(t, "metadata", "namespace")),
			[]string{"Job flux-sample has no metadata.namespace (its broker ConfigMap is in default)"}},
		{"broker ConfigMap missing", drop(t, base, "ConfigMap", "flux-sample-broker"),
			[]string{"Job default/flux-sample is a MiniCluster (annotation minicluster.dev/max-size) but its broker ConfigMap is missing", `names ConfigMap "flux-sample-broker", which is not among the manifests`}},
		{"broker ConfigMap names another Job", replace(t, base, `"job":"flux-sample",`, `"job":"flux-sample-keygen",`),
			[]string{`broker ConfigMap default/flux-sample-broker names Job "flux-sample-keygen" in its parameters but is mounted by Job "flux-sample"`}},
		{"broker ConfigMap not mounted by its Job", replace(t, base, "name: flux-sample-broker\n        - name: keys", "name: other-broker\n        - name: keys"),
			[]string{`broker ConfigMap default/flux-sample-broker names Job "flux-sample" in its parameters, but that Job does not mount it`}},
		{"broker ConfigMap of a missing Job", drop(t, base, "Job", "flux-sample"),
			[]string{"broker ConfigMap default/flux-sample-broker is mounted by no Job in namespace default"}},
		{"parameters not JSON", config(set(t, "'{job: x}'", "metadata", "annotations", postrender.ParametersAnnotation)),
			[]string{"ConfigMap default/flux-sample-broker: annotation minicluster.dev/parameters is not the chart's parameters JSON"}},
		{"no broker.toml", config(clear(t, "data", "broker.toml")),
			[]string{"broker ConfigMap default/flux-sample-broker has no data broker.toml"}},
		{"broker.toml not TOML", replace(t, base, "default_port = 8050\n", "default_port = \n"),
			[]string{"broker ConfigMap default/flux-sample-broker data broker.toml is not valid TOML"}},
		{"unknown [bootstrap] key", replace(t, base, "default_port = 8050\n", "default_port = 8050\n      tbon_fanout = 2\n"),
			[]string{`[bootstrap] has key "tbon_fanout", which flux-core rejects: the allowed keys are ` + strings.Join(postrender.BootstrapKeys(), ", ")}},
		{"unknown hosts key", replace(t, base, `host = "flux-sample-[0-15]"`, "host = \"flux-sample-[0-15]\"\n        rank = \"0\""),
			[]string{`[bootstrap] hosts[0] has key "rank", which flux-core rejects: the allowed keys are ` + strings.Join(postrender.HostKeys(), ", ")}},
		{"hosts entry without host", replace(t, base, `host = "flux-sample-[0-15]"`, `bind = "tcp://eth0:1"`),
			[]string{"[bootstrap] hosts[0] has no host"}},
		{"default_port not an integer", replace(t, base, "default_port = 8050\n", "default_port = \"8050\"\n"),
			[]string{"[bootstrap] default_port = \"8050\" must be an integer"}},
		{"Service port differs", service(set(t, "9000", "spec", "ports", "[name=broker]", "port")),
			[]string{"Service default/flux-sample port is 9000 but the brokers listen on 8050 (Job default/flux-sample container flux port broker)", "patch the Service port and the container port to the same value"}},
		{"Service targetPort differs", service(set(t, "9000", "spec", "ports", "[name=broker]", "targetPort")),
			[]string{`Service default/flux-sample targetPort is "9000" but the brokers listen on 8050`}},
		{"custom broker.toml lists other hosts", replace(t, custom, `{ host = "flux-sample-[4-15]" }`, `{ host = "flux-sample-[4-14]" }`),
			[]string{"broker ConfigMap default/flux-sample-broker data broker.toml (your flux.brokerConfig): hosts lists 15 hosts (flux-sample-0 ... flux-sample-14), but the brokers are the pods flux-sample-[0-15] in this order", `set hosts = [{ host = "flux-sample-[0-15]" }]`}},
		{"custom broker.toml out of order", replace(t, custom, `{ host = "flux-sample-[0-3]" }, { host = "flux-sample-[4-15]" }`, `{ host = "flux-sample-[4-15]" }, { host = "flux-sample-[0-3]" }`),
			[]string{"hosts lists 16 hosts (flux-sample-4 ... flux-sample-3)"}},
		{"custom broker.toml bad hostlist", replace(t, custom, `{ host = "flux-sample-[4-15]" }`, `{ host = "flux-sample-[15-4]" }`),
			[]string{`hostlist "flux-sample-[15-4]": range "15-4" in "flux-sample-[15-4]" is not N or N-M`}},
		{"custom broker.toml other port", replace(t, custom, "default_port = 8050", "default_port = 9000"),
			[]string{"default_port = 9000 but the brokers listen on 8050"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := postrender.Render([]byte(c.in), postrender.Options{})
			require.Error(t, err)
			t.Log(err)
			assert.Nil(t, out, "nothing is written on error")
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "\n", "one-line message")
		})
	}
}
