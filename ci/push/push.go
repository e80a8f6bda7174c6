package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// multiPlatform names the images pushed as a multi-platform index, with the Go package whose
// static binary is the image's entrypoint: for each platform that binary is rebuilt and put in
// place of the one in the tarball; everything else (other files, config, labels) is the
// tarball's, as ci/images made it.
var multiPlatform = map[string]string{
	"flux-keygen": "github.com/minicluster/minicluster/keygen/cmd/flux-keygen",
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

// Target parses a registry (host[:port][/path]) and says whether to talk plain HTTP to it.
func Target(registry string, insecure bool) (prefix string, opts []name.Option, err error) {
	if strings.Contains(registry, "://") {
		return "", nil, fmt.Errorf("registry %q: give host[:port][/path], without a scheme", registry)
	}
	prefix = strings.TrimSuffix(registry, "/")
	host, _, _ := strings.Cut(prefix, "/")
	if host == "" {
		return "", nil, fmt.Errorf("registry %q: empty host", registry)
	}
	// Without this check "myhost/x" would silently mean Docker Hub's repository myhost/x.
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return "", nil, fmt.Errorf("registry %q: must start with a registry host (a name with a dot or a port, or localhost)", registry)
	}
	hostname := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		hostname = h
	}
	hostname = strings.Trim(hostname, "[]")
	if ip := net.ParseIP(hostname); insecure || hostname == "localhost" || (ip != nil && ip.IsLoopback()) {
		opts = append(opts, name.Insecure)
	}
	if _, err := name.NewRepository(prefix+"/x", append([]name.Option{name.StrictValidation}, opts...)...); err != nil {
		return "", nil, fmt.Errorf("registry %q: %w", registry, err)
	}
	return prefix, opts, nil
}

// source is one image found in a tarball.
type source struct {
	tarball string
	ref     name.Tag
	img     v1.Image
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
		idx, err := PlatformIndex(src.img, pkg, cfg.Version, platforms, tmp, log)
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

// load reads every image of every *.tar in dir (sorted by file name).
func load(dir string) ([]source, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no image tarballs (*.tar) in %s: build them first (make images)", dir)
	}
	sort.Strings(paths)
	var out []source
	for _, path := range paths {
		opener := func() (io.ReadCloser, error) { return os.Open(path) }
		manifest, err := tarball.LoadManifest(opener)
		if err != nil {
			return nil, fmt.Errorf("%s: not a docker-save tarball: %w", path, err)
		}
		n := 0
		for _, d := range manifest {
			for _, rt := range d.RepoTags {
				tag, err := name.NewTag(rt)
				if err != nil {
					return nil, fmt.Errorf("%s: tag %q: %w", path, rt, err)
				}
				img, err := tarball.Image(opener, &tag)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", path, rt, err)
				}
				out = append(out, source{tarball: path, ref: tag, img: img})
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: no tagged image in it (nothing to name it by)", path)
		}
	}
	return out, nil
}

// PlatformIndex makes an index of one image per platform out of img: the file at img's
// entrypoint is replaced by pkg built for that platform (static, -X main.version=version);
// the config gets the platform's os and architecture, and keeps everything else.
func PlatformIndex(img v1.Image, pkg, version string, platforms []v1.Platform, tmp string, log io.Writer) (v1.ImageIndex, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(cf.Config.Entrypoint) == 0 {
		return nil, errors.New("the image has no entrypoint: which file is the binary to rebuild?")
	}
	binPath := strings.TrimPrefix(filepath.Clean(cf.Config.Entrypoint[0]), "/")
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	// The last layer that has the binary is the one that counts.
	at := -1
	var current []byte
	for i, l := range layers {
		if data, found, err := fileIn(l, binPath); err != nil {
			return nil, err
		} else if found {
			at, current = i, data
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("no /%s (the entrypoint) in any layer", binPath)
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	indexType := types.OCIImageIndex
	if mt == types.DockerManifestSchema2 {
		indexType = types.DockerManifestList
	}
	idx := mutate.IndexMediaType(empty.Index, indexType)
	for _, p := range platforms {
		fmt.Fprintf(log, "push: go build %s for %s\n", pkg, p.String())
		bin, err := goBuild(pkg, version, p, tmp)
		if err != nil {
			return nil, err
		}
		variant := make([]v1.Layer, len(layers))
		copy(variant, layers)
		if !bytes.Equal(bin, current) {
			if variant[at], err = replaceFile(layers[at], binPath, bin); err != nil {
				return nil, err
			}
		}
		pimg, err := withLayers(img, cf, variant, p)
		if err != nil {
			return nil, err
		}
		pp := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: pimg, Descriptor: v1.Descriptor{Platform: &pp}})
	}
	return idx, nil
}

