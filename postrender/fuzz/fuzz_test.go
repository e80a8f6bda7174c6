// Package fuzz holds the post-renderer's fuzz test apart from postrender's other tests: fuzzing
// compiles every package of the test binary again with coverage instrumentation, and those tests
// import the Helm SDK (three times the packages Render itself needs).
package fuzz

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/minicluster/minicluster/postrender"
)

// smallMiniClusterFile is postrender's step tests' objects as one stream (postrender's
// TestSmallMiniClusterSeed keeps it equal to them): a small seed keeps the fuzzer's input
// minimisation short.
var smallMiniClusterFile = filepath.Join("testdata", "small-minicluster.yaml")

// FuzzRender feeds arbitrary manifests to the post-renderer: it may reject them, never panic,
// and what it accepts it must accept again unchanged (idempotence).
func FuzzRender(f *testing.F) {
	small, err := os.ReadFile(smallMiniClusterFile)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(small),
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
