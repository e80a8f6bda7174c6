package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func execute(stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := newRootCmd(strings.NewReader(stdin), &out, io.Discard)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

const hello = `apiVersion: flux-framework.org/v1alpha2
kind: MiniCluster
metadata:
  name: flux-sample
spec:
  size: 2
  containers:
    - image: ubuntu:noble
      command: echo hello world
`

func TestStdinAndFile(t *testing.T) {
	fromStdin, err := execute(hello, "--image", "ubuntu:noble=reg/app:1", "--view-image", "reg/view:1")
	require.NoError(t, err)
	assert.Contains(t, fromStdin, "image: reg/app:1\n")
	assert.Contains(t, fromStdin, "image: reg/view:1\n")
	assert.Contains(t, fromStdin, "helm install flux-sample charts/minicluster -f THIS_FILE")

	file := filepath.Join(t.TempDir(), "mc.yaml")
	require.NoError(t, os.WriteFile(file, []byte(hello), 0o644))
	fromFile, err := execute("", file, "--image", "ubuntu:noble=reg/app:1", "--view-image", "reg/view:1")
	require.NoError(t, err)
	assert.Equal(t, fromStdin, fromFile)
	dash, err := execute(hello, "-", "--image", "ubuntu:noble=reg/app:1", "--view-image", "reg/view:1")
	require.NoError(t, err)
	assert.Equal(t, fromStdin, dash)
}

func TestErrorsWriteNothing(t *testing.T) {
	for _, args := range [][]string{
		{"--image", "ubuntu:noble"},
		{"--image", "=x"},
		{"/nonexistent/mc.yaml"},
	} {
		out, err := execute(hello, args...)
		assert.Error(t, err, "%v", args)
		assert.Empty(t, out, "%v", args)
	}
	out, err := execute(strings.Replace(hello, "size: 2", "size: 2\n  minSize: 1", 1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stdin: cannot convert: 1 field:\n  spec.minSize:")
	assert.Empty(t, out)
}

func TestTable(t *testing.T) {
	out, err := execute("", "--table")
	require.NoError(t, err)
	assert.Contains(t, out, "| `spec.size` | `size` |")
}

// TestDeprecated: the old name of minicluster convert says so on stderr, and converts as before.
func TestDeprecated(t *testing.T) {
	var out, errb bytes.Buffer
	cmd := newRootCmd(strings.NewReader(hello), &out, &errb)
	cmd.SetArgs(nil)
	require.NoError(t, cmd.Execute())
	assert.Contains(t, errb.String(), "minicluster-convert is deprecated and goes in the next release: use minicluster convert")
	assert.Contains(t, out.String(), "size: 2\n")
}
