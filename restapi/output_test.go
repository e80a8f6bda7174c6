package restapi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stand-in for flux that reproduces what a real watch can do and cannot be made to do at will:
// the output watch (wait-event --waitcreate) prints the events it was given and then never ends,
// as a KVS watch of a guest namespace removed just as it is asked for does. The real flux is
// exercised by the end-to-end tests (test/e2e TestAPI).
func fakeFlux(t *testing.T, followed, logged string) *Flux {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "followed"), []byte(followed), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logged"), []byte(logged), 0o644))
	script := `#!/bin/sh
dir=` + dir + `
case "$*" in
  "job wait-event --quiet 7 start") exit 0 ;;
  "job wait-event --quiet 7 clean") sleep 0.2; exit 0 ;;
  "job wait-event --waitcreate "*) cat "$dir/followed"; exec sleep 1000 ;;
  "job eventlog --format=json --path=output 7") cat "$dir/logged"; exit 0 ;;
esac
echo "unexpected: $*" >&2
exit 1
`
	flux := filepath.Join(dir, "flux")
	require.NoError(t, os.WriteFile(flux, []byte(script), 0o755))
	return &Flux{Command: flux}
}

const (
	header = `{"name":"header","context":{"version":1,"count":{"stdout":2,"stderr":2}}}` + "\n"
	line0  = `{"name":"data","context":{"stream":"stdout","rank":"0","data":"zero\n"}}` + "\n"
	line1  = `{"name":"data","context":{"stream":"stdout","rank":"1","data":"one\n"}}` + "\n"
	eofs   = `{"name":"data","context":{"stream":"stderr","rank":"0","eof":true}}
{"name":"data","context":{"stream":"stderr","rank":"1","eof":true}}
{"name":"data","context":{"stream":"stdout","rank":"0","eof":true}}
{"name":"data","context":{"stream":"stdout","rank":"1","eof":true}}
`
)

func follow(t *testing.T, f *Flux) (string, bool, time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out strings.Builder
	start := time.Now()
	ok, err := f.Output(ctx, 7, true, func(s string) error { out.WriteString(s); return nil })
	return out.String(), ok, time.Since(start), err
}

// Every stream of every rank said eof: the output is whole, and the stream ends at once.
func TestOutputEndsAtTheLastEOF(t *testing.T) {
	out, ok, took, err := follow(t, fakeFlux(t, header+line0+line1+eofs, ""))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "zero\none\n", out)
	assert.Less(t, took, 2*time.Second)
}

// No eofs (a job shell lost with its node) and a watch that never ends: once the job is clean
// and the grace has passed, the rest comes from the eventlog the job left.
func TestOutputEndsWhenTheJobIsClean(t *testing.T) {
	defer func(g time.Duration) { outputGrace = g }(outputGrace)
	outputGrace = 100 * time.Millisecond
	out, ok, took, err := follow(t, fakeFlux(t, header+line0, header+line0+line1))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "zero\none\n", out, "each line once: the events already streamed are skipped")
	assert.Less(t, took, 5*time.Second)
}
