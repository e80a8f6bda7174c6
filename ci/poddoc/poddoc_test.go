package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestWrite: the tables of the chart as it is name the broker's and the keys' containers, and
// every script of files/ with where it reaches the pods.
func TestWrite(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	files, err := chartFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if !strings.Contains(out, "| `"+name+"` |") {
			t.Errorf("files/%s is not in the scripts table", name)
		}
	}
	for _, want := range []string{"| `flux` | container |", "| `keys` |", "ConfigMap `R-entrypoint`", "`flux.view.mode=copy`"} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not rendered") || strings.Contains(out, "flux-sample") {
		t.Errorf("a script not rendered, or the release's name left in:\n%s", out)
	}
}

// TestSplice: the tables go between the markers and nothing else changes; no markers is an error.
func TestSplice(t *testing.T) {
	doc := "# T\n\ntext\n" + begin + "old\n" + end + "after\n"
	got, err := splice([]byte(doc), []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# T\n\ntext\n" + begin + "new\n" + end + "after\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := splice([]byte("# T\n"), nil); err == nil || !strings.Contains(err.Error(), "no markers") {
		t.Errorf("no markers: %v", err)
	}
}
