package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The scripts and tests ask for these by name.
func TestManifestPinsEverySourceTheBuildUses(t *testing.T) {
	for _, name := range []string{"flux-core", "flux-sched", "flux-pmix", "kueue", "flux-operator", "flux-restful-api"} {
		s, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s.File, name+"-") || !strings.HasSuffix(s.File, ".tar.gz") {
			t.Errorf("%s: file %q: the build scripts read the version from NAME-VERSION.tar.gz", name, s.File)
		}
	}
	if _, err := Lookup("flux-coree"); err == nil || !strings.Contains(err.Error(), "pinned: flux-core, flux-sched") {
		t.Errorf("an unknown name: %v, want the pinned names listed", err)
	}
}

func TestParseRefusesABadLine(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for line, want := range map[string]string{
		"a a.tar.gz " + sum:                                               "3 fields, want 4",
		"a a.tar.gz " + sum[:63] + " https://x/a":                         "not 64 lower-case hex digits",
		"a a.tar.gz " + strings.ToUpper(sum) + " https://x/a":             "not 64 lower-case hex digits",
		"a a.tar.gz " + sum + " http://x/a":                               `URL "http://x/a" is not https://`,
		"a ../a.tar.gz " + sum + " https://x/a":                           "not a plain file name",
		"a a.tar.gz " + sum + " https://x/a\na b " + sum + " https://x/b": "a is pinned twice",
	} {
		if _, err := parse("# comment\n\n" + line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parse(%q) = %v, want an error with %q", line, err, want)
		}
	}
}

// server serves body at /f.tar.gz and counts the requests it gets.
func server(t *testing.T, body []byte) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/f.tar.gz" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func pinned(body []byte, url string) Source {
	sum := sha256.Sum256(body)
	return Source{Name: "thing", File: "thing-1.0.tar.gz", SHA256: hex.EncodeToString(sum[:]), URL: url}
}

func write(t *testing.T, path string, body []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

// A mirror that holds the file is used in place, in either layout, before the cache and the
// network; the first mirror that holds it wins.
func TestMirrorUsedWhenItHoldsTheFile(t *testing.T) {
	body := []byte("the pinned bytes")
	srv, requests := server(t, body)
	s := pinned(body, srv.URL+"/f.tar.gz")
	empty, first, second, cache := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(first, "thing", s.File), body) // ../shared's layout: NAME/FILE
	write(t, filepath.Join(second, s.File), body)         // a flat directory of downloads
	write(t, filepath.Join(cache, s.File), body)

	got, err := s.Fetch(Places{Mirrors: []string{empty, first, second}, Cache: cache}, io.Discard)
	if err != nil || got != filepath.Join(first, "thing", s.File) {
		t.Errorf("Fetch = %q, %v; want the first mirror's file", got, err)
	}
	got, err = s.Fetch(Places{Mirrors: []string{empty, second}, Cache: cache}, io.Discard)
	if err != nil || got != filepath.Join(second, s.File) {
		t.Errorf("Fetch = %q, %v; want the flat mirror's file", got, err)
	}
	if requests.Load() != 0 {
		t.Errorf("%d requests with the file in a mirror, want none", requests.Load())
	}
}

