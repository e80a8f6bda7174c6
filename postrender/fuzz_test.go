package postrender_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/postrender"
)

// smallMiniCluster is a MiniCluster cut down to the fields the post-renderer reads: a small
// seed keeps the fuzzer's input minimisation short.
const smallMiniCluster = `apiVersion: v1
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
---
apiVersion: v1
kind: Service
metadata:
  name: m
  namespace: ns
spec:
  clusterIP: None
  selector: {app: m}
  ports: [{name: broker, port: 8050, targetPort: broker}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: m
  namespace: ns
  annotations: {minicluster.dev/max-size: "3"}
spec:
  completionMode: Indexed
  completions: 2
  parallelism: 2
  template:
    metadata:
      labels: {app: m}
    spec:
      subdomain: m
      containers:
        - name: flux
          ports: [{name: broker, containerPort: 8050}]
          volumeMounts: [{name: broker-config, mountPath: /minicluster/config}]
      volumes:
        - name: broker-config
          configMap: {name: m-broker}
`

func TestSmallMiniClusterSeedIsValid(t *testing.T) {
	out, err := postrender.Render([]byte(smallMiniCluster), postrender.Options{})
	require.NoError(t, err)
	assert.Equal(t, smallMiniCluster, string(out))
}

// FuzzRender feeds arbitrary manifests to the post-renderer: it may reject them, never panic,
// and what it accepts it must accept again unchanged (idempotence).
func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		smallMiniCluster,
		"",
		"---\n# only a comment\n---\n",
		"a: &x [*x]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n--- # c\nkind: Job\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := postrender.Render(in, postrender.Options{})
		if err != nil {
			if out != nil {
				t.Fatalf("output %q with error %v", out, err)
			}
			return
		}
		again, err := postrender.Render(out, postrender.Options{})
		if err != nil {
			t.Fatalf("the output is rejected: %v\ninput:\n%s\noutput:\n%s", err, in, out)
		}
		if string(again) != string(out) {
			t.Fatalf("not idempotent\ninput:\n%s\nonce:\n%s\ntwice:\n%s", in, out, again)
		}
	})
}
