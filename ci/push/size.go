package main

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

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
