package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/tooltest"
)

// TestBuildKueue makes the Kueue image from a build directory laid out as ci/kueue/build.sh
// leaves it, with static busybox standing in for the Kueue binary (the real one takes minutes).
func TestBuildKueue(t *testing.T) {
	tooltest.File(t, "/usr/bin/busybox", "install the Debian package busybox-static (make deps does it)")
	bin, err := os.ReadFile("/usr/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "kueue"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildKueue(Config{Out: t.TempDir()}, dir); err == nil || !strings.Contains(err.Error(), "ci/kueue/build.sh") {
		t.Errorf("without a version file: err %v, want one naming ci/kueue/build.sh", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "version"), []byte("v0.19.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	written, err := BuildKueue(Config{Out: out}, dir)
	if err != nil || len(written) != 1 {
		t.Fatalf("BuildKueue: %v, %v", written, err)
	}
	cf, files := readBack(t, filepath.Join(out, "kueue.tar"), "localhost/minicluster/kueue:v0.19.2")
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/manager" {
		t.Errorf("config: user %q entrypoint %q, want 65532:65532 and /manager", cf.Config.User, cf.Config.Entrypoint)
	}
	if got := cf.Config.Labels["org.opencontainers.image.version"]; got != "v0.19.2" {
		t.Errorf("version label %q, want v0.19.2", got)
	}
	if m := files["manager"]; !bytes.Equal(m.data, bin) || m.mode != 0o755 {
		t.Errorf("/manager: mode %o, %d bytes; want the binary, 0755", m.mode, len(m.data))
	}
	if _, ok := files["tmp"]; !ok {
		t.Error("no /tmp")
	}
}
