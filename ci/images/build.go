package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/minicluster/minicluster/internal/repo"
	"github.com/minicluster/minicluster/internal/staticbuild"
)

// Config says where to write and what to stamp.
type Config struct {
	Out, Version, Busybox string
	FluxDir               string   // a ci/flux/build.sh output directory; empty: no Flux images
	Only                  []string // write only these images (their names: flux-keygen, busybox, ...); empty: all
}

// imageNames are the names --only takes: each image's file name without .tar.
func imageNames() []string {
	var names []string
	for _, img := range images("") {
		names = append(names, strings.TrimSuffix(img.file, ".tar"))
	}
	for _, img := range fluxImageSet("", "", "") {
		names = append(names, strings.TrimSuffix(img.file, ".tar"))
	}
	return names
}

// unknownNames are the names in cfg.Only that no image has.
func (cfg Config) unknownNames() []string {
	known := imageNames()
	var unknown []string
	for _, n := range cfg.Only {
		if !slices.Contains(known, n) {
			unknown = append(unknown, n)
		}
	}
	return unknown
}

// wants says whether cfg asks for the image written to file (NAME.tar).
func (cfg Config) wants(file string) bool {
	return len(cfg.Only) == 0 || slices.Contains(cfg.Only, strings.TrimSuffix(file, ".tar"))
}

// Written is one image tarball.
type Written struct {
	Ref, Path string
}

// Go packages compiled into the images (paths from the module root).
const (
	pkgKeygen = "./keygen/cmd/flux-keygen"
	pkgPause  = "./ci/pause"
	pkgAPI    = "./restapi/cmd/minicluster-api"
	pkgScale  = "./autoscale/cmd/minicluster-autoscale"
	pkgBroker = "./supervisor/cmd/minicluster-broker"
	source    = "https://github.com/minicluster/minicluster"
)

// epoch is every timestamp in the images, so that the same inputs give the same digests.
var epoch = time.Unix(0, 0).UTC()

// file is one entry of a layer: a regular file (data), a directory (dir) or a symlink (link).
type file struct {
	path string // without leading slash
	mode int64
	data []byte
	dir  bool
	link string
}

// image describes one image of the contract's table.
type image struct {
	ref, file string
	busybox   bool   // start from the busybox layer
	binary    string // Go package whose static build goes to binPath
	binPath   string
	// more static programs in the image: Go package -> path
	more        map[string]string
	extra       []file
	config      v1.Config
	description string
}

