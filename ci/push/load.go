package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// source is one image found in a tarball.
type source struct {
	tarball string
	ref     name.Tag
	img     v1.Image
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
