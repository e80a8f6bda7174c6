// Command images builds the project's container images as tarballs, with no Docker:
//
//	go run ./ci/images --out bin/images [--version V (default: ./VERSION)]
//
// It compiles the static Go binaries itself (CGO_ENABLED=0), takes busybox from Debian's
// busybox-static (/usr/bin/busybox), assembles each image with go-containerregistry and writes
// one docker-save tarball per image (which `ctr images import`, `kind load image-archive` and
// `docker load` read). An image whose input is missing is reported by name after the others
// are written, and the exit status is 1. With --flux-dir (the output of ci/flux/build.sh) it also
// writes the flux, flux-view and app images (flux.go); without it they are skipped. With
// --only NAME[,NAME] it writes only the images named (flux-keygen alone: `make push-keygen`). With
// --kueue-dir (the output of ci/kueue/build.sh) it writes the Kueue image alone (kueue.go), for
// ci/kueue/up.sh.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/minicluster/minicluster/internal/version"
)

func main() {
	out := flag.String("out", "bin/images", "directory for the image tarballs")
	repoVersion, versionErr := version.FromRepo()
	ver := flag.String("version", repoVersion, "version (default: ./VERSION): every image's tag, the flux-keygen version label and its -X main.version")
	busybox := flag.String("busybox", "/usr/bin/busybox", "static busybox binary (Debian: apt-get install busybox-static)")
	fluxDir := flag.String("flux-dir", os.Getenv("MINICLUSTER_FLUX_DIR"), "output directory of ci/flux/build.sh (base.tar, software.tar): adds the flux, flux-view and app images; empty: they are skipped")
	only := flag.String("only", "", "comma-separated image names (flux-keygen, busybox, pause, flux, flux-view, app, mpi, flux-mpi): write only these")
	kueueDir := flag.String("kueue-dir", "", "output directory of ci/kueue/build.sh (bin/kueue, version): write the Kueue image (kueue.tar) and no other")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "images: unexpected argument %q (usage: go run ./ci/images --out DIR --version V)\n", flag.Arg(0))
		os.Exit(2)
	}
	if *ver == "" {
		fmt.Fprintf(os.Stderr, "images: no --version, and none from ./VERSION: %v\n", versionErr)
		os.Exit(2)
	}
	if *kueueDir != "" {
		written, err := BuildKueue(Config{Out: *out}, *kueueDir)
		for _, w := range written {
			fmt.Printf("%s\t%s\n", w.Path, w.Ref)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "images: %v\n", err)
			os.Exit(1)
		}
		return
	}
	cfg := Config{Out: *out, Version: *ver, Busybox: *busybox, FluxDir: *fluxDir}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
		if unknown := cfg.unknownNames(); len(unknown) > 0 {
			fmt.Fprintf(os.Stderr, "images: --only: no image named %s (the names: %s)\n", strings.Join(unknown, ", "), strings.Join(imageNames(), ", "))
			os.Exit(2)
		}
	}
	written, err := Build(cfg, os.Stderr)
	for _, w := range written {
		fmt.Printf("%s\t%s\n", w.Path, w.Ref)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}
