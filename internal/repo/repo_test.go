package repo

import (
	"os"
	"path/filepath"
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
