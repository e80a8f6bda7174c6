package postrender

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A small MiniCluster, one object per constant, in the shape the chart renders: each case
// below changes the object it is about and takes the others as they are.
const (
	brokerConfigYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: m-broker
  namespace: ns
  annotations:
    minicluster.dev/parameters: '{"job":"m","service":"m","maxSize":3,"port":8050,"clusterDomain":"cluster.local","interface":"eth0","curveCert":"/c","resourcePath":"/R","custom":false}'
data:
  broker.toml: |
    [bootstrap]
    curve_cert = "/c"
    default_port = 8050
    default_bind = "tcp://eth0:%p"
    default_connect = "tcp://%h.m.ns.svc.cluster.local:%p"
    hosts = [{ host = "m-[0-2]" }]

    [resource]
    path = "/R"
  hosts: "m-[0-2]"
  size: "2"
  domain: "m.ns.svc.cluster.local"
  port: "8050"
`
	serviceYAML = `apiVersion: v1
kind: Service
metadata: {name: m, namespace: ns}
spec: {clusterIP: None, selector: {app: m}, ports: [{name: broker, port: 8050, targetPort: broker}]}
`
	jobYAML = `apiVersion: batch/v1
kind: Job
metadata: {name: m, namespace: ns, annotations: {minicluster.dev/max-size: "3"}}
spec:
  completionMode: Indexed
  completions: 2
  parallelism: 2
  template:
    metadata: {labels: {app: m}}
    spec:
      subdomain: m
      containers:
      - {name: flux, ports: [{name: broker, containerPort: 8050}], volumeMounts: [{name: broker-config}]}
      volumes:
      - {name: broker-config, configMap: {name: m-broker}}
`
)

// stream joins documents with separators.
func stream(docs ...string) string { return "---\n" + strings.Join(docs, "---\n") }

// edited returns doc with each old, new pair replaced; every old must occur.
func edited(t *testing.T, doc string, oldNew ...string) string {
	t.Helper()
	for i := 0; i < len(oldNew); i += 2 {
		require.Contains(t, doc, oldNew[i])
		doc = strings.Replace(doc, oldNew[i], oldNew[i+1], 1)
	}
	return doc
}

// resolved parses input and resolves the MiniCluster of its one broker ConfigMap.
func resolved(t *testing.T, input string) (*miniCluster, []*segment, error) {
	t.Helper()
	segs, err := splitStream(input)
	require.NoError(t, err)
	objs := objectsOf(nodes(segs))
	for _, o := range objs {
		if isBrokerConfig(o) {
			mc, err := resolve(o, objs)
			return mc, segs, err
		}
	}
	t.Fatal("no broker ConfigMap in the input")
	return nil, nil, nil
}

func TestResolve(t *testing.T) {
	renamedService := edited(t, serviceYAML, "name: m,", "name: brokers,")
	cases := []struct {
		name, input      string
		wantJob, wantSvc string
		wantErr          string
	}{
		{name: "as the chart renders it", input: stream(brokerConfigYAML, serviceYAML, jobYAML), wantJob: "m", wantSvc: "m"},
		{name: "Service renamed with the subdomain",
			input:   stream(brokerConfigYAML, renamedService, edited(t, jobYAML, "subdomain: m", "subdomain: brokers")),
			wantJob: "m", wantSvc: "brokers"},
		{name: "Job renamed", input: stream(brokerConfigYAML, serviceYAML, edited(t, jobYAML, "name: m,", "name: team-m,")),
			wantJob: "team-m", wantSvc: "m"},
		{name: "subdomain names no Service", input: stream(brokerConfigYAML, renamedService, jobYAML),
			wantErr: `the Job ns/m has subdomain "m", but there is no Service "m" in namespace ns (Services there: brokers)`},
		{name: "no subdomain", input: stream(brokerConfigYAML, serviceYAML, edited(t, jobYAML, "      subdomain: m\n", "")),
			wantErr: "the Job ns/m has no spec.template.spec.subdomain"},
		{name: "no Job mounts the ConfigMap", input: stream(brokerConfigYAML, serviceYAML),
			wantErr: `broker ConfigMap ns/m-broker is mounted by no Job in namespace ns (its parameters name Job "m"`},
		{name: "its Job mounts another ConfigMap", input: stream(brokerConfigYAML, serviceYAML, edited(t, jobYAML, "name: m-broker", "name: other")),
			wantErr: `broker ConfigMap ns/m-broker names Job "m" in its parameters, but that Job does not mount it`},
		{name: "two Jobs mount it", input: stream(brokerConfigYAML, serviceYAML, jobYAML, edited(t, jobYAML, "name: m,", "name: m2,")),
			wantErr: "broker ConfigMap ns/m-broker is mounted by 2 Jobs (m and m2)"},
		{name: "Job without namespace", input: stream(brokerConfigYAML, serviceYAML, edited(t, jobYAML, " namespace: ns,", "")),
			wantErr: "the Job m has no metadata.namespace (its broker ConfigMap is in ns)"},
		{name: "ConfigMap without namespace", input: stream(edited(t, brokerConfigYAML, "  namespace: ns\n", ""), serviceYAML, jobYAML),
			wantErr: "broker ConfigMap m-broker has no metadata.namespace"},
		{name: "parameters not JSON", input: stream(edited(t, brokerConfigYAML, `'{"job"`, `'{job`), serviceYAML, jobYAML),
			wantErr: "broker ConfigMap ns/m-broker: annotation minicluster.dev/parameters is not the chart's parameters JSON: invalid character"},
		{name: "parameters with an unknown field", input: stream(edited(t, brokerConfigYAML, `"custom":false`, `"custom":false,"x":1`), serviceYAML, jobYAML),
			wantErr: `is not the chart's parameters JSON: json: unknown field "x"`},
		{name: "maxSize 0", input: stream(edited(t, brokerConfigYAML, `"maxSize":3`, `"maxSize":0`), serviceYAML, jobYAML),
			wantErr: "has maxSize=0; it must be 1-100000"},
		{name: "clusterDomain not a DNS name", input: stream(edited(t, brokerConfigYAML, `"cluster.local"`, `"Cluster_Local"`), serviceYAML, jobYAML),
			wantErr: `has clusterDomain="Cluster_Local", which is not a DNS name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mc, _, err := resolved(t, c.input)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.wantJob, mc.job.name)
			assert.Equal(t, c.wantSvc, mc.service.name)
		})
	}
}

// TestChecks runs each check step alone on a resolved MiniCluster: it fails with the message,
// or passes and edits nothing.
func TestChecks(t *testing.T) {
	job := func(oldNew ...string) string {
		return stream(brokerConfigYAML, serviceYAML, edited(t, jobYAML, oldNew...))
	}
	service := func(oldNew ...string) string {
		return stream(brokerConfigYAML, edited(t, serviceYAML, oldNew...), jobYAML)
	}
	cases := []struct {
		name    string
		step    step
		input   string
		wantErr string
	}{
		{"job: as rendered", jobShape{}, stream(brokerConfigYAML, serviceYAML, jobYAML), ""},
		{"job: not Indexed", jobShape{}, job("Indexed", "NonIndexed"), `the Job ns/m has completionMode "NonIndexed"; a MiniCluster needs an Indexed Job`},
		{"job: completions != parallelism", jobShape{}, job("parallelism: 2", "parallelism: 1"), "the Job ns/m has completions=2 but parallelism=1"},
		{"job: completions not a number", jobShape{}, job("completions: 2", "completions: two"), `the Job ns/m: spec.completions is "two", not an integer`},
		{"job: size 0", jobShape{}, job("completions: 2", "completions: 0", "parallelism: 2", "parallelism: 0"), "the Job ns/m has completions=0; a MiniCluster needs at least 1 broker"},
		{"job: size > maxSize", jobShape{}, job("completions: 2", "completions: 4", "parallelism: 2", "parallelism: 4"), "the Job ns/m has size 4 (completions and parallelism) but maxSize is 3"},
		{"job: max-size annotation differs", jobShape{}, job(`max-size: "3"`, `max-size: "5"`), `annotation minicluster.dev/max-size="5" but its broker ConfigMap ns/m-broker says maxSize=3`},

		{"names: as rendered", hostnames{}, stream(brokerConfigYAML, serviceYAML, jobYAML), ""},
		{"names: Job name not a DNS label", hostnames{}, job("name: m,", "name: M_1,"), `the Job name "M_1" cannot start the pods' hostnames`},
		{"names: hostname too long", hostnames{}, job("name: m,", "name: "+strings.Repeat("j", 62)+","), "is 64 characters; a hostname may have at most 63: shorten the Job name to at most 61 characters"},
		{"names: Service name not a DNS-1035 label", hostnames{},
			stream(brokerConfigYAML, edited(t, serviceYAML, "name: m,", "name: 1m,"), edited(t, jobYAML, "subdomain: m", "subdomain: 1m")),
			`the Service name "1m" is not a DNS label`},

		{"service: as rendered", headlessService{}, stream(brokerConfigYAML, serviceYAML, jobYAML), ""},
		{"service: selects by job-name", headlessService{}, service("{app: m}", "{job-name: m}"), ""},
		{"service: not headless", headlessService{}, service("clusterIP: None", "clusterIP: 10.0.0.1"), `the Service ns/m is not headless (spec.clusterIP is "10.0.0.1")`},
		{"service: no selector", headlessService{}, service("selector: {app: m}, ", ""), "the Service ns/m has no spec.selector"},
		{"service: selector misses the pods", headlessService{}, service("{app: m}", "{app: n}"), "the Service ns/m selects app=n, but the pods of Job ns/m have app=m"},
		{"service: selector on a label the pods lack", headlessService{}, service("{app: m}", "{tier: x}"), "selects tier=x, but the pods of Job ns/m have no label tier"},
		{"service: the lead alone (minimalService)", headlessService{}, service("{app: m}", "{app: m, batch.kubernetes.io/job-completion-index: '0'}"), ""},
		{"service: a worker alone", headlessService{}, service("{app: m}", "{app: m, batch.kubernetes.io/job-completion-index: '2'}"), "would publish the name of broker 2 and not the lead's"},

		{"ports: as rendered", brokerPorts{}, stream(brokerConfigYAML, serviceYAML, jobYAML), ""},
		{"ports: both patched", brokerPorts{}, stream(brokerConfigYAML, edited(t, serviceYAML, "port: 8050", "port: 9000"), edited(t, jobYAML, "containerPort: 8050", "containerPort: 9000")), ""},
		{"ports: only the Service's", brokerPorts{}, service("port: 8050", "port: 9000"),
			"the Service ns/m port is 9000 but the brokers listen on 8050 (Job ns/m container flux port broker)"},
		{"ports: only the container's", brokerPorts{}, job("containerPort: 8050", "containerPort: 9000"),
			"the Service ns/m port is 8050 but the brokers listen on 9000 (Job ns/m container flux port broker)"},
		{"ports: targetPort a number", brokerPorts{}, service("targetPort: broker", "targetPort: 8050"), ""},
		{"ports: targetPort elsewhere", brokerPorts{}, service("targetPort: broker", "targetPort: 9000"), `the Service ns/m targetPort is "9000" but the brokers listen on 8050`},
		{"ports: no named containerPort, chart's port", brokerPorts{}, job("name: broker, ", ""), `the Service ns/m targetPort is "broker" but the brokers listen on 8050 (the chart's flux.port (ConfigMap ns/m-broker))`},
		{"ports: containerPort not a number", brokerPorts{}, job("containerPort: 8050", "containerPort: x"), `Job ns/m container flux port broker has containerPort "x", not a number`},
		{"ports: out of range", brokerPorts{}, job("containerPort: 8050", "containerPort: 70000"), "the brokers' port 70000 (Job ns/m container flux port broker) is not a TCP port; use 1-65535"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, out, err := applyStep(t, c.input, c.step)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				assert.NotContains(t, err.Error(), "\n")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.input, out, "a check edits nothing")
		})
	}
}

