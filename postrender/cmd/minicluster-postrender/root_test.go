package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func execute(stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := newRootCmd(strings.NewReader(stdin), &out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestPassesManifestsThrough(t *testing.T) {
	in := "---\n# Source: x.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	out, err := execute(in)
	require.NoError(t, err)
	assert.Equal(t, in, out)
}

func TestErrorsWriteNothing(t *testing.T) {
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", nil, "no manifests on the input"},
		{"a: b\n", []string{"extra"}, `unexpected argument "extra": the manifests come on stdin; the only flag is --kustomize DIR`},
		{"a: b\n", []string{"--kustomize"}, "flag needs an argument: --kustomize"},
		{"a: b\n", []string{"--kustomize", "/nonexistent"}, "--kustomize /nonexistent: no such directory"},
	} {
		out, err := execute(c.stdin, c.args...)
		require.Error(t, err, c.args)
		assert.Contains(t, err.Error(), c.want)
		assert.Empty(t, out)
	}
}
