package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

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
