package repo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "charts", "minicluster", "Chart.yaml")); err != nil {
		t.Errorf("Root() = %s, which has no charts/minicluster/Chart.yaml", root)
	}
	t.Chdir(t.TempDir())
	if _, err := Root(); err == nil {
		t.Error("no error outside the repository")
	}
}

func TestMakefileVar(t *testing.T) {
	if v, err := MakefileVar("E2E_PARALLEL"); err == nil { // the Makefile has E2E_PARALLEL ?= 4
		t.Errorf("a ?= line read as :=: %q", v)
	}
	if v, err := MakefileVar("HELM_DOCS_VERSION"); err != nil || !strings.HasPrefix(v, "v") {
		t.Errorf("HELM_DOCS_VERSION: %q %v, want a version", v, err)
	}
	if _, err := MakefileVar("NO_SUCH_VARIABLE"); err == nil || !strings.Contains(err.Error(), "NO_SUCH_VARIABLE") {
		t.Errorf("a missing variable: %v, want an error naming it", err)
	}
}