// TestEdits runs each edit of the broker ConfigMap alone and compares the ConfigMap it writes;
// want "" means the ConfigMap keeps its bytes.
func TestEdits(t *testing.T) {
	resized := edited(t, jobYAML, "completions: 2", "completions: 1", "parallelism: 2", "parallelism: 1")
	renamed := edited(t, jobYAML, "name: m,", "name: team-m,")
	custom := edited(t, brokerConfigYAML, `"custom":false`, `"custom":true`)
	cases := []struct {
		name          string
		step          step
		input         string
		want, wantErr string
	}{
		{name: "broker.toml: as rendered", step: brokerTOML{}, input: stream(brokerConfigYAML, serviceYAML, jobYAML)},
		{name: "broker.toml: resized", step: brokerTOML{}, input: stream(brokerConfigYAML, serviceYAML, resized)},
		{name: "broker.toml: enable_ipv6 kept", step: brokerTOML{}, input: stream(edited(t, brokerConfigYAML, "    hosts = [", "    enable_ipv6 = true\n    hosts = ["), serviceYAML, jobYAML)},
		{name: "broker.toml: Job renamed", step: brokerTOML{}, input: stream(brokerConfigYAML, serviceYAML, renamed),
			want: edited(t, brokerConfigYAML, `    curve_cert = "/c"
    default_port = 8050
    default_bind = "tcp://eth0:%p"
    default_connect = "tcp://%h.m.ns.svc.cluster.local:%p"
    hosts = [{ host = "m-[0-2]" }]

    [resource]
    path = "/R"
`, `      curve_cert = "/c"
      default_bind = "tcp://eth0:%p"
      default_connect = "tcp://%h.m.ns.svc.cluster.local:%p"
      default_port = 8050

      [[bootstrap.hosts]]
        host = "team-m-[0-2]"

    [resource]
      path = "/R"
`)},
		{name: "broker.toml: custom is not rewritten", step: brokerTOML{}, input: stream(custom, serviceYAML, edited(t, jobYAML, "containerPort: 8050", "containerPort: 9000")),
			wantErr: "broker ConfigMap ns/m-broker data broker.toml (your flux.brokerConfig): default_port = 8050 but the brokers listen on 9000; set default_port = 9000"},
		{name: "broker.toml: custom with a host list of its own", step: brokerTOML{}, input: stream(edited(t, custom, `[{ host = "m-[0-2]" }]`, `[{ host = "m-0" }, { host = "m-[1-2]" }]`), serviceYAML, jobYAML)},
		{name: "broker.toml: missing", step: brokerTOML{}, input: stream(edited(t, brokerConfigYAML, "  broker.toml: |", "  other: |"), serviceYAML, jobYAML),
			wantErr: "broker ConfigMap ns/m-broker has no data broker.toml"},
		{name: "broker.toml: unknown key", step: brokerTOML{}, input: stream(edited(t, brokerConfigYAML, "    hosts = [", "    rank = 0\n    hosts = ["), serviceYAML, jobYAML),
			wantErr: `broker ConfigMap ns/m-broker data broker.toml: [bootstrap] has key "rank", which flux-core rejects: the allowed keys are ` + strings.Join(bootstrapKeys, ", ")},
		{name: "broker.toml: host entry key", step: brokerTOML{}, input: stream(edited(t, brokerConfigYAML, `{ host = "m-[0-2]" }`, `{ host = "m-[0-2]", rank = "0" }`), serviceYAML, jobYAML),
			wantErr: `[bootstrap] hosts[0] has key "rank", which flux-core rejects: the allowed keys are ` + strings.Join(hostKeys, ", ")},

		{name: "plain keys: as rendered", step: plainKeys{}, input: stream(brokerConfigYAML, serviceYAML, jobYAML)},
		{name: "plain keys: resized", step: plainKeys{}, input: stream(brokerConfigYAML, serviceYAML, resized),
			want: edited(t, brokerConfigYAML, `size: "2"`, `size: "1"`)},
		{name: "plain keys: Job renamed", step: plainKeys{}, input: stream(brokerConfigYAML, serviceYAML, renamed),
			want: edited(t, brokerConfigYAML, `hosts: "m-[0-2]"`, `hosts: "team-m-[0-2]"`)},
		{name: "plain keys: port patched", step: plainKeys{}, input: stream(brokerConfigYAML, edited(t, serviceYAML, "port: 8050", "port: 9000"), edited(t, jobYAML, "containerPort: 8050", "containerPort: 9000")),
			want: edited(t, brokerConfigYAML, `port: "8050"`, `port: "9000"`)},
		{name: "plain keys: Service renamed", step: plainKeys{}, input: stream(brokerConfigYAML, edited(t, serviceYAML, "name: m,", "name: s,"), edited(t, jobYAML, "subdomain: m", "subdomain: s")),
			want: edited(t, brokerConfigYAML, `domain: "m.ns.svc.cluster.local"`, `domain: "s.ns.svc.cluster.local"`)},

		{name: "parameters: as rendered", step: parametersOut{}, input: stream(brokerConfigYAML, serviceYAML, jobYAML)},
		{name: "parameters: Job renamed", step: parametersOut{}, input: stream(brokerConfigYAML, serviceYAML, renamed),
			want: edited(t, brokerConfigYAML, `{"job":"m"`, `{"job":"team-m"`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mc, out, err := applyStep(t, c.input, c.step)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			if c.want == "" {
				assert.Equal(t, c.input, out, "nothing to change: the input's bytes")
				return
			}
			assert.Equal(t, c.want, mc.config.node.MustString())
		})
	}
}

