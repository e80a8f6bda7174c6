package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/minicluster/minicluster/internal/registrytest"
)

// fixtureLayer is an uncompressed layer of these regular files (root-owned, fixed times).
func fixtureLayer(t *testing.T, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range []string{"etc/passwd", "usr/local/bin/flux-keygen", "usr/local/bin/minicluster-api", "usr/local/bin/minicluster-autoscale", "usr/local/bin/minicluster-broker", "pause"} {
		data, ok := files[p]
		if !ok {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fixtureTarball writes a docker-save tarball of one image, as ci/images does.
func fixtureTarball(t *testing.T, path, ref string, files map[string]string, cfg v1.Config) {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, fixtureLayer(t, files))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", "amd64", cfg
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
}

// TestPushKeygenIndexToRealRegistry starts the real registry (ci/registry/up.sh, Debian's
// docker-registry) on a free loopback port, pushes a keygen image and a single-platform image
// from docker-save tarballs, and reads both back from the registry.
func TestPushKeygenIndexToRealRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	addr := reg.Addr
	if again := reg.Script(t, "up.sh"); !strings.Contains(again, "already up") {
		t.Errorf("a second up.sh should say the registry is already up, said: %s", again)
	}

	const version = "9.8.7-test"
	images := t.TempDir()
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	keygenCfg := v1.Config{Entrypoint: []string{"/usr/local/bin/flux-keygen"}, User: "65532:65532", Labels: map[string]string{"org.opencontainers.image.version": version}}
	fixtureTarball(t, filepath.Join(images, "flux-keygen.tar"), "ghcr.io/minicluster/flux-keygen:"+version,
		map[string]string{"etc/passwd": passwd, "usr/local/bin/flux-keygen": "placeholder: push rebuilds it per platform",
			"usr/local/bin/minicluster-api": "placeholder: push rebuilds it too", "usr/local/bin/minicluster-autoscale": "placeholder: push rebuilds it too",
			"usr/local/bin/minicluster-broker": "placeholder: push rebuilds it too"}, keygenCfg)
	fixtureTarball(t, filepath.Join(images, "pause.tar"), "localhost/minicluster/pause:local",
		map[string]string{"pause": "not really a binary"}, v1.Config{Entrypoint: []string{"/pause"}})

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var log bytes.Buffer
	pushed, err := Push(ctx, Config{Dir: images, Registry: addr + "/minicluster/test", Version: version}, &log)
	t.Log(log.String())
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	for _, p := range pushed {
		t.Log(p)
	}
	if len(pushed) != 2 {
		t.Fatalf("pushed %d references, want 2 (flux-keygen, pause)", len(pushed))
	}

	// The keygen index, read back from the registry.
	ref, err := name.NewTag(addr+"/minicluster/test/flux-keygen:"+version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("remote.Index(%s): %v", ref, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if pushed[0].Ref != ref.String() || pushed[0].Digest != digest {
		t.Errorf("Push reported %s@%s, the registry has %s@%s", pushed[0].Ref, pushed[0].Digest, ref, digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	seen := map[string]bool{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Errorf("index entry %s has no platform", d.Digest)
			continue
		}
		arch := d.Platform.Architecture
		seen[d.Platform.OS+"/"+arch] = true
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != d.Platform.OS || cf.Architecture != arch {
			t.Errorf("%s: index says %s, config says %s/%s", d.Digest, d.Platform, cf.OS, cf.Architecture)
		}
		if cf.Config.User != keygenCfg.User || strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/flux-keygen" || cf.Config.Labels["org.opencontainers.image.version"] != version {
			t.Errorf("%s: the tarball's config was not kept: %+v", d.Platform, cf.Config)
		}
		files := flatten(t, img)
		if files["etc/passwd"] != passwd {
			t.Errorf("%s: /etc/passwd not kept from the tarball: %q", d.Platform, files["etc/passwd"])
		}
		for _, program := range []string{"minicluster-api", "minicluster-autoscale", "minicluster-broker"} {
			if bin, err := elf.NewFile(strings.NewReader(files["usr/local/bin/"+program])); err != nil {
				t.Errorf("%s: /usr/local/bin/%s was not rebuilt: %v", d.Platform, program, err)
			} else {
				if want := machines[arch]; bin.Machine != want {
					t.Errorf("%s: /usr/local/bin/%s is an ELF for %s", d.Platform, program, bin.Machine)
				}
				bin.Close()
			}
		}
		bin, ok := files["usr/local/bin/flux-keygen"]
		if !ok {
			t.Errorf("%s: no /usr/local/bin/flux-keygen", d.Platform)
			continue
		}
		f, err := elf.NewFile(strings.NewReader(bin))
		if err != nil {
			t.Errorf("%s: /usr/local/bin/flux-keygen is not an ELF binary: %v", d.Platform, err)
			continue
		}
		if want, ok := machines[arch]; !ok || f.Machine != want {
			t.Errorf("%s: /usr/local/bin/flux-keygen is an ELF for %s", d.Platform, f.Machine)
		}
		if !strings.Contains(bin, version) {
			t.Errorf("%s: the binary does not carry -X main.version=%s", d.Platform, version)
		}
		f.Close()
	}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		if !seen[p] {
			t.Errorf("the index has no %s image (has %v)", p, seen)
		}
	}
	if len(im.Manifests) != 2 {
		t.Errorf("the index has %d images, want 2", len(im.Manifests))
	}

	// The single-platform image, byte for byte the tarball's.
	pauseRef, err := name.NewTag(addr+"/minicluster/test/pause:local", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	remotePause, err := remote.Image(pauseRef, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("remote.Image(%s): %v", pauseRef, err)
	}
	localPause, err := tarball.ImageFromPath(filepath.Join(images, "pause.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rd, _ := remotePause.Digest()
	ld, _ := localPause.Digest()
	if rd != ld || pushed[1].Digest != rd {
		t.Errorf("pause: registry %s, tarball %s, reported %s", rd, ld, pushed[1].Digest)
	}
}

// flatten reads an image's filesystem: path -> content of each regular file.
func flatten(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[tarName(h.Name)] = string(data)
		}
	}
}

func TestTarget(t *testing.T) {
	for _, c := range []struct {
		in       string
		prefix   string
		insecure bool
		bad      bool
	}{
		{in: "127.0.0.1:5000/minicluster", prefix: "127.0.0.1:5000/minicluster", insecure: true},
		{in: "localhost:5000/", prefix: "localhost:5000", insecure: true},
		{in: "[::1]:5000/a/b", prefix: "[::1]:5000/a/b", insecure: true},
		{in: "10.250.0.2:5000", prefix: "10.250.0.2:5000"},
		{in: "ghcr.io/minicluster", prefix: "ghcr.io/minicluster"},
		{in: "myhost/minicluster", bad: true},
		{in: "http://127.0.0.1:5000", bad: true},
		{in: "", bad: true},
		{in: "ghcr.io/Upper", bad: true},
	} {
		prefix, opts, err := Target(c.in, false)
		if c.bad != (err != nil) {
			t.Errorf("Target(%q): error %v, want error: %v", c.in, err, c.bad)
			continue
		}
		if c.bad {
			continue
		}
		if prefix != c.prefix || (len(opts) == 1) != c.insecure {
			t.Errorf("Target(%q) = %q, %d name options; want %q, insecure %v", c.in, prefix, len(opts), c.prefix, c.insecure)
		}
	}
	if _, opts, _ := Target("10.250.0.2:5000", true); len(opts) != 1 {
		t.Errorf("--insecure must give name.Insecure")
	}
}
