package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// multiPlatform names the images pushed as a multi-platform index, with the Go package whose
// static binary is the image's entrypoint: for each platform that binary is rebuilt and put in
// place of the one in the tarball; everything else (other files, config, labels) is the
// tarball's, as ci/images made it.
var multiPlatform = map[string]string{
	"flux-keygen": "github.com/minicluster/minicluster/keygen/cmd/flux-keygen",
}

// morePrograms are the other static programs of a multi-platform image, rebuilt likewise.
var morePrograms = map[string][]Program{
	"flux-keygen": {
		{Path: "usr/local/bin/minicluster-api", Pkg: "github.com/minicluster/minicluster/restapi/cmd/minicluster-api"},
		{Path: "usr/local/bin/minicluster-autoscale", Pkg: "github.com/minicluster/minicluster/autoscale/cmd/minicluster-autoscale"},
		{Path: "usr/local/bin/minicluster-broker", Pkg: "github.com/minicluster/minicluster/supervisor/cmd/minicluster-broker"},
	},
}

// DefaultPlatforms are the platforms of the multi-platform images.
var DefaultPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Config says what to push where.
type Config struct {
	Dir       string        // directory of docker-save tarballs (*.tar), as ci/images writes them
	Registry  string        // host[:port][/path]: images go to <Registry>/<name>:<tag>
	Version   string        // the multi-platform images' tag and their binaries' -X main.version
	Insecure  bool          // plain HTTP (implied for localhost and loopback addresses)
	Platforms []v1.Platform // of the multi-platform images (default DefaultPlatforms)
}

// Pushed is one reference written to the registry.
type Pushed struct {
	Ref    string
	Digest v1.Hash
	// Size is the bytes of the manifest(s), config(s) and compressed layers the reference
	// points to, each blob counted once.
	Size      int64
	Platforms []PushedPlatform // set for an index
}

// PushedPlatform is one image of a pushed index.
type PushedPlatform struct {
	Platform v1.Platform
	Digest   v1.Hash
	Size     int64
}

func (p Pushed) String() string {
	s := fmt.Sprintf("%s@%s\t%d bytes", p.Ref, p.Digest, p.Size)
	if len(p.Platforms) > 0 {
		s += fmt.Sprintf("\tindex of %d platforms", len(p.Platforms))
		for _, pp := range p.Platforms {
			s += fmt.Sprintf("\n\t%s\t%s\t%d bytes", pp.Platform.String(), pp.Digest, pp.Size)
		}
	}
	return s
}

// Push writes every image of cfg.Dir's tarballs to cfg.Registry, the multi-platform ones as an
// index. It stops at the first failure; what it pushed until then is returned.
func Push(ctx context.Context, cfg Config, log io.Writer) ([]Pushed, error) {
	prefix, nameOpts, err := Target(cfg.Registry, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	platforms := cfg.Platforms
	if len(platforms) == 0 {
		platforms = DefaultPlatforms
	}
	sources, err := load(cfg.Dir)
	if err != nil {
		return nil, err
	}
	remoteOpts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithUserAgent("minicluster-push"),
	}
	tmp, err := os.MkdirTemp("", "minicluster-push-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var pushed []Pushed
	seen := map[string]string{}
	for _, src := range sources {
		repo := src.ref.Context().RepositoryStr()
		base := repo[strings.LastIndex(repo, "/")+1:]
		dst, err := name.NewTag(prefix+"/"+base+":"+src.ref.TagStr(), nameOpts...)
		if err != nil {
			return pushed, fmt.Errorf("%s: %w", src.ref, err)
		}
		if other, dup := seen[dst.String()]; dup {
			return pushed, fmt.Errorf("%s (%s) and %s would both be pushed as %s", src.ref, src.tarball, other, dst)
		}
		seen[dst.String()] = fmt.Sprintf("%s (%s)", src.ref, src.tarball)

		pkg, multi := multiPlatform[base]
		if !multi {
			fmt.Fprintf(log, "push: %s -> %s\n", src.ref, dst)
			if err := remote.Write(dst, src.img, remoteOpts...); err != nil {
				return pushed, fmt.Errorf("push %s: %w", dst, err)
			}
			digest, size, err := imageSize(src.img, map[v1.Hash]bool{})
			if err != nil {
				return pushed, err
			}
			pushed = append(pushed, Pushed{Ref: dst.String(), Digest: digest, Size: size})
			continue
		}
		if src.ref.TagStr() != cfg.Version {
			return pushed, fmt.Errorf("%s in %s is tagged %q, not the version %q being pushed: rebuild the images (make images)", src.ref, src.tarball, src.ref.TagStr(), cfg.Version)
		}
		idx, err := PlatformIndex(src.img, pkg, cfg.Version, platforms, tmp, log, morePrograms[base]...)
		if err != nil {
			return pushed, fmt.Errorf("%s: %w", src.ref, err)
		}
		fmt.Fprintf(log, "push: %s -> %s (index: %s)\n", src.ref, dst, platformList(platforms))
		if err := remote.WriteIndex(dst, idx, remoteOpts...); err != nil {
			return pushed, fmt.Errorf("push %s: %w", dst, err)
		}
		p, err := indexSize(idx)
		if err != nil {
			return pushed, err
		}
		p.Ref = dst.String()
		pushed = append(pushed, p)
	}
	return pushed, nil
}

func platformList(ps []v1.Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
