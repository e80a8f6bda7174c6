package staticbuild

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minicluster/minicluster/internal/repo"
)

// TestBuild builds the smallest of the project's programs (ci/pause) for two architectures,
// once by relative path from the repository root and once by import path from elsewhere.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles a program twice")
	}
	root, err := repo.Root()
	require.NoError(t, err)
	for _, tc := range []struct {
		o    Options
		want elf.Machine
	}{
		{Options{Pkg: "./ci/pause", Dir: root, Version: "1.2.3-test", Arch: "amd64"}, elf.EM_X86_64},
		{Options{Pkg: "github.com/minicluster/minicluster/ci/pause", Version: "1.2.3-test", Arch: "arm64"}, elf.EM_AARCH64},
	} {
		tc.o.OutDir = t.TempDir()
		bin, err := Build(tc.o)
		require.NoError(t, err)
		f, err := elf.NewFile(bytes.NewReader(bin))
		require.NoError(t, err)
		assert.Equal(t, tc.want, f.Machine)
		for _, p := range f.Progs {
			assert.NotEqual(t, elf.PT_INTERP, p.Type, "static: no interpreter")
		}
		f.Close()
		assert.NoError(t, CheckStatic("pause", bin, tc.o.Arch))
		other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[tc.o.Arch]
		err = CheckStatic("pause", bin, other)
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), "want one for "+other)
		}
	}
}

func TestRefusals(t *testing.T) {
	err := CheckStatic("x", []byte("not elf"), "")
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "x is not an ELF binary")
	}
	root, err := repo.Root()
	require.NoError(t, err)
	_, err = Build(Options{Pkg: "./no/such/pkg", Dir: root, OutDir: t.TempDir()})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "package ./no/such/pkg is missing")
	}
	_, err = Build(Options{Pkg: "./ci/pause", Dir: root, Arch: "mips", OutDir: t.TempDir()})
	if assert.Error(t, err) {
		assert.Equal(t, `GOARCH "mips": only 386, amd64, arm, arm64, ppc64le, riscv64, s390x are supported`, err.Error())
	}
	// A dynamically linked binary: whatever ELF program this machine's sh is, if it has an
	// interpreter.
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	sh, err = filepath.EvalSymlinks(sh)
	require.NoError(t, err)
	data, err := os.ReadFile(sh)
	require.NoError(t, err)
	if f, err := elf.NewFile(bytes.NewReader(data)); err == nil {
		dynamic := false
		for _, p := range f.Progs {
			dynamic = dynamic || p.Type == elf.PT_INTERP
		}
		f.Close()
		if dynamic {
			err := CheckStatic("sh", data, "")
			if assert.Error(t, err) {
				assert.True(t, strings.HasSuffix(err.Error(), "is dynamically linked; the images need a static binary"))
			}
		}
	}
}
