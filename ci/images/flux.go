package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The images made from a real flux-core build (ci/flux/build.sh): its cache directory holds
// base.tar (Debian minbase, no Flux, no python), software.tar (opt/software, opt/views,
// opt/view: flux-core, Fluxion, flux-pmix and their dependencies in spack-style prefixes, and
// the view) and mpi.tar (BASE with MPICH, OpenMPI, LAMMPS and mpi-hello).
const (
	fluxBaseTar     = "base.tar"
	fluxSoftwareTar = "software.tar"
	fluxMPITar      = "mpi.tar"
	stdPath         = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// fluxImageSet lists the five images, tagged tag; flux is flux-core's version and pyver the
// view's python directory (python3.11).
func fluxImageSet(tag, flux, pyver string) []image {
	view := "/opt/view"
	return []image{
		{
			// (a) Flux installed in the application image: flux on PATH, no other setup.
			ref: "localhost/minicluster/flux:" + tag, file: "flux.tar",
			config:      v1.Config{Cmd: []string{"/bin/bash"}, Env: fluxEnv(view, pyver, stdPath)},
			description: "Debian 12 with flux-core " + flux + " in /opt/software, its view at /opt/view on PATH",
		},
		{
			// (b) The view image (the real flux-view layout), for the chart's flux-view container.
			ref: "localhost/minicluster/flux-view:" + tag, file: "flux-view.tar",
			config:      v1.Config{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=" + stdPath}},
			description: "flux view: flux-core " + flux + " in /opt/software, the view /opt/view -> /opt/views/view -> /opt/views/._view/<hash>",
		},
		{
			// (c) An application image without Flux.
			ref: "localhost/minicluster/app:" + tag, file: "app.tar",
			config:      v1.Config{Cmd: []string{"/bin/bash"}, Env: []string{"PATH=" + stdPath}},
			description: "Debian 12 minbase: an application image without Flux or python",
		},
		{
			// (d) An MPI application image without Flux.
			ref: "localhost/minicluster/mpi:" + tag, file: "mpi.tar",
			config:      v1.Config{Cmd: []string{"/bin/bash"}, Env: []string{"PATH=" + stdPath}},
			description: "Debian 12 with MPICH 4.0.2, OpenMPI 4.1.4 (PMIx 4.2.2), LAMMPS and mpi-hello-{mpich,openmpi}; no Flux",
		},
		{
			// (e) An HPC application image with Flux built in: (d) and the layer of (a) that
			// holds Flux, so it costs a registry and a node no new layer.
			ref: "localhost/minicluster/flux-mpi:" + tag, file: "flux-mpi.tar",
			config:      v1.Config{Cmd: []string{"/bin/bash"}, Env: fluxEnv(view, pyver, stdPath)},
			description: "the mpi image with flux-core " + flux + " in /opt/software, its view at /opt/view on PATH",
		},
	}
}

// fluxEnv is what a process needs to run flux from a view at dir (an image's /opt/view or the
// chart's copy in /mnt/flux/view): the view's bin first on PATH, its python site-packages (each
// python module lives in its own prefix, as in spack) and its lua directories (luaposix).
func fluxEnv(dir, pyver, path string) []string {
	return []string{
		"PATH=" + dir + "/bin:" + path,
		"PYTHONPATH=" + dir + "/lib/" + pyver + "/site-packages",
		"LUA_PATH=" + dir + "/share/lua/5.1/?.lua;" + dir + "/share/lua/5.1/?/init.lua;;",
		"LUA_CPATH=" + dir + "/lib/lua/5.1/?.so;;",
	}
}

// buildFlux writes the Flux images when dir holds a finished flux build; with no dir, or an
// unfinished one, it says so on log and writes nothing (not an error).
func buildFlux(cfg Config, log io.Writer) ([]Written, error) {
	dir := cfg.FluxDir
	if dir == "" {
		fmt.Fprintln(log, "images: no --flux-dir (or MINICLUSTER_FLUX_DIR): skipping the flux, flux-view and app images (make flux builds Flux)")
		return nil, nil
	}
	needed := []string{fluxBaseTar, fluxSoftwareTar}
	wantsMPI := cfg.wants(fluxMPITar) || cfg.wants("flux-mpi.tar")
	if wantsMPI {
		needed = append(needed, fluxMPITar)
	}
	for _, f := range needed {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			fmt.Fprintf(log, "images: %s: %v: skipping the flux, flux-view and app images (bash ci/flux/build.sh builds Flux)\n", dir, err)
			return nil, nil
		}
	}
	version := "unknown"
	if b, err := os.ReadFile(filepath.Join(dir, "version")); err == nil {
		version = strings.TrimSpace(string(b))
	}
	tmp, err := os.MkdirTemp("", "minicluster-flux-layers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "images: layers from %s (flux-core %s)\n", dir, version)
	cache, err := newLayerCache(filepath.Join(dir, "layers"))
	if err != nil {
		fmt.Fprintf(log, "images: the layers are not kept for the next run (%v)\n", err)
	}
	layerOf := func(name string) (v1.Layer, []string, error) {
		if cache != nil {
			l, names, err := cache.layer(filepath.Join(dir, name))
			if err == nil {
				return l, names, nil
			}
			// A cache this user cannot write (a build made by root) only costs the time.
			fmt.Fprintf(log, "images: %s: not kept for the next run (%v)\n", name, err)
		}
		return rootfsLayer(filepath.Join(dir, name), filepath.Join(tmp, name+".gz"))
	}
	base, _, err := layerOf(fluxBaseTar)
	if err != nil {
		return nil, err
	}
	software, names, err := layerOf(fluxSoftwareTar)
	if err != nil {
		return nil, err
	}
	pyver := ""
	re := regexp.MustCompile(`^opt/views/\._view/[^/]+/lib/(python3\.[0-9]+)/site-packages$`)
	for _, n := range names {
		if m := re.FindStringSubmatch(n); m != nil {
			pyver = m[1]
			break
		}
	}
	if pyver == "" {
		return nil, fmt.Errorf("%s: no opt/views/._view/<hash>/lib/python3.*/site-packages in it", fluxSoftwareTar)
	}
	// mpi.tar only when the mpi image is wanted: `--only` without it needs no MPI build.
	var mpi v1.Layer
	if wantsMPI {
		if mpi, _, err = layerOf(fluxMPITar); err != nil {
			return nil, err
		}
	}
	var written []Written
	var failed []error
	for _, img := range fluxImageSet(cfg.Version, version, pyver) {
		if !cfg.wants(img.file) {
			continue
		}
		var layers []v1.Layer
		switch img.file {
		case "app.tar":
			layers = []v1.Layer{base}
		case "mpi.tar":
			layers = []v1.Layer{mpi}
		case "flux-mpi.tar":
			layers = []v1.Layer{mpi, software}
		default:
			layers = []v1.Layer{base, software}
		}
		written, failed = writeInto(cfg, img, layers, written, failed)
	}
	return written, errors.Join(failed...)
}

// rootfsLayer streams the root filesystem tarball src into a gzipped layer file gz with every
// header normalized (names without "./", the epoch as every time, numeric owners only, PAX),
// so that the same files give the same digest; it returns the layer and the entry names.
// Nothing is held in memory but one header at a time.
func rootfsLayer(src, gz string) (v1.Layer, []string, error) {
	in, err := os.Open(src)
	if err != nil {
		return nil, nil, err
	}
	defer in.Close()
	out, err := os.Create(gz)
	if err != nil {
		return nil, nil, err
	}
	defer out.Close()
	bw := bufio.NewWriterSize(out, 1<<20)
	zw, err := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	if err != nil {
		return nil, nil, err
	}
	tr := tar.NewReader(bufio.NewReaderSize(in, 1<<20))
	tw := tar.NewWriter(zw)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", src, err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		if name == "" || name == "." {
			continue
		}
		trimmed := strings.TrimSuffix(name, "/")
		names = append(names, trimmed)
		if h.Typeflag == tar.TypeLink {
			h.Linkname = strings.TrimPrefix(strings.TrimPrefix(h.Linkname, "./"), "/")
		}
		nh := &tar.Header{
			Typeflag: h.Typeflag, Name: name, Linkname: h.Linkname, Size: h.Size, Mode: h.Mode,
			Uid: h.Uid, Gid: h.Gid, ModTime: epoch, Devmajor: h.Devmajor, Devminor: h.Devminor,
			Format: tar.FormatPAX,
		}
		if h.Typeflag == tar.TypeDir && !strings.HasSuffix(nh.Name, "/") {
			nh.Name += "/"
		}
		// File capabilities (e.g. ping's) travel as PAX security.capability records.
		for k, v := range h.PAXRecords {
			if strings.HasPrefix(k, "SCHILY.xattr.security.") {
				if nh.PAXRecords == nil {
					nh.PAXRecords = map[string]string{}
				}
				nh.PAXRecords[k] = v
			}
		}
		if err := tw.WriteHeader(nh); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", src, name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, tr); err != nil {
				return nil, nil, fmt.Errorf("%s: %s: %w", src, name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, nil, err
	}
	if err := out.Close(); err != nil {
		return nil, nil, err
	}
	l, err := tarball.LayerFromFile(gz)
	return l, names, err
}
