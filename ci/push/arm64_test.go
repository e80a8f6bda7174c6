package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/repo"
)

// The Makefile compiles the multi-platform images' programs for linux/arm64 before go test
// ./... (ARM64_PROGRAMS), so that this package's and ci/release's tests do not compile them
// side by side. A program added here but not there would go back to being compiled twice.
func TestMakefileCompilesEveryProgramForArm64(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "ARM64_PROGRAMS := "); ok {
			listed = strings.Fields(rest)
		}
	}
	if listed == nil {
		t.Fatal("the Makefile has no line ARM64_PROGRAMS := ...")
	}
	const module = "github.com/minicluster/minicluster/"
	var want []string
	for image, pkg := range multiPlatform {
		want = append(want, pkg)
		for _, p := range morePrograms[image] {
			want = append(want, p.Pkg)
		}
	}
	for _, pkg := range want {
		if rel := "./" + strings.TrimPrefix(pkg, module); !slices.Contains(listed, rel) {
			t.Errorf("the Makefile's ARM64_PROGRAMS lacks %s, which ci/push builds for linux/arm64", rel)
		}
	}
}
