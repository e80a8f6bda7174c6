package keygen

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParseCert holds these for any input: Parse does not panic; it either fails with a
// *ParseError or returns a certificate whose keys match, which encodes and parses back to the
// same keys and metadata.
func FuzzParseCert(f *testing.F) {
	f.Add([]byte(curve(fluxPub, fluxSec)))
	f.Add([]byte(curve(fluxPub2, fluxSec2)))
	f.Add([]byte("metadata\n    name = \"x\"\n" + curve(fluxPub, fluxSec)))
	f.Add([]byte("# c\n\nmetadata\n\tk = \" a=b \"\r\n curve\n"))
	f.Add([]byte("curve\npublic-key = \"\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if bytes.ContainsRune([]byte(err.Error()), '\n') {
				t.Fatalf("error %q is more than one line", err)
			}
			return
		}
		if pub, _ := publicOf(c.Secret); pub != c.Public {
			t.Fatal("accepted a certificate whose keys do not match")
		}
		out, err := c.Encode()
		if err != nil {
			t.Fatalf("Encode of a parsed certificate: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of re-encoded certificate: %v\n%s", err, out)
		}
		if again.Public != c.Public || again.Secret != c.Secret || len(again.Meta) != len(c.Meta) {
			t.Fatal("re-encoded certificate differs")
		}
		for i := range c.Meta {
			if again.Meta[i] != c.Meta[i] {
				t.Fatalf("metadata %q became %q", c.Meta[i], again.Meta[i])
			}
		}
	})
}
