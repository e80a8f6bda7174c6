// Package version holds the project's version: ./VERSION is where it is written, and the files
// that must carry it too (the chart's version and appVersion, the Helm 4 plugin's version, the
// project's own image tags in Chart.yaml's artifacthub.io/images and in values/) are written from
// it by Stamp (`make version`) and checked by Check (`make lint`, ci/release.sh).
package version

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/minicluster/minicluster/internal/repo"
)

// semver is what VERSION may hold: x.y.z[-prerelease], no +build (OCI tags cannot carry '+').
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// Read returns the version in root/VERSION.
func Read(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(data))
	if !semver.MatchString(v) {
		return "", fmt.Errorf("%s: %q is not x.y.z[-prerelease] (semantic version, no +build: OCI tags cannot carry '+')", filepath.Join(root, "VERSION"), v)
	}
	return v, nil
}

// FromRepo returns the version in VERSION of the repository the working directory is in (the
// default of the ci tools' --version flags).
func FromRepo() (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	return Read(root)
}

// field is one place in a file that carries the version: the first group of re is kept and
// the version (quoted when quote) written after it.
type field struct {
	re *regexp.Regexp
	// count is how many matches the file must have (0: any number).
	count int
	quote bool
	what  string
}

var (
	topVersion    = field{re: regexp.MustCompile(`(?m)^(version: ).*$`), count: 1, what: "top-level version:"}
	topAppVersion = field{re: regexp.MustCompile(`(?m)^(appVersion: ).*$`), count: 1, quote: true, what: "top-level appVersion:"}
	// ownImages are references to the project's own images (ci/images names them so).
	ownImages = field{re: regexp.MustCompile(`(ghcr\.io/minicluster/[a-z0-9][a-z0-9._-]*:)[^\s"']+`), what: "ghcr.io/minicluster/NAME:TAG image"}
)

// targets are the files (relative to the repository root, globs allowed) that carry the version.
var targets = []struct {
	glob   string
	fields []field
}{
	{"charts/minicluster/Chart.yaml", []field{topVersion, topAppVersion, ownImages}},
	{"postrender/plugin/plugin.yaml", []field{topVersion}},
	{"values/*.yaml", []field{ownImages}},
}

// stamp returns data with every field carrying v.
func stamp(data []byte, fields []field, v string) ([]byte, error) {
	for _, f := range fields {
		n := len(f.re.FindAllIndex(data, -1))
		if f.count > 0 && n != f.count {
			return nil, fmt.Errorf("%d %s lines, want %d", n, f.what, f.count)
		}
		val := v
		if f.quote {
			val = `"` + v + `"`
		}
		data = f.re.ReplaceAll(data, []byte("${1}"+val))
	}
	return data, nil
}

// Stale returns the files under root that do not carry version v where they should, with what
// they would become.
func Stale(root, v string) (map[string][]byte, error) {
	if !semver.MatchString(v) {
		return nil, fmt.Errorf("%q is not x.y.z[-prerelease]", v)
	}
	stale := map[string][]byte{}
	for _, t := range targets {
		paths, err := filepath.Glob(filepath.Join(root, t.glob))
		if err != nil {
			return nil, err
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("no %s in %s", t.glob, root)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			want, err := stamp(data, t.fields, v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if !bytes.Equal(data, want) {
				stale[p] = want
			}
		}
	}
	return stale, nil
}

// Stamp writes root/VERSION's version into every file that carries it and returns the files
// it changed, sorted.
func Stamp(root string) ([]string, error) {
	v, err := Read(root)
	if err != nil {
		return nil, err
	}
	stale, err := Stale(root, v)
	if err != nil {
		return nil, err
	}
	var changed []string
	for p, data := range stale {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, err
		}
		changed = append(changed, p)
	}
	sort.Strings(changed)
	return changed, nil
}

// Check fails, naming the files and the fix, when a file does not carry root/VERSION's version.
func Check(root string) error {
	v, err := Read(root)
	if err != nil {
		return err
	}
	stale, err := Stale(root, v)
	if err != nil {
		return err
	}
	if len(stale) == 0 {
		return nil
	}
	var names []string
	for p := range stale {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			rel = p
		}
		names = append(names, rel)
	}
	sort.Strings(names)
	return fmt.Errorf("VERSION says %s, but %s carry another version: run make version (go run ./ci/version), which writes VERSION into them", v, strings.Join(names, ", "))
}
