package keygen

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
)

// The test vector of ZeroMQ RFC 32.
var rfc32Bytes = []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}

func TestZ85RFCVector(t *testing.T) {
	got, err := Z85Encode(rfc32Bytes)
	if err != nil || got != "HelloWorld" {
		t.Fatalf("Z85Encode(RFC 32 vector) = %q, %v; want HelloWorld", got, err)
	}
	back, err := Z85Decode("HelloWorld")
	if err != nil || !bytes.Equal(back, rfc32Bytes) {
		t.Fatalf("Z85Decode(HelloWorld) = % X, %v; want % X", back, err, rfc32Bytes)
	}
}

func TestZ85RoundTrip(t *testing.T) {
	for n := 0; n <= 64; n += 4 {
		data := make([]byte, n)
		rand.Read(data)
		s, err := Z85Encode(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != n/4*5 {
			t.Fatalf("encoded %d bytes into %d characters, want %d", n, len(s), n/4*5)
		}
		back, err := Z85Decode(s)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("round trip of % X: got % X, %v", data, back, err)
		}
	}
	// The extremes of a group.
	for _, data := range [][]byte{{0, 0, 0, 0}, {0xFF, 0xFF, 0xFF, 0xFF}} {
		s, _ := Z85Encode(data)
		if back, err := Z85Decode(s); err != nil || !bytes.Equal(back, data) {
			t.Fatalf("round trip of % X via %q: got % X, %v", data, s, back, err)
		}
	}
}

func TestZ85Rejects(t *testing.T) {
	if _, err := Z85Encode([]byte{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "multiple of 4") {
		t.Errorf("Z85Encode of 3 bytes: err = %v, want multiple of 4", err)
	}
	for in, want := range map[string]string{
		"Hello":      "", // valid
		"Hell":       "multiple of 5",
		"Hel o":      `invalid character ' '`,
		"Hel\"o":     `invalid character '"'`,
		"Hel_o":      `invalid character '_'`,
		"%nSc0":      "", // 0xFFFFFFFF
		"%nSc1":      "exceeds 32 bits",
		"#####":      "exceeds 32 bits",
		"HelloWorl~": `invalid character '~'`,
	} {
		_, err := Z85Decode(in)
		if want == "" {
			if err != nil {
				t.Errorf("Z85Decode(%q): unexpected error %v", in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Z85Decode(%q): err = %v, want it to mention %q", in, err, want)
		}
	}
}