// applyStep resolves the MiniCluster of input, runs s on it, and returns it with the stream
// written back ("" when s fails).
func applyStep(t *testing.T, input string, s step) (*miniCluster, string, error) {
	t.Helper()
	mc, segs, err := resolved(t, input)
	require.NoError(t, err)
	if err := s.apply(mc); err != nil {
		return mc, "", err
	}
	out, err := joinStream(segs)
	require.NoError(t, err)
	return mc, out, nil
}

func TestClaimedJobs(t *testing.T) {
	cases := []struct{ name, input, wantErr string }{
		{"claimed", stream(brokerConfigYAML, serviceYAML, jobYAML), ""},
		{"not made by the chart", stream(serviceYAML, edited(t, jobYAML, `annotations: {minicluster.dev/max-size: "3"}`, "annotations: {}")), ""},
		{"broker ConfigMap missing", stream(serviceYAML, jobYAML),
			`the Job ns/m is a MiniCluster (annotation minicluster.dev/max-size) but its broker ConfigMap is missing: its volume broker-config names ConfigMap "m-broker", which is not among the manifests`},
		{"in another namespace", stream(edited(t, brokerConfigYAML, "namespace: ns", "namespace: other"), serviceYAML, jobYAML),
			"the Job ns/m is a MiniCluster"},
		{"no volume", stream(brokerConfigYAML, edited(t, jobYAML, "configMap: {name: m-broker}", "emptyDir: {}")),
			"but its broker ConfigMap is missing: no ConfigMap volume"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			segs, err := splitStream(c.input)
			require.NoError(t, err)
			_, err = claimedJobs{}.Filter(nodes(segs))
			if c.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.wantErr)
		})
	}
}

