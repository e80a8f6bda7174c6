package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeRootfs writes a GNU-tar-like root filesystem tarball ("./" names, real times) at path.
func writeRootfs(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "./", Mode: 0o755},
		{Typeflag: tar.TypeDir, Name: "./bin/", Mode: 0o755},
		{Typeflag: tar.TypeReg, Name: "./bin/sh", Mode: 0o755, Size: 4, Uname: "root"},
		{Typeflag: tar.TypeLink, Name: "./bin/dash", Linkname: "./bin/sh"},
		{Typeflag: tar.TypeSymlink, Name: "./opt/view", Linkname: "views/view"},
		{Typeflag: tar.TypeDir, Name: "./opt/views/._view/abc/lib/python3.11/site-packages/", Mode: 0o755},
	} {
		h.ModTime, h.AccessTime, h.Format = mtime, mtime, tar.FormatGNU
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte("#!sh"))
		}
	}
	tw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRootfsLayer: names lose "./", every time is the epoch, hard links follow the names, and
// the same files written at different times give the same layer digest.
func TestRootfsLayer(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	writeRootfs(t, a, time.Now())
	writeRootfs(t, b, time.Now().Add(time.Hour))
	la, names, err := rootfsLayer(a, filepath.Join(dir, "a.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	lb, _, err := rootfsLayer(b, filepath.Join(dir, "b.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	da, _ := la.Digest()
	db, _ := lb.Digest()
	if da != db {
		t.Errorf("same files, different times: digests %s and %s differ", da, db)
	}
	want := "bin bin/sh bin/dash opt/view opt/views/._view/abc/lib/python3.11/site-packages"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names: got %q, want %q", got, want)
	}
	rc, err := la.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) || strings.HasPrefix(h.Name, ".") || h.Uname != "" {
			t.Errorf("%s: mtime %v, uname %q: want the epoch, no ./ and no names", h.Name, h.ModTime, h.Uname)
		}
		if h.Typeflag == tar.TypeLink && h.Linkname != "bin/sh" {
			t.Errorf("hard link %s -> %q, want bin/sh", h.Name, h.Linkname)
		}
	}
}

// TestBuildFluxSkips: without a flux build the Flux images are skipped with a message, no error.
func TestBuildFluxSkips(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		var log bytes.Buffer
		w, err := buildFlux(Config{Out: t.TempDir(), FluxDir: dir}, &log)
		if err != nil || len(w) != 0 || !strings.Contains(log.String(), "skipping") {
			t.Errorf("FluxDir %q: wrote %v, err %v, log %q; want nothing, no error and a message", dir, w, err, log.String())
		}
	}
}
