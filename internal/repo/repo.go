// Package repo finds the repository's files from wherever a test or a ci tool runs inside it.
package repo

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// MakefileVar is the value of a simple variable of the repository's Makefile (a line
// `NAME := value`), for the tests that check something against it.
func MakefileVar(name string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` := (.*)$`).FindSubmatch(mk)
	if m == nil {
		return "", fmt.Errorf("the Makefile has no line %s := ...", name)
	}
	return string(m[1]), nil
}