func images(version string) []image {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	return []image{
		{
			ref: "ghcr.io/minicluster/flux-keygen:" + version, file: "flux-keygen.tar",
			binary: pkgKeygen, binPath: "usr/local/bin/flux-keygen",
			// The broker's supervisor (every broker pod's keys container copies it for the broker's
			// container to run), the API server (api.enabled) and the autoscaler
			// (autoscale.enabled, metrics.enabled): the lead's keys container copies them, so a
			// user mirrors no other image for them.
			more: map[string]string{pkgAPI: "usr/local/bin/minicluster-api", pkgScale: "usr/local/bin/minicluster-autoscale",
				pkgBroker: "usr/local/bin/minicluster-broker"},
			// No shell: the keygen Job and the brokers' keys container run flux-keygen and nothing else.
			extra: []file{{path: "etc/passwd", mode: 0o644, data: []byte(passwd)}, {path: "etc/group", mode: 0o644, data: []byte(group)}},
			config: v1.Config{
				Entrypoint: []string{"/usr/local/bin/flux-keygen"},
				User:       "65532:65532",
				Env:        []string{"PATH=/usr/local/bin"},
			},
			description: "flux-keygen: Flux CURVE certificates and the minicluster chart's keygen Job",
		},
		{
			ref: "localhost/minicluster/pause:local", file: "pause.tar",
			binary: pkgPause, binPath: "pause",
			config: v1.Config{Entrypoint: []string{"/pause"}},
		},
		{
			ref: "localhost/minicluster/busybox:" + version, file: "busybox.tar", busybox: true,
			config: v1.Config{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
		},
	}
}

// Build compiles the binaries and writes every image it can; it returns what it wrote and an
// error naming each image it could not make.
func Build(cfg Config, log io.Writer) ([]Written, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "minicluster-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var busyboxLayer v1.Layer
	var busyboxErr error
	var written []Written
	var failed []error
	binaries := map[string][]byte{}
	binErrs := map[string]error{}
	for _, img := range images(cfg.Version) {
		if !cfg.wants(img.file) {
			continue
		}
		var layers []v1.Layer
		if img.busybox {
			if busyboxLayer == nil && busyboxErr == nil {
				busyboxLayer, busyboxErr = busyboxBase(cfg.Busybox)
			}
			if busyboxErr != nil {
				failed = append(failed, fmt.Errorf("%s: %w", img.ref, busyboxErr))
				continue
			}
			layers = append(layers, busyboxLayer)
		}
		files := img.extra
		if img.binary != "" {
			if _, done := binaries[img.binary]; !done && binErrs[img.binary] == nil {
				fmt.Fprintf(log, "images: go build %s\n", img.binary)
				binaries[img.binary], binErrs[img.binary] = staticbuild.Build(staticbuild.Options{Pkg: img.binary, Dir: root, Version: cfg.Version, OutDir: tmp})
			}
			if err := binErrs[img.binary]; err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", img.ref, err))
				continue
			}
			files = append(files, file{path: img.binPath, mode: 0o755, data: binaries[img.binary]})
		}
		moreFailed := false
		for _, pkg := range slices.Sorted(maps.Keys(img.more)) {
			if _, done := binaries[pkg]; !done && binErrs[pkg] == nil {
				fmt.Fprintf(log, "images: go build %s\n", pkg)
				binaries[pkg], binErrs[pkg] = staticbuild.Build(staticbuild.Options{Pkg: pkg, Dir: root, Version: cfg.Version, OutDir: tmp})
			}
			if err := binErrs[pkg]; err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", img.ref, err))
				moreFailed = true
				break
			}
			files = append(files, file{path: img.more[pkg], mode: 0o755, data: binaries[pkg]})
		}
		if moreFailed {
			continue
		}
		if len(files) > 0 {
			l, err := layer(files)
			if err != nil {
				return written, err
			}
			layers = append(layers, l)
		}
		written, failed = writeInto(cfg, img, layers, written, failed)
	}
	fluxWritten, err := buildFlux(cfg, log) // flux.go
	written = append(written, fluxWritten...)
	if err != nil {
		failed = append(failed, fmt.Errorf("flux images: %w", err))
	}
	return written, errors.Join(failed...)
}

// writeInto writes img to its file under cfg.Out and records it in written, or its error in failed.
func writeInto(cfg Config, img image, layers []v1.Layer, written []Written, failed []error) ([]Written, []error) {
	path := filepath.Join(cfg.Out, img.file)
	if err := writeImage(img, cfg.Version, layers, path); err != nil {
		return written, append(failed, fmt.Errorf("%s: %w", img.ref, err))
	}
	return append(written, Written{Ref: img.ref, Path: path}), failed
}

func writeImage(img image, version string, layers []v1.Layer, path string) error {
	base := empty.Image
	for _, l := range layers {
		var err error
		base, err = mutate.Append(base, mutate.Addendum{Layer: l, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "ci/images"}})
		if err != nil {
			return err
		}
	}
	cf, err := base.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", runtime.GOARCH, v1.Time{Time: epoch}
	cf.Config = img.config
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if img.description != "" {
		cf.Config.Labels["org.opencontainers.image.description"] = img.description
	}
	out, err := mutate.ConfigFile(base, cf)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(img.ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(path, ref, out)
}

// busyboxBase is the layer of the busybox images: /bin/busybox, a /bin/<applet> symlink for
// every applet it lists, /tmp and a minimal /etc/passwd.
func busyboxBase(path string) (v1.Layer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("busybox: %w (install Debian's busybox-static)", err)
	}
	if err := staticbuild.CheckStatic(path, data, ""); err != nil {
		return nil, err
	}
	out, err := exec.Command(path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", path, err)
	}
	files := []file{
		{path: "bin/busybox", mode: 0o755, data: data},
		{path: "tmp", mode: 0o1777, dir: true},
		{path: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{path: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\n")},
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			files = append(files, file{path: "bin/" + applet, mode: 0o777, link: "/bin/busybox"})
		}
	}
	return layer(files)
}

// layer makes an uncompressed tar in memory (parent directories first, sorted, fixed times,
// root-owned) and wraps it as a layer; go-containerregistry gzips it when writing.
func layer(files []file) (v1.Layer, error) {
	entries := map[string]file{}
	for _, f := range files {
		entries[f.path] = f
		for d := filepath.Dir(f.path); d != "."; d = filepath.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = file{path: d, mode: 0o755, dir: true}
			}
		}
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := entries[p]
		h := &tar.Header{Name: p, Mode: f.mode, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag, h.Name = tar.TypeDir, p+"/"
		case f.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}