// withLayers is img with these layers and the config cf for platform p.
func withLayers(img v1.Image, cf *v1.ConfigFile, layers []v1.Layer, p v1.Platform) (v1.Image, error) {
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	out := mutate.MediaType(empty.Image, mt)
	if out, err = mutate.AppendLayers(out, layers...); err != nil {
		return nil, err
	}
	ncf := cf.DeepCopy()
	ncf.OS, ncf.Architecture, ncf.Variant, ncf.OSVersion, ncf.OSFeatures = p.OS, p.Architecture, p.Variant, p.OSVersion, p.OSFeatures
	ncf.RootFS.DiffIDs = nil
	for _, l := range layers {
		d, err := l.DiffID()
		if err != nil {
			return nil, err
		}
		ncf.RootFS.DiffIDs = append(ncf.RootFS.DiffIDs, d)
	}
	return mutate.ConfigFile(out, ncf)
}

// tarName is a layer entry's path without "./", leading or trailing slashes.
func tarName(n string) string {
	return strings.Trim(strings.TrimPrefix(n, "./"), "/")
}

// fileIn returns the content of the regular file path in layer l.
func fileIn(l v1.Layer, path string) ([]byte, bool, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, false, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if tarName(h.Name) == path && h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			return data, true, err
		}
	}
}

// replaceFile is l with the content of the regular file path replaced by data; every other
// entry and every header field but the size stay as they are.
func replaceFile(l v1.Layer, path string, data []byte) (v1.Layer, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	tr := tar.NewReader(rc)
	tw := tar.NewWriter(&buf)
	replaced := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		var body io.Reader = tr
		if tarName(h.Name) == path && h.Typeflag == tar.TypeReg {
			h.Size, body, replaced = int64(len(data)), bytes.NewReader(data), true
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if !replaced {
		return nil, fmt.Errorf("no /%s in the layer", path)
	}
	mt, err := l.MediaType()
	if err != nil {
		return nil, err
	}
	out := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }, tarball.WithMediaType(mt))
}

// elfMachine is the ELF machine of a Go GOARCH.
var elfMachine = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM, "386": elf.EM_386,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// goBuild compiles pkg (a full import path: it builds from any directory inside the module)
// statically for platform p, with ci/images' flags (-trimpath, -s -w, -X main.version), and
// checks the result is a static ELF for p's architecture.
func goBuild(pkg, version string, p v1.Platform, tmp string) ([]byte, error) {
	want, ok := elfMachine[p.Architecture]
	if p.OS != "linux" || !ok {
		return nil, fmt.Errorf("platform %s: only linux on %s is supported", p.String(), strings.Join(sortedKeys(elfMachine), ", "))
	}
	out := filepath.Join(tmp, filepath.Base(pkg)+"-"+p.Architecture+p.Variant)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+p.Architecture)
	if p.Architecture == "arm" && strings.HasPrefix(p.Variant, "v") {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s for %s: %v: %s", pkg, p.String(), err, strings.TrimSpace(string(msg)))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s for %s: not an ELF binary: %w", pkg, p.String(), err)
	}
	defer f.Close()
	if f.Machine != want {
		return nil, fmt.Errorf("%s for %s: ELF machine %s, want %s", pkg, p.String(), f.Machine, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s for %s is dynamically linked; the image needs a static binary", pkg, p.String())
		}
	}
	return data, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func platformList(ps []v1.Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// imageSize is img's digest and the bytes of its manifest, config and layers not yet in seen.
func imageSize(img v1.Image, seen map[v1.Hash]bool) (v1.Hash, int64, error) {
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, 0, err
	}
	m, err := img.Manifest()
	if err != nil {
		return v1.Hash{}, 0, err
	}
	msize, err := img.Size()
	if err != nil {
		return v1.Hash{}, 0, err
	}
	var size int64
	for _, d := range append([]v1.Descriptor{{Digest: digest, Size: msize}, m.Config}, m.Layers...) {
		if !seen[d.Digest] {
			seen[d.Digest] = true
			size += d.Size
		}
	}
	return digest, size, nil
}

// indexSize describes a pushed index: its digest, its images, and the bytes of all blobs.
func indexSize(idx v1.ImageIndex) (Pushed, error) {
	var p Pushed
	var err error
	if p.Digest, err = idx.Digest(); err != nil {
		return p, err
	}
	if p.Size, err = idx.Size(); err != nil {
		return p, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return p, err
	}
	seen := map[v1.Hash]bool{}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return p, err
		}
		_, own, err := imageSize(img, map[v1.Hash]bool{})
		if err != nil {
			return p, err
		}
		_, added, err := imageSize(img, seen)
		if err != nil {
			return p, err
		}
		p.Size += added
		pp := PushedPlatform{Digest: d.Digest, Size: own}
		if d.Platform != nil {
			pp.Platform = *d.Platform
		}
		p.Platforms = append(p.Platforms, pp)
	}
	return p, nil
}
