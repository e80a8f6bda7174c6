package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/repo"
)

// The Makefile compiles the multi-platform images' programs for linux/arm64 before go test
// ./... (ARM64_PROGRAMS), so that this package's and ci/release's tests do not compile them
// side by side. A program added here but not there would go back to being compiled twice.
func TestMakefileCompilesEveryProgramForArm64(t *testing.T) {
	programs, err := repo.MakefileVar("ARM64_PROGRAMS")
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Fields(programs)
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
