package postrender

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallMiniCluster is a MiniCluster cut down to the fields the post-renderer reads (the step
// tests' objects): a small seed keeps the fuzzer's input minimisation short.
var smallMiniCluster = stream(brokerConfigYAML, serviceYAML, jobYAML)

func TestSmallMiniClusterSeedIsValid(t *testing.T) {
	out, err := Render([]byte(smallMiniCluster), Options{})
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
		out, err := Render(in, Options{})
		if err != nil {
			if out != nil {
				t.Fatalf("output %q with error %v", out, err)
			}
			return
		}
		again, err := Render(out, Options{})
		if err != nil {
			t.Fatalf("the output is rejected: %v\ninput:\n%s\noutput:\n%s", err, in, out)
		}
		if string(again) != string(out) {
			t.Fatalf("not idempotent\ninput:\n%s\nonce:\n%s\ntwice:\n%s", in, out, again)
		}
	})
}
