package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/minicluster/minicluster/internal/staticbuild"
)

// Program is a static Go program in an image besides its entrypoint: Path in the image (no
// leading slash), Pkg its Go package.
type Program struct{ Path, Pkg string }

// PlatformIndex makes an index of one image per platform out of img: the file at img's
// entrypoint is replaced by pkg built for that platform (internal/staticbuild, as ci/images
// built it for this machine), and so is each of more;
// the config gets the platform's os and architecture, and keeps everything else.
func PlatformIndex(img v1.Image, pkg, version string, platforms []v1.Platform, tmp string, log io.Writer, more ...Program) (v1.ImageIndex, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if len(cf.Config.Entrypoint) == 0 {
		return nil, errors.New("the image has no entrypoint: which file is the binary to rebuild?")
	}
	programs := append([]Program{{Path: strings.TrimPrefix(filepath.Clean(cf.Config.Entrypoint[0]), "/"), Pkg: pkg}}, more...)
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	// For each program, the last layer that has it is the one that counts.
	at := make([]int, len(programs))
	current := make([][]byte, len(programs))
	for j, prog := range programs {
		at[j] = -1
		for i, l := range layers {
			if data, found, err := fileIn(l, prog.Path); err != nil {
				return nil, err
			} else if found {
				at[j], current[j] = i, data
			}
		}
		if at[j] < 0 {
			return nil, fmt.Errorf("no /%s (%s) in any layer", prog.Path, prog.Pkg)
		}
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
		if p.OS != "linux" {
			return nil, fmt.Errorf("platform %s: only linux on %s is supported", p.String(), strings.Join(staticbuild.Arches(), ", "))
		}
		variant := make([]v1.Layer, len(layers))
		copy(variant, layers)
		for j, prog := range programs {
			fmt.Fprintf(log, "push: go build %s for %s\n", prog.Pkg, p.String())
			bin, err := staticbuild.Build(staticbuild.Options{Pkg: prog.Pkg, Version: version, Arch: p.Architecture, Variant: p.Variant, OutDir: tmp})
			if err != nil {
				return nil, fmt.Errorf("platform %s: %w", p.String(), err)
			}
			if !bytes.Equal(bin, current[j]) {
				if variant[at[j]], err = replaceFile(variant[at[j]], prog.Path, bin); err != nil {
					return nil, err
				}
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
