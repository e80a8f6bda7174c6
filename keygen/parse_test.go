package keygen

import (
	"errors"
	"strings"
	"testing"
)

// Key pairs from flux-core's own tests (src/common/libzmqutil/test/cert.c).
const (
	fluxPub  = "FYFE.@650VuUqRGygAtG.RC$A<cid63q(WEnR+&y"
	fluxSec  = "^Oto<5V$^d/V}kj6^Q[LRwdgAY5K3gE{gN2+1ox)"
	fluxPub2 = "Viyg(M7U*Q6ZI=D6(q?]amgXrQ{[IQnEY{IF5*X)"
	fluxSec2 = "7F)3@>MGW.+)..qc)8R#lfL31*^QX<GXufgpVtbA" // has a '#' inside
)

func curve(pub, sec string) string {
	return "curve\n    public-key = \"" + pub + "\"\n    secret-key = \"" + sec + "\"\n"
}

func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		name, in, pub string
		meta          []Meta
	}{
		{"flux-core test pair", curve(fluxPub, fluxSec), fluxPub, nil},
		{"'#' inside a key", curve(fluxPub2, fluxSec2), fluxPub2, nil},
		{"czmq-era file with header and metadata", "#   ****  Generated on 2023-09-16 23:15:27 by CZMQ  ****\n" +
			"#   ZeroMQ CURVE **Secret** Certificate\n\nmetadata\n    name = \"picl0\"\n" +
			"    keygen.time = \"2023-09-16T23:15:27\"\n" + curve(fluxPub, fluxSec), fluxPub,
			[]Meta{{"name", "picl0"}, {"keygen.time", "2023-09-16T23:15:27"}}},
		{"blank lines, tab indent, CRLF, no final newline", "curve\r\n\t public-key = \"" + fluxPub + "\"\r\n\n" +
			"\tsecret-key=\"" + fluxSec + "\"", fluxPub, nil},
		{"indented comments", "metadata\n\t# comment\ncurve\n# comment\n" + curve(fluxPub, fluxSec)[6:], fluxPub, nil},
		{"curve before metadata", curve(fluxPub, fluxSec) + "metadata\n    a = \"\"\n", fluxPub, []Meta{{"a", ""}}},
		{"value with '=' and spaces", "metadata\n  k = \" a=b c \"\n" + curve(fluxPub, fluxSec), fluxPub, []Meta{{"k", " a=b c "}}},
		{"later key line wins, as in flux", "curve\n  public-key = \"" + fluxPub2 + "\"\n" + curve(fluxPub, fluxSec)[6:], fluxPub, nil},
		{"255-byte line", "metadata\n    k = \"" + strings.Repeat("v", MaxLineLen-10) + "\"\n" + curve(fluxPub, fluxSec),
			fluxPub, []Meta{{"k", strings.Repeat("v", MaxLineLen-10)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c.PublicText() != tc.pub {
				t.Errorf("public key %q, want %q", c.PublicText(), tc.pub)
			}
			if len(c.Meta) != len(tc.meta) {
				t.Fatalf("metadata %q, want %q", c.Meta, tc.meta)
			}
			for i := range tc.meta {
				if c.Meta[i] != tc.meta[i] {
					t.Errorf("metadata %q, want %q", c.Meta, tc.meta)
				}
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	good := curve(fluxPub, fluxSec)
	for _, tc := range []struct {
		name, in string
		want     error
		line     int
		detail   string // a substring of the message
	}{
		{"empty input", "", ErrNoCurve, 0, "no curve section"},
		{"only metadata", "metadata\n", ErrNoCurve, 0, "no curve section"},
		{"empty curve section", "metadata\ncurve\n", ErrMissingPublic, 0, "no public-key"},
		{"secret key missing", "curve\n public-key = \"" + fluxPub + "\"\n", ErrMissingSecret, 0, "no secret-key"},
		{"public key missing", "curve\n secret-key = \"" + fluxSec + "\"\n", ErrMissingPublic, 0, "no public-key"},
		{"extra section", "metadata\nunknown\n" + good, ErrUnknownSection, 2, `unknown section "unknown"`},
		{"section name indented", " curve\n" + good, ErrIndentedName, 1, `section name "curve" must start the line`},
		{"section name indented inside a section", "metadata\n  curve\n" + good, ErrIndentedName, 2, "no indent"},
		{"keys not indented", "curve\npublic-key = \"" + fluxPub + "\"\n", ErrNotIndented, 2, "must be indented"},
		{"key before any section", "  name = \"x\"\n" + good, ErrOutsideSection, 1, "before any section"},
		{"no '='", "metadata\n  name \"x\"\n" + good, ErrNoEquals, 2, `is not key = "value"`},
		{"empty key", "metadata\n  = \"x\"\n" + good, ErrBadKeyName, 2, "empty key"},
		{"underscore in key", "metadata\n  my_key = \"x\"\n" + good, ErrBadKeyName, 2, `character '_'`},
		{"value without quotes", "metadata\n  name = x\n" + good, ErrNotQuoted, 2, "double quotes"},
		{"public key missing end quote", "curve\n public-key = \"" + fluxPub + "\n secret-key = \"" + fluxSec + "\"\n", ErrNotQuoted, 2, "double quotes"},
		{"single quotes", "metadata\n  name = 'x'\n" + good, ErrNotQuoted, 2, "double quotes"},
		{"comma in value", "metadata\n  name = \"a,b\"\n" + good, ErrBadValue, 2, `character ','`},
		{"underscore in value", "metadata\n  name = \"a_b\"\n" + good, ErrBadValue, 2, `character '_'`},
		{"quote in value", "metadata\n  name = \"a\"b\"\n" + good, ErrBadValue, 2, `character '"'`},
		{"non-ASCII value", "metadata\n  name = \"h\u00e9\"\n" + good, ErrBadValue, 2, "not allowed"},
		{"duplicate metadata", "metadata\n  a = \"1\"\n  a = \"2\"\n" + good, ErrDuplicateMeta, 3, `"a" appears twice`},
		{"unknown curve key", "curve\n  private-key = \"" + fluxSec + "\"\n", ErrUnknownCurve, 2, `unknown key "private-key"`},
		{"illegal Z85 in public key", curve(fluxPub[:35]+"Vtb A", fluxSec), ErrBadKey, 2, "not valid Z85"},
		{"Z85 group overflow", curve("#####"+fluxPub[5:], fluxSec), ErrBadKey, 2, "exceeds 32 bits"},
		{"public key too long", curve(fluxPub+fluxPub, fluxSec), ErrBadKey, 2, "is 80 characters"},
		{"secret key too short", curve(fluxPub, fluxSec[:35]), ErrBadKey, 3, "is 35 characters"},
		{"empty key value", curve("", fluxSec), ErrBadKey, 2, "is 0 characters"},
		{"mismatched key pair", curve("YYFE.@650VuUqRGygAtG.RC$A<cid63q(WEnR+&y", fluxSec), ErrKeyMismatch, 0, "does not match"},
		{"pairs from two certificates", curve(fluxPub2, fluxSec), ErrKeyMismatch, 0, "gives \"" + fluxPub + "\""},
		{"line of 256 bytes", "metadata\n    k = \"" + strings.Repeat("v", MaxLineLen-9) + "\"\n" + good, ErrLineTooLong, 2, "256 bytes"},
		{"NUL byte", "metadata\n  a = \"\x00\"\n" + good, ErrNUL, 2, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("Parse accepted it: public %q", c.PublicText())
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %q is not %q", err, tc.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != tc.line {
				t.Errorf("error %q: want line %d", err, tc.line)
			}
			if !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("error %q does not say %q", err, tc.detail)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}
