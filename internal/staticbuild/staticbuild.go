// Package staticbuild compiles the project's Go programs the way its images carry them: static
// (CGO_ENABLED=0) Linux binaries, built with -trimpath and -ldflags "-s -w -X main.version=V",
// each checked to be a static ELF for the architecture asked for. ci/images builds them for this
// machine, ci/push again for each platform of a multi-platform index.
package staticbuild

import (
	"bytes"
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// machines is the ELF machine of each GOARCH this package builds for.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM, "386": elf.EM_386,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// Arches are the GOARCH values Build supports, sorted.
func Arches() []string { return slices.Sorted(maps.Keys(machines)) }

// Options says what to build.
type Options struct {
	// Pkg is a package path relative to Dir ("./keygen/cmd/flux-keygen") or a full import path
	// (which builds from any directory inside the module).
	Pkg string
	// Dir is where go build runs ("" = the working directory).
	Dir string
	// Version is the binary's -X main.version.
	Version string
	// Arch is the GOARCH ("" = this machine's); Variant the arm variant (v6, v7), if any.
	Arch, Variant string
	// OutDir is where the binary is written (its name: the package's, the architecture's).
	OutDir string
}

// Build compiles o.Pkg for linux/o.Arch and returns the binary.
func Build(o Options) ([]byte, error) {
	arch := o.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	if _, ok := machines[arch]; !ok {
		return nil, fmt.Errorf("GOARCH %q: only %s are supported", arch, strings.Join(Arches(), ", "))
	}
	if strings.HasPrefix(o.Pkg, "./") {
		if _, err := os.Stat(filepath.Join(o.Dir, o.Pkg)); err != nil {
			return nil, fmt.Errorf("package %s is missing: %w", o.Pkg, err)
		}
	}
	out := filepath.Join(o.OutDir, strings.ReplaceAll(strings.TrimPrefix(o.Pkg, "./"), "/", "_")+"-"+arch+o.Variant)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+o.Version, "-o", out, o.Pkg)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if arch == "arm" && strings.HasPrefix(o.Variant, "v") {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(o.Variant, "v"))
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s for linux/%s%s: %v: %s", o.Pkg, arch, o.Variant, err, strings.TrimSpace(string(msg)))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	return data, CheckStatic(o.Pkg, data, arch)
}

// CheckStatic refuses what is not a static ELF binary (the images have no libc or loader) and,
// when arch is set, one for another architecture.
func CheckStatic(what string, data []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary: %w", what, err)
	}
	defer f.Close()
	if want, ok := machines[arch]; arch != "" && (!ok || f.Machine != want) {
		return fmt.Errorf("%s: ELF machine %s, want one for %s", what, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the images need a static binary", what)
		}
	}
	return nil
}
