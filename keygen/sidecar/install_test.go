package sidecar

import (
	"os"
	"path/filepath"
	"testing"
)

func TestInstallProgramCopiesExecutableThroughARename(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "program")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho hi\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "out", "program")
	if err := os.Mkdir(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := InstallProgram(src, dest); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dest)
	if err != nil || string(b) != "#!/bin/sh\necho hi\n" {
		t.Errorf("installed program: %q %v", b, err)
	}
	if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("installed program's mode: %v %v, want 0555", fi.Mode().Perm(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "out", ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := InstallProgram(filepath.Join(dir, "missing"), dest); err == nil {
		t.Error("installing a missing program succeeded")
	}
}
