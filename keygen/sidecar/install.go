package sidecar

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// InstallProgram copies the program src to dest (mode 0555, through a rename, so that the
// broker's container never runs half of it): how the lead's broker container gets the API
// server of this image, whatever its own image is.
func InstallProgram(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("installing %s: %w", filepath.Base(src), err)
	}
	defer in.Close()
	if err := replaceFile(dest, 0o555, in); err != nil {
		return fmt.Errorf("installing %s: %w", filepath.Base(src), err)
	}
	return nil
}

// replaceFile writes what src holds to path with mode, through a temporary file beside it
// and a rename, so that the other containers of the pod never read half of it.
func replaceFile(path string, mode os.FileMode, src io.Reader) error {
	dir, name := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
