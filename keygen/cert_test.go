package keygen

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestGenerateRoundTrip(t *testing.T) {
	a, err := GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateKeyPair()
	if a.Secret == b.Secret || a.Public == b.Public {
		t.Fatal("two generated key pairs are equal")
	}
	a.Meta = []Meta{{"name", "flux-sample"}, {"keygen.hostname", "host-1"}}
	data, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse of our own file: %v\n%s", err, data)
	}
	if got.Public != a.Public || got.Secret != a.Secret {
		t.Fatal("keys changed in the round trip")
	}
	if v, _ := got.MetaValue("keygen.hostname"); v != "host-1" || len(got.Meta) != 2 {
		t.Fatalf("metadata %q after the round trip", got.Meta)
	}
	if len(a.PublicText()) != KeyTextSize || len(a.SecretText()) != KeyTextSize {
		t.Fatalf("key texts %q %q are not %d characters", a.PublicText(), a.SecretText(), KeyTextSize)
	}
}

func TestFromSecretFluxPair(t *testing.T) {
	raw, _ := Z85Decode(fluxSec)
	c, err := FromSecret([KeySize]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if c.PublicText() != fluxPub {
		t.Fatalf("public key of flux-core's test secret = %q, want %q", c.PublicText(), fluxPub)
	}
}

// TestEncodeFormat pins the layout flux-core writes: comment header, unindented section
// names, four-space indented key = "value" lines, metadata before curve.
func TestEncodeFormat(t *testing.T) {
	raw, _ := Z85Decode(fluxSec)
	c, _ := FromSecret([KeySize]byte(raw))
	c.Generated = time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC)
	c.Meta = []Meta{{"name", "flux-sample"}}
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `#   ****  Generated on 2026-11-23 09:30:00 by flux-keygen (minicluster)  ****
#   ZeroMQ CURVE **Secret** Certificate
#   DO NOT DISTRIBUTE

metadata
    name = "flux-sample"
curve
    public-key = "` + fluxPub + `"
    secret-key = "` + fluxSec + `"
`
	if string(data) != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", data, want)
	}
}

func TestNewMetadata(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	c, err := New(Options{
		Name:     "cluster-a",
		Meta:     []Meta{{"name", "ignored"}, {"site", "lab 1"}, {"keygen.hostname", "override"}, {"site", "second"}},
		Hostname: "node-7", Time: now, UserID: 65532, Version: "1.2.3",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Meta{
		{"name", "cluster-a"}, {"site", "lab 1"}, {"keygen.hostname", "override"},
		{"keygen.time", "2026-01-02T03:04:05"}, {"keygen.userid", "65532"},
		{"keygen.go-version", runtime.Version()}, {"keygen.minicluster-version", "1.2.3"},
	}
	if len(c.Meta) != len(want) {
		t.Fatalf("metadata %q, want %q", c.Meta, want)
	}
	for i := range want {
		if c.Meta[i] != want[i] {
			t.Fatalf("metadata %q, want %q", c.Meta, want)
		}
	}
	// Without --name the hostname names the certificate, as in flux keygen.
	c, _ = New(Options{Hostname: "node-7", Time: now})
	if v, _ := c.MetaValue("name"); v != "node-7" {
		t.Fatalf("name = %q, want the hostname", v)
	}
}

func TestValidateMeta(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"name", "ok value-1.2:3", ""},
		{"", "x", "key is empty"},
		{"a_b", "x", `key "a_b": character '_'`},
		{"a b", "x", `character ' '`},
		{"k", "a,b", `character ','`},
		{"k", "say \"hi\"", `character '"'`},
		{"k", "a_b", `character '_'`},
		{"k", "semi;colon", `character ';'`},
		{"k", "new\nline", `character '\n'`},
		{"k", strings.Repeat("x", 300), "line; flux reads at most 255"},
	} {
		err := ValidateMeta(tc.key, tc.value)
		if tc.want == "" {
			if err != nil {
				t.Errorf("ValidateMeta(%q, %q): %v", tc.key, tc.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateMeta(%q, %q) = %v, want %q", tc.key, tc.value, err, tc.want)
		}
	}
	if _, err := New(Options{Name: "a,b"}); err == nil || !strings.Contains(err.Error(), "','") {
		t.Errorf("New with name a,b: err = %v", err)
	}
	c, _ := GenerateKeyPair()
	c.Meta = []Meta{{"x", "1"}, {"x", "2"}}
	if _, err := c.Encode(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("Encode with a duplicate key: err = %v", err)
	}
}

func TestWriteFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "curve.cert")
	// An existing world-readable file must not keep its mode.
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := New(Options{Hostname: "h", Time: time.Now()})
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	got, err := ParseFile(path)
	if err != nil || got.Secret != c.Secret {
		t.Fatalf("ParseFile: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	if err := c.WriteFile(filepath.Join(t.TempDir(), "missing", "curve.cert")); err == nil {
		t.Fatal("WriteFile into a missing directory succeeded")
	}
}

// TestWriteFileToPipe: like flux keygen, PATH may be a pipe or /dev/stdout; it is written in
// place, not replaced.
func TestWriteFileToPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		data, _ := os.ReadFile(path)
		got <- data
	}()
	c, _ := New(Options{Hostname: "h", Time: time.Now()})
	if err := c.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(<-got)
	if err != nil || back.Public != c.Public {
		t.Fatalf("read from the pipe: %v", err)
	}
	if st, _ := os.Lstat(path); st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe was replaced by a %v", st.Mode())
	}
}
