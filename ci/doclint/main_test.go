package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes files (path: content) under a new directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func lines(n int) string { return strings.Repeat("x\n", n) }

// makefileOK: every phony target says what it does; a target's later lines (export, a second
// rule of prerequisites) need not.
const makefileOK = ".PHONY: all test\nall: build ## the same as build\ntest: export X = 1\ntest: build ## everything\n\tgo test ./...\n$(BIN):\n\tmkdir -p $@\n"

const chartOK = "# c\n\n" + valuesHeader + "\n"

func TestGoodTreePasses(t *testing.T) {
	dir := tree(t, map[string]string{
		"README.md":                    "# r\nSee [ops](docs/ops.md#losing-a-broker), [c](charts/minicluster/README.md) and [web](https://x.io/a).\n```sh\n[not](a/link)\n```\n",
		"docs/ops.md":                  "# Ops\n## Losing a broker\nBack to [the top](../README.md) and [here](#ops).\n" + lines(300),
		"charts/minicluster/README.md": chartOK,
		"Makefile":                     makefileOK,
	})
	if p := check(dir); len(p) != 0 {
		t.Fatalf("problems in a good tree: %q", p)
	}
}

func TestEachProblemIsNamed(t *testing.T) {
	dir := tree(t, map[string]string{
		"README.md":                    lines(251) + "[gone](docs/gone.md) [anchor](docs/ops.md#nowhere)\n",
		"docs/ops.md":                  "# Ops\n" + lines(400),
		"charts/minicluster/README.md": lines(80) + valuesHeader + "\n",
		"Makefile":                     ".PHONY: all lint gone\nall: build ## the same as build\nlint: tools\n\tgo vet ./...\n",
	})
	got := strings.Join(check(dir), "\n")
	for _, want := range []string{
		"README.md has 252 lines, more than 250",
		"README.md:252: link to docs/gone.md: no such file",
		"README.md:252: link to docs/ops.md#nowhere: no heading with that anchor",
		"docs/ops.md has 401 lines, more than 400",
		"the values table (\"| key | default | description |\") must start within its first 80 lines, found at 81",
		"Makefile: target lint has no \"## what it does\"",
		"Makefile: gone is in .PHONY but has no rule",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no problem %q in:\n%s", want, got)
		}
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		" Deleting the namespace instead of uninstalling": "deleting-the-namespace-instead-of-uninstalling",
		" Keys: flux-keygen":                              "keys-flux-keygen",
		" HPC: the scheduler, MPI, cores and GPUs":        "hpc-the-scheduler-mpi-cores-and-gpus",
		" `make help` and the_targets":                    "make-help-and-the_targets",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
