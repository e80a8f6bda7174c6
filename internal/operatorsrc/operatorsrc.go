// Package operatorsrc gives the tests that hold the chart and minicluster convert to the Flux
// Operator (its types file and its test cases) the operator's pinned source tarball
// (internal/sources: a mirror, the build cache or its upstream location; or
// FLUX_OPERATOR_TARBALL), unpacked.
package operatorsrc

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/minicluster/minicluster/internal/sources"
)

// Tarball is the operator's source tarball for the repository at root.
func Tarball(root string) (string, error) {
	if p := os.Getenv("FLUX_OPERATOR_TARBALL"); p != "" {
		return p, nil
	}
	s, err := sources.Lookup("flux-operator")
	if err != nil {
		return "", err
	}
	places, err := sources.DefaultPlaces(root)
	if err != nil {
		return "", err
	}
	return s.Fetch(places, os.Stderr)
}

// Unpack unpacks the tarball into dir and returns its top directory.
func Unpack(tarball, dir string) (string, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tarball, err)
	}
	tr := tar.NewReader(gz)
	top := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", tarball, err)
		}
		if h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeReg {
			continue // pax headers, links: the tests need neither
		}
		name := filepath.Clean(h.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return "", fmt.Errorf("%s: entry %q leaves its directory", tarball, h.Name)
		}
		if first, _, _ := strings.Cut(name, string(filepath.Separator)); top == "" {
			top = first
		}
		target := filepath.Join(dir, name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return "", err
		}
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(out, tr)
		out.Close()
		if err != nil {
			return "", err
		}
	}
	if top == "" {
		return "", fmt.Errorf("%s is empty", tarball)
	}
	return filepath.Join(dir, top), nil
}
