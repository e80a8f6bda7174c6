package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/minicluster/minicluster/internal/tooltest"
)

// entry is a file of an image's flattened filesystem.
type entry struct {
	typ  byte
	mode int64
	link string
	data []byte
}

func readBack(t *testing.T, path, ref string) (*v1.ConfigFile, map[string]entry) {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("%s: tarball.ImageFromPath(%s): %v", path, ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[strings.TrimSuffix(h.Name, "/")] = entry{typ: h.Typeflag, mode: h.Mode, link: h.Linkname, data: data}
	}
	return cf, files
}

// TestBuildImages builds every image and reads each tarball back with go-containerregistry:
// tag, config (user, entrypoint, labels, platform) and file list. That the cluster's
// containerd takes them (`ctr images import`) is checked where the cluster is made (ci/cluster).
func TestBuildImages(t *testing.T) {
	out := t.TempDir()
	var log bytes.Buffer
	tooltest.File(t, "/usr/bin/busybox", "install the Debian package busybox-static (make deps does it)")
	written, err := Build(Config{Out: out, Version: "1.2.3-test", Busybox: "/usr/bin/busybox"}, &log)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, log.String())
	}
	if len(written) != 3 { // keygen, pause, busybox; the Flux images need --flux-dir (flux_test.go)
		t.Fatalf("wrote %d images, want 3: %v", len(written), written)
	}
	path := func(f string) string { return filepath.Join(out, f) }

	// The keygen image: flux-keygen and the API server, as user 65532, no shell.
	cf, files := readBack(t, path("flux-keygen.tar"), "ghcr.io/minicluster/flux-keygen:1.2.3-test")
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/usr/local/bin/flux-keygen" {
		t.Errorf("keygen config: user %q entrypoint %q", cf.Config.User, cf.Config.Entrypoint)
	}
	if cf.Config.Labels["org.opencontainers.image.version"] != "1.2.3-test" ||
		cf.Config.Labels["org.opencontainers.image.source"] != "https://github.com/minicluster/minicluster" ||
		cf.Config.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" {
		t.Errorf("keygen labels %v", cf.Config.Labels)
	}
	if cf.OS != "linux" || cf.Architecture == "" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	var regular []string
	for p, e := range files {
		if e.typ == tar.TypeReg {
			regular = append(regular, p)
		}
		if strings.HasSuffix(p, "/sh") || strings.Contains(p, "busybox") {
			t.Errorf("keygen image has a shell: %s", p)
		}
	}
	if len(regular) != 6 || files["usr/local/bin/flux-keygen"].mode != 0o755 || files["usr/local/bin/minicluster-api"].mode != 0o755 || files["usr/local/bin/minicluster-autoscale"].mode != 0o755 ||
		files["usr/local/bin/minicluster-broker"].mode != 0o755 {
		t.Errorf("keygen image files %v", regular)
	}
	api := filepath.Join(t.TempDir(), "minicluster-api")
	os.WriteFile(api, files["usr/local/bin/minicluster-api"].data, 0o755)
	if out, err := exec.Command(api, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "Flux RESTful API") {
		t.Errorf("minicluster-api --help from the image: %q %v", out, err)
	}
	scale := filepath.Join(t.TempDir(), "minicluster-autoscale")
	os.WriteFile(scale, files["usr/local/bin/minicluster-autoscale"].data, 0o755)
	if out, err := exec.Command(scale, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "Prometheus") {
		t.Errorf("minicluster-autoscale --help from the image: %q %v", out, err)
	}
	broker := filepath.Join(t.TempDir(), "minicluster-broker")
	os.WriteFile(broker, files["usr/local/bin/minicluster-broker"].data, 0o755)
	if out, err := exec.Command(broker, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "process 1") {
		t.Errorf("minicluster-broker --help from the image: %q %v", out, err)
	}
	// The binary in the image runs and carries the version.
	bin := filepath.Join(t.TempDir(), "flux-keygen")
	os.WriteFile(bin, files["usr/local/bin/flux-keygen"].data, 0o755)
	if v, err := exec.Command(bin, "--version").Output(); err != nil || !strings.Contains(string(v), "1.2.3-test") {
		t.Errorf("flux-keygen --version from the image: %q %v", v, err)
	}

	cf, files = readBack(t, path("pause.tar"), "localhost/minicluster/pause:local")
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/pause" || files["pause"].typ != tar.TypeReg {
		t.Errorf("pause: entrypoint %q, files %d", cf.Config.Entrypoint, len(files))
	}

	// The busybox image (the helm test pod's): /bin/busybox and applet symlinks.
	for _, img := range []struct{ file, ref string }{
		{"busybox.tar", "localhost/minicluster/busybox:1.2.3-test"},
	} {
		cf, files := readBack(t, path(img.file), img.ref)
		if files["bin/busybox"].typ != tar.TypeReg || files["tmp"].mode != 0o1777 {
			t.Errorf("%s: no /bin/busybox or /tmp", img.ref)
		}
		for _, applet := range []string{"sh", "cat", "cp", "chmod", "rm", "mkdir", "sleep", "nslookup", "nc", "hostname"} {
			if e := files["bin/"+applet]; e.typ != tar.TypeSymlink || e.link != "/bin/busybox" {
				t.Errorf("%s: /bin/%s is not a symlink to /bin/busybox", img.ref, applet)
			}
		}
		if len(cf.Config.Cmd) == 0 || cf.Config.Cmd[0] != "/bin/sh" {
			t.Errorf("%s: cmd %q", img.ref, cf.Config.Cmd)
		}
	}
}

// TestLayerIsDeterministic: the same files give the same layer digest, so unchanged inputs
// give unchanged images.
func TestLayerIsDeterministic(t *testing.T) {
	files := []file{{path: "a/b/c", mode: 0o644, data: []byte("x")}, {path: "a/l", link: "/a/b/c", mode: 0o777}}
	l1, err := layer(files)
	if err != nil {
		t.Fatal(err)
	}
	l2, _ := layer([]file{files[1], files[0]})
	d1, _ := l1.Digest()
	d2, _ := l2.Digest()
	if d1 != d2 {
		t.Fatalf("digests differ: %s %s", d1, d2)
	}
}

func TestMissingInputsAreNamed(t *testing.T) {
	if _, err := busyboxBase("/nonexistent/busybox"); err == nil || !strings.Contains(err.Error(), "busybox-static") {
		t.Errorf("busyboxBase: %v", err)
	}
}

// TestOnly: --only writes the images named and no other, needs no busybox for flux-keygen alone,
// and an unknown name is found before anything is built.
func TestOnly(t *testing.T) {
	out := t.TempDir()
	var log bytes.Buffer
	written, err := Build(Config{Out: out, Version: "1.2.3-test", Busybox: "/nonexistent/busybox", Only: []string{"flux-keygen"}}, &log)
	if err != nil {
		t.Fatalf("Build --only flux-keygen: %v\n%s", err, log.String())
	}
	if len(written) != 1 || written[0].Ref != "ghcr.io/minicluster/flux-keygen:1.2.3-test" {
		t.Fatalf("wrote %v, want flux-keygen alone", written)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 1 || entries[0].Name() != "flux-keygen.tar" {
		t.Errorf("files in the output: %v", entries)
	}
	if got := (Config{Only: []string{"flux-keygen", "fluxx", "mpi"}}).unknownNames(); len(got) != 1 || got[0] != "fluxx" {
		t.Errorf("unknownNames: %v, want [fluxx]", got)
	}
}
