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
	tmp := dest + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o555)
	if err != nil {
		return fmt.Errorf("installing %s: %w", filepath.Base(src), err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("installing %s into %s: %w", filepath.Base(src), dest, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("installing %s into %s: %w", filepath.Base(src), dest, err)
	}
	if err := os.Chmod(tmp, 0o555); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}