// Without a mirror the file is downloaded into the cache once; the next Fetch takes it from there.
func TestDownloadedIntoTheCacheOnce(t *testing.T) {
	body := []byte("the pinned bytes")
	srv, requests := server(t, body)
	s := pinned(body, srv.URL+"/f.tar.gz")
	cache := filepath.Join(t.TempDir(), "sources")
	var log strings.Builder
	for i := 0; i < 2; i++ {
		got, err := s.Fetch(Places{Mirrors: []string{t.TempDir()}, Cache: cache}, &log)
		if err != nil || got != filepath.Join(cache, s.File) {
			t.Fatalf("Fetch %d = %q, %v; want the cache's file", i, got, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(cache, s.File)); string(b) != string(body) {
		t.Errorf("the cache holds %q, want %q", b, body)
	}
	if requests.Load() != 1 {
		t.Errorf("%d requests for two Fetches, want 1", requests.Load())
	}
	if !strings.Contains(log.String(), "downloading "+s.URL) {
		t.Errorf("the log %q does not say what it downloads", log.String())
	}
	if names := entries(t, cache); len(names) != 1 {
		t.Errorf("the cache holds %q, want the file alone", names)
	}
}

// A file whose sha256 is not the pinned one is refused wherever it is, and a download of other
// bytes leaves nothing in the cache.
func TestWrongChecksumRefused(t *testing.T) {
	body := []byte("the pinned bytes")
	srv, _ := server(t, []byte("other bytes"))
	s := pinned(body, srv.URL+"/f.tar.gz")
	otherSum := sha256.Sum256([]byte("other bytes"))
	other := hex.EncodeToString(otherSum[:])

	mirror, cache := t.TempDir(), t.TempDir()
	write(t, filepath.Join(mirror, s.File), []byte("other bytes"))
	_, err := s.Fetch(Places{Mirrors: []string{mirror}, Cache: cache}, io.Discard)
	for _, want := range []string{filepath.Join(mirror, s.File), "sha256 " + other, "pins " + s.SHA256, ManifestPath} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a wrong file in a mirror: %v, want an error naming %q", err, want)
		}
	}

	write(t, filepath.Join(cache, s.File), []byte("other bytes"))
	if _, err := s.Fetch(Places{Cache: cache}, io.Discard); err == nil || !strings.Contains(err.Error(), "not the pinned file") {
		t.Errorf("a wrong file in the cache: %v, want it refused", err)
	}

	cache = filepath.Join(t.TempDir(), "sources")
	_, err = s.Fetch(Places{Cache: cache}, io.Discard)
	for _, want := range []string{s.URL + " has sha256 " + other, "pins " + s.SHA256, "refused", filepath.Join(cache, s.File), MirrorEnv} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a download of other bytes: %v, want an error naming %q", err, want)
		}
	}
	if names := entries(t, cache); len(names) != 0 {
		t.Errorf("a refused download left %q in the cache", names)
	}
}

// A source the network cannot give names its URL, its sha256 and where to put it.
func TestMissingSourceNamesItsURL(t *testing.T) {
	body := []byte("the pinned bytes")
	srv, _ := server(t, body)
	gone := pinned(body, srv.URL+"/f.tar.gz")
	srv.Close() // nothing listens there any more: the connection is refused
	missing := pinned(body, srv.URL+"/f.tar.gz")
	live, _ := server(t, body)
	missing.URL = live.URL + "/no-such.tar.gz" // answered with 404

	for _, tc := range []struct {
		s    Source
		want string
	}{{gone, "connection refused"}, {missing, "404 Not Found"}} {
		cache := filepath.Join(t.TempDir(), "sources")
		_, err := tc.s.Fetch(Places{Mirrors: []string{t.TempDir()}, Cache: cache}, io.Discard)
		for _, want := range []string{"cannot download " + tc.s.URL, tc.want, "sha256 " + tc.s.SHA256, filepath.Join(cache, tc.s.File), MirrorEnv} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want an error naming %q", tc.s.URL, err, want)
			}
		}
	}
}

func TestDefaultPlaces(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "repo")
	mirror := filepath.Join(top, "mirror")
	for _, d := range []string{root, mirror} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("MINICLUSTER_CACHE", filepath.Join(top, "cache"))
	t.Setenv(MirrorEnv, "")
	p, err := DefaultPlaces(root)
	if err != nil || len(p.Mirrors) != 0 || p.Cache != filepath.Join(top, "cache", "sources") {
		t.Errorf("no mirror: %+v, %v; want no mirrors and the cache's sources/", p, err)
	}

	if err := os.Mkdir(filepath.Join(top, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(MirrorEnv, mirror)
	p, err = DefaultPlaces(root)
	if err != nil || strings.Join(p.Mirrors, " ") != mirror+" "+filepath.Join(top, "shared") {
		t.Errorf("with %s and ../shared: %+v, %v; want both, %s first", MirrorEnv, p, err, MirrorEnv)
	}

	t.Setenv(MirrorEnv, filepath.Join(top, "nowhere"))
	if _, err := DefaultPlaces(root); err == nil || !strings.Contains(err.Error(), MirrorEnv+"="+filepath.Join(top, "nowhere")+" is not a directory") {
		t.Errorf("a mirror that is not there: %v, want it named", err)
	}
}
