package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/minicluster/minicluster/internal/sources"
)

// layerCache keeps the gzipped layers made from a Flux build's root filesystem tarballs in
// dir (the build's layers/ directory), so that every later run (make e2e, the release, make
// e2e-kueue) reads them instead of compressing a gigabyte again. A layer is reused only while
// its tarball has the size and modification time it was made from and this program is the
// same binary (its sha256: a change to how layers are made makes them again).
type layerCache struct {
	dir, program string
}

// newLayerCache returns the cache in dir, or an error when it cannot be used (then the caller
// makes the layers in a temporary directory as before).
func newLayerCache(dir string) (*layerCache, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	program, err := sources.FileSHA256(exe)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &layerCache{dir: dir, program: program}, nil
}

// key identifies the layer src makes: its size, its modification time and the program.
func (c *layerCache) key(src string) (string, error) {
	st, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("size %d mtime %d program %s\n", st.Size(), st.ModTime().UnixNano(), c.program), nil
}

// layer returns the layer of the root filesystem tarball src and its entry names, from the
// cache when it is current, else made with rootfsLayer and kept. The key is written last, so a
// run stopped halfway leaves a layer that is made again.
func (c *layerCache) layer(src string) (v1.Layer, []string, error) {
	key, err := c.key(src)
	if err != nil {
		return nil, nil, err
	}
	base := filepath.Join(c.dir, filepath.Base(src))
	gz, namesFile, keyFile := base+".gz", base+".names", base+".key"
	if old, err := os.ReadFile(keyFile); err == nil && string(old) == key {
		names, nerr := os.ReadFile(namesFile)
		l, lerr := tarball.LayerFromFile(gz)
		if nerr == nil && lerr == nil {
			return l, strings.Split(strings.TrimSuffix(string(names), "\n"), "\n"), nil
		}
	}
	os.Remove(keyFile)
	// Written under names of their own and renamed: two runs at once each make a whole file.
	tmp, err := os.MkdirTemp(c.dir, ".new-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	_, names, err := rootfsLayer(src, filepath.Join(tmp, "layer.gz"))
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "names"), []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		return nil, nil, err
	}
	for from, to := range map[string]string{"layer.gz": gz, "names": namesFile} {
		if err := os.Rename(filepath.Join(tmp, from), to); err != nil {
			return nil, nil, err
		}
	}
	if err := os.WriteFile(keyFile, []byte(key), 0o644); err != nil {
		return nil, nil, err
	}
	l, err := tarball.LayerFromFile(gz)
	return l, names, err
}
