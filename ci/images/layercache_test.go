package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLayerCache: a layer is made once and read back while its tarball is unchanged (the same
// digest and names, the file not written again), and made again when the tarball changes.
func TestLayerCache(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "software.tar")
	writeRootfs(t, src, time.Now())
	cache, err := newLayerCache(filepath.Join(dir, "layers"))
	if err != nil {
		t.Fatal(err)
	}
	first, names, err := cache.layer(src)
	if err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "layers", "software.tar.gz")
	made, err := os.Stat(gz)
	if err != nil {
		t.Fatalf("the layer is not kept: %v", err)
	}
	again, againNames, err := cache.layer(src)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := first.Digest()
	d2, _ := again.Digest()
	if d1 != d2 || len(names) != len(againNames) || names[len(names)-1] != againNames[len(againNames)-1] {
		t.Errorf("read back: digest %s names %q, made: digest %s names %q", d2, againNames, d1, names)
	}
	if st, _ := os.Stat(gz); !os.SameFile(made, st) {
		t.Errorf("the layer was made again though its tarball did not change")
	}

	// The tarball made again (another build): a new modification time makes the layer again.
	later := time.Now().Add(time.Hour)
	writeRootfs(t, src, later)
	if err := os.Chtimes(src, later, later); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cache.layer(src); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(gz); os.SameFile(made, st) {
		t.Errorf("the tarball changed but the old layer file was kept")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "layers", ".new-*")); len(leftovers) > 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
}

// TestBuildFluxWithoutItsLayerCache: a layer that cannot be kept (here a directory stands where
// its file would go; for a user, a Flux build root made) is made in a temporary directory and
// the image is written all the same, with a line saying so.
func TestBuildFluxWithoutItsLayerCache(t *testing.T) {
	dir := t.TempDir()
	writeRootfs(t, filepath.Join(dir, fluxBaseTar), time.Now())
	writeRootfs(t, filepath.Join(dir, fluxSoftwareTar), time.Now())
	if err := os.MkdirAll(filepath.Join(dir, "layers", "base.tar.gz", "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	written, err := buildFlux(Config{Out: t.TempDir(), FluxDir: dir, Version: "1.0.0", Only: []string{"flux"}}, &log)
	if err != nil || len(written) != 1 {
		t.Fatalf("wrote %v, err %v; want the flux image\n%s", written, err, log.String())
	}
	if !strings.Contains(log.String(), "base.tar: not kept for the next run") {
		t.Errorf("no line about the layer not kept:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "layers", "software.tar.gz")); err != nil {
		t.Errorf("the other layer was not kept: %v", err)
	}
}
