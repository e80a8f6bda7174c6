// Package sources gives the build the source tarballs it compiles from outside this repository
// (flux-core, Fluxion, flux-pmix, Kueue, the Flux Operator, the Flux RESTful API), each pinned
// in sources.txt by its upstream location and sha256: from a mirror directory when one holds
// it, else from the build cache, else downloaded into the cache; always checked against its
// sha256 first.
package sources

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// ManifestPath is where the pins are, for messages.
const ManifestPath = "internal/sources/sources.txt"

// MirrorEnv names a directory of source tarballs to use before the cache and the network.
const MirrorEnv = "MINICLUSTER_MIRROR"

//go:embed sources.txt
var manifest string

// Source is one pinned tarball.
type Source struct {
	Name   string // what the scripts ask for: flux-core
	File   string // its file name in a mirror directory and in the cache
	SHA256 string // of the file, in hex
	URL    string // where it is downloaded from when no mirror or cache holds it
}

var (
	hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)
	fileName  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// parse reads a manifest: NAME FILE SHA256 URL a line, # comments and blank lines skipped.
func parse(text string) ([]Source, error) {
	var all []Source
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: %d fields, want 4: NAME FILE SHA256 URL", i+1, len(f))
		}
		s := Source{Name: f[0], File: f[1], SHA256: f[2], URL: f[3]}
		switch {
		case seen[s.Name]:
			return nil, fmt.Errorf("line %d: %s is pinned twice", i+1, s.Name)
		case !fileName.MatchString(s.File):
			return nil, fmt.Errorf("line %d: file %q is not a plain file name", i+1, s.File)
		case !hexSHA256.MatchString(s.SHA256):
			return nil, fmt.Errorf("line %d: sha256 %q is not 64 lower-case hex digits", i+1, s.SHA256)
		case !strings.HasPrefix(s.URL, "https://"):
			return nil, fmt.Errorf("line %d: URL %q is not https://", i+1, s.URL)
		}
		seen[s.Name] = true
		all = append(all, s)
	}
	return all, nil
}

// All is every pinned source, in the manifest's order.
func All() ([]Source, error) {
	all, err := parse(manifest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestPath, err)
	}
	return all, nil
}

// Lookup is the source pinned under name.
func Lookup(name string) (Source, error) {
	all, err := All()
	if err != nil {
		return Source{}, err
	}
	var names []string
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Source{}, fmt.Errorf("no source %q in %s; pinned: %s", name, ManifestPath, strings.Join(names, ", "))
}

// Places are where Fetch looks for a file and where it downloads one to.
type Places struct {
	Mirrors []string // directories, in order: FILE at the top or under NAME/
	Cache   string   // directory of downloaded files
}

// DefaultPlaces are $MINICLUSTER_MIRROR, ../shared beside the repository at root (when there)
// and $MINICLUSTER_CACHE/sources (default ~/.cache/minicluster/sources).
func DefaultPlaces(root string) (Places, error) {
	var p Places
	if dir := os.Getenv(MirrorEnv); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return p, fmt.Errorf("%s=%s is not a directory: name a directory that holds the source tarballs, or unset it", MirrorEnv, dir)
		}
		p.Mirrors = append(p.Mirrors, dir)
	}
	if st, err := os.Stat(filepath.Join(root, "..", "shared")); err == nil && st.IsDir() {
		p.Mirrors = append(p.Mirrors, filepath.Join(filepath.Dir(root), "shared"))
	}
	cache := os.Getenv("MINICLUSTER_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return p, fmt.Errorf("no build cache: set MINICLUSTER_CACHE (%w)", err)
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "minicluster")
	}
	p.Cache = filepath.Join(cache, "sources")
	return p, nil
}

// Fetch returns the path of the source's file, checked against its sha256: the first mirror
// directory's, else the cache's, else downloaded into the cache (saying so on log). A file of
// another sha256 is refused, not replaced: someone put it there.
func (s Source) Fetch(p Places, log io.Writer) (string, error) {
	for _, dir := range p.Mirrors {
		for _, path := range []string{filepath.Join(dir, s.Name, s.File), filepath.Join(dir, s.File)} {
			if _, err := os.Stat(path); err == nil {
				return path, s.check(path)
			}
		}
	}
	cached := filepath.Join(p.Cache, s.File)
	if _, err := os.Stat(cached); err == nil {
		return cached, s.check(cached)
	}
	fmt.Fprintf(log, "sources: %s: downloading %s into %s\n", s.Name, s.URL, p.Cache)
	if err := s.download(cached); err != nil {
		return "", err
	}
	return cached, nil
}

// FileSHA256 is the sha256 of the file at path, in lower-case hex.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// check refuses a file whose sha256 is not the pinned one.
func (s Source) check(path string) error {
	got, err := FileSHA256(path)
	if err != nil {
		return err
	}
	if got != s.SHA256 {
		return fmt.Errorf("%s: sha256 %s, but %s pins %s for %s: not the pinned file; remove it, or put the pinned file there", path, got, ManifestPath, s.SHA256, s.Name)
	}
	return nil
}

// client gives up soon on a location the network cannot reach, but not on a slow download.
var client = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 15 * time.Second}).DialContext,
	TLSHandshakeTimeout:   15 * time.Second,
	ResponseHeaderTimeout: 30 * time.Second,
}}

// download writes the URL's file to path through a temporary file beside it, kept only when its
// sha256 is the pinned one.
func (s Source) download(path string) error {
	supply := fmt.Sprintf("supply it yourself: put %s (sha256 %s; what it holds is noted above its line in %s) at %s, or in a directory named by %s", s.File, s.SHA256, ManifestPath, path, MirrorEnv)
	resp, err := client.Get(s.URL)
	if err != nil {
		return fmt.Errorf("%s: cannot download %s (%v): %s", s.Name, s.URL, errors.Unwrap(err), supply)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: cannot download %s (%s): %s", s.Name, s.URL, resp.Status, supply)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+s.File+".part-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone once renamed; left over only on failure
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: downloading %s: %v: %s", s.Name, s.URL, err, supply)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return fmt.Errorf("%s: %s has sha256 %s, but %s pins %s: refused; %s", s.Name, s.URL, got, ManifestPath, s.SHA256, supply)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
