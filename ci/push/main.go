// Command push writes the project's image tarballs (bin/images/*.tar, from ci/images) to an OCI
// registry, with no Docker:
//
//	go run ./ci/push --registry 127.0.0.1:5000/minicluster [--version V (default: ./VERSION)] bin/images
//
// Every image goes to <registry>/<name>:<tag>, where name is the last path element of the
// image's reference in the tarball and tag its tag (ghcr.io/minicluster/flux-keygen:V ->
// <registry>/flux-keygen:V). flux-keygen goes as a multi-platform index (linux/amd64 and
// linux/arm64 by default): its static binary is rebuilt for each platform. Plain HTTP is used
// for localhost and loopback registries, or for any with --insecure. Each pushed reference is
// printed with its digest and size.
//
// With --check NAME:TAG[,NAME:TAG...] it pushes nothing: it asks the registry (an OCI HEAD) whether
// those references exist and exits 0 when none does, 3 when some do (each printed with its
// digest), 1 when the registry cannot tell (ci/release.sh uses it to refuse a released version):
//
//	go run ./ci/push --registry 127.0.0.1:5000/minicluster --check flux-keygen:1.2.3,charts/minicluster:1.2.3
//
// Files: push.go pushes (Push); target.go parses the registry; load.go reads the tarballs;
// index.go makes a multi-platform index, rebuilding the binary per platform with
// internal/staticbuild (as ci/images builds it); layer.go reads and replaces a file in a layer;
// size.go reports what was pushed; exists.go answers --check.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/minicluster/minicluster/internal/version"
)

func main() {
	registry := flag.String("registry", "", "where to push: host[:port][/path] (e.g. 127.0.0.1:5000/minicluster)")
	repoVersion, versionErr := version.FromRepo()
	ver := flag.String("version", repoVersion, "version (default: ./VERSION): the multi-platform images' tag and their binaries' -X main.version")
	insecure := flag.Bool("insecure", false, "plain HTTP (always so for localhost and loopback addresses)")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "platforms of the multi-platform images (flux-keygen)")
	check := flag.String("check", "", "push nothing; exit 3 if any of these comma-separated NAME:TAG (relative to --registry) exists, 0 if none, 1 on errors")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./ci/push --registry HOST[:PORT][/PATH] [--version V] [--insecure] [DIR (default bin/images)]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *registry == "" {
		fmt.Fprintln(os.Stderr, "push: --registry is required (e.g. --registry 127.0.0.1:5000/minicluster; bash ci/registry/up.sh starts one there)")
		os.Exit(2)
	}
	if *check != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		found, err := Existing(ctx, *registry, *insecure, strings.Split(*check, ","))
		if err != nil {
			fmt.Fprintf(os.Stderr, "push: --check: %v\n", err)
			os.Exit(1)
		}
		for _, f := range found {
			fmt.Printf("%s@%s\texists (manifest %d bytes)\n", f.Ref, f.Digest, f.Size)
		}
		if len(found) > 0 {
			os.Exit(3)
		}
		return
	}
	dir := "bin/images"
	switch flag.NArg() {
	case 0:
	case 1:
		dir = flag.Arg(0)
	default:
		flag.Usage()
		os.Exit(2)
	}
	var ps []v1.Platform
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil || p.OS == "" || p.Architecture == "" {
			fmt.Fprintf(os.Stderr, "push: --platforms: %q is not os/arch[/variant]\n", s)
			os.Exit(2)
		}
		ps = append(ps, *p)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *ver == "" {
		fmt.Fprintf(os.Stderr, "push: no --version, and none from ./VERSION: %v\n", versionErr)
		os.Exit(2)
	}
	pushed, err := Push(ctx, Config{Dir: dir, Registry: *registry, Version: *ver, Insecure: *insecure, Platforms: ps}, os.Stderr)
	var total int64
	for _, p := range pushed {
		fmt.Println(p)
		total += p.Size
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "push: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "push: %d references to %s (%d bytes in all, shared blobs counted per reference)\n", len(pushed), *registry, total)
}
