// Package repo finds the repository's files from wherever a test or a ci tool runs inside it.
package repo

import (
	"fmt"
	"os"
	"path/filepath"
)

// Root is the repository root: the nearest directory with go.mod at or above the working
// directory (the directory `go test` runs a package's tests in, or where `go run` was started).
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("no go.mod at or above %s: run from inside the minicluster repository", wd)
		}
	}
}