// TestKeepKeyNames: the chart's key objects keep their names (and the references to them)
// whatever a kustomization renamed; a move to another namespace is an error.
func TestKeepKeyNames(t *testing.T) {
	const secret = `apiVersion: v1
kind: Secret
metadata:
  name: m-curve
  namespace: ns
  labels: {app.kubernetes.io/name: minicluster, app.kubernetes.io/instance: m, app.kubernetes.io/component: curve}
`
	const job = `apiVersion: batch/v1
kind: Job
metadata: {name: m, namespace: ns}
spec:
  template:
    spec:
      volumes:
      - {name: curve, secret: {secretName: m-curve}}
`
	const role = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: m-keygen, namespace: ns}
rules:
- {resources: [secrets], resourceNames: [m-curve]}
`
	rename := func(doc string) string { return strings.ReplaceAll(doc, "m-curve", "team-m-curve") }
	cases := []struct{ name, input, want, wantErr string }{
		{name: "not renamed", input: stream(secret, job, role), want: stream(secret, job, role)},
		{name: "renamed back", input: stream(rename(secret), rename(job), rename(role)), want: stream(secret, job, role)},
		{name: "moved", input: stream(strings.ReplaceAll(secret, "namespace: ns", "namespace: hpc")),
			wantErr: `the kustomization moves Secret ns/m-curve (a key object the keygen Job fills) to namespace "hpc"`},
	}
	chart, err := splitStream(secret)
	require.NoError(t, err)
	f := keepKeyNames{chart: keyObjects(objectsOf(nodes(chart)))}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			segs, err := splitStream(c.input)
			require.NoError(t, err)
			_, err = f.Filter(nodes(segs))
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			out, err := joinStream(segs)
			require.NoError(t, err)
			assert.Equal(t, c.want, out)
		})
	}
}

// TestSmallMiniClusterSeed: the fuzz test's seed (postrender/fuzz) is these objects as one
// stream, and the post-renderer passes it through unchanged.
func TestSmallMiniClusterSeed(t *testing.T) {
	small := stream(brokerConfigYAML, serviceYAML, jobYAML)
	seed, err := os.ReadFile(filepath.Join("fuzz", "testdata", "small-minicluster.yaml"))
	require.NoError(t, err)
	assert.Equal(t, small, string(seed), "postrender/fuzz/testdata/small-minicluster.yaml: write stream(brokerConfigYAML, serviceYAML, jobYAML) into it")
	out, err := Render([]byte(small), Options{})
	require.NoError(t, err)
	assert.Equal(t, small, string(out))
}
