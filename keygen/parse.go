package keygen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Reasons a certificate is rejected. A *ParseError wraps one of them; test with errors.Is.
var (
	ErrNUL            = errors.New("contains a NUL byte")
	ErrLineTooLong    = errors.New("line too long")
	ErrOutsideSection = errors.New("line outside any section")
	ErrUnknownSection = errors.New("unknown section")
	ErrIndentedName   = errors.New("section name indented")
	ErrNotIndented    = errors.New("key not indented")
	ErrNoEquals       = errors.New("no '=' in key line")
	ErrBadKeyName     = errors.New("invalid key name")
	ErrNotQuoted      = errors.New("value not in double quotes")
	ErrBadValue       = errors.New("invalid character in value")
	ErrDuplicateMeta  = errors.New("duplicate metadata key")
	ErrUnknownCurve   = errors.New("unknown key in curve section")
	ErrBadKey         = errors.New("invalid CURVE key")
	ErrNoCurve        = errors.New("no curve section")
	ErrMissingPublic  = errors.New("public-key missing")
	ErrMissingSecret  = errors.New("secret-key missing")
	ErrKeyMismatch    = errors.New("public-key does not match secret-key")
)

// ParseError says why a certificate was rejected and, when a line is at fault, which one.
type ParseError struct {
	Line   int // 1-based; 0 when the file as a whole is at fault
	Err    error
	Detail string
}

func (e *ParseError) Error() string {
	msg := e.Err.Error()
	if e.Detail != "" {
		msg = e.Detail
	}
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, msg)
	}
	return msg
}

func (e *ParseError) Unwrap() error { return e.Err }

// isSpace is C's isspace in the C locale, which flux's strstrip uses.
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r'
}

func strip(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// Parse reads a certificate with the rules of flux-core's reader (libzmqutil/cert.c):
// blank lines and lines starting with '#' are skipped; "metadata" and "curve" are the only
// sections and their names are not indented; every other line is indented (space or tab) and
// reads key = "value" with the key of letters, digits, '.' and '-' and the value of Z85
// characters, space and tab; metadata keys are unique; curve holds public-key and secret-key,
// each 40 Z85 characters (a later line replaces an earlier one, as in flux); both must be
// present and the public key must be the one the secret key gives. Lines are at most 255 bytes.
func Parse(data []byte) (*Cert, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, &ParseError{Line: bytes.Count(data[:i], []byte("\n")) + 1, Err: ErrNUL}
	}
	c := &Cert{}
	var section string
	var seenCurve, havePublic, haveSecret bool
	for n, line := range strings.Split(string(data), "\n") {
		lineNo := n + 1
		fail := func(err error, format string, args ...any) (*Cert, error) {
			return nil, &ParseError{Line: lineNo, Err: err, Detail: fmt.Sprintf(format, args...)}
		}
		if len(line) > MaxLineLen {
			return fail(ErrLineTooLong, "line is %d bytes long; flux reads at most %d", len(line), MaxLineLen)
		}
		indented := line != "" && (line[0] == ' ' || line[0] == '\t')
		text := strip(line)
		if text == "" || text[0] == '#' {
			continue
		}
		isName := text == "metadata" || text == "curve"
		switch {
		case !indented && isName:
			section = text
			seenCurve = seenCurve || text == "curve"
			continue
		case indented && isName:
			return fail(ErrIndentedName, "section name %q must start the line (no indent)", text)
		case !indented && strings.Contains(text, "="):
			return fail(ErrNotIndented, "%q must be indented under a section (start it with a space or tab)", text)
		case !indented:
			return fail(ErrUnknownSection, "unknown section %q (flux knows metadata and curve)", text)
		case section == "":
			return fail(ErrOutsideSection, "%q comes before any section (metadata or curve)", text)
		}
		key, value, err := parseKeyValue(text)
		if err != nil {
			var pe *ParseError
			errors.As(err, &pe)
			pe.Line = lineNo
			return nil, pe
		}
		if section == "metadata" {
			if _, dup := c.MetaValue(key); dup {
				return fail(ErrDuplicateMeta, "metadata key %q appears twice", key)
			}
			c.Meta = append(c.Meta, Meta{Key: key, Value: value})
			continue
		}
		var dst *[KeySize]byte
		switch key {
		case "public-key":
			dst, havePublic = &c.Public, true
		case "secret-key":
			dst, haveSecret = &c.Secret, true
		default:
			return fail(ErrUnknownCurve, "unknown key %q in the curve section (flux knows public-key and secret-key)", key)
		}
		if len(value) != KeyTextSize {
			return fail(ErrBadKey, "%s is %d characters; a Z85 CURVE key has %d", key, len(value), KeyTextSize)
		}
		raw, err := Z85Decode(value)
		if err != nil {
			return fail(ErrBadKey, "%s is not valid Z85: %v", key, err)
		}
		copy(dst[:], raw)
	}
	switch {
	case !seenCurve:
		return nil, &ParseError{Err: ErrNoCurve, Detail: "no curve section: this is not a CURVE certificate"}
	case !havePublic:
		return nil, &ParseError{Err: ErrMissingPublic, Detail: "the curve section has no public-key"}
	case !haveSecret:
		return nil, &ParseError{Err: ErrMissingSecret, Detail: "the curve section has no secret-key"}
	}
	want, err := publicOf(c.Secret)
	if err != nil {
		return nil, &ParseError{Err: ErrBadKey, Detail: err.Error()}
	}
	if want != c.Public {
		return nil, &ParseError{Err: ErrKeyMismatch, Detail: fmt.Sprintf(
			"public-key %q does not match secret-key (which gives %q)", c.PublicText(), mustZ85(want[:]))}
	}
	return c, nil
}

// parseKeyValue splits `key = "value"` at the first '=' as flux does and checks both sides.
func parseKeyValue(text string) (key, value string, err error) {
	k, v, ok := strings.Cut(text, "=")
	if !ok {
		return "", "", &ParseError{Err: ErrNoEquals, Detail: fmt.Sprintf("%q is not key = \"value\"", text)}
	}
	key = strip(k)
	if key == "" {
		return "", "", &ParseError{Err: ErrBadKeyName, Detail: fmt.Sprintf("%q has an empty key", text)}
	}
	if i := badChar(key, metaKeyExtra); i >= 0 {
		return "", "", &ParseError{Err: ErrBadKeyName, Detail: fmt.Sprintf(
			"key %q: character %q is not allowed (flux accepts letters, digits, '.' and '-')", key, key[i])}
	}
	v = strip(v)
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", "", &ParseError{Err: ErrNotQuoted, Detail: fmt.Sprintf("value of %q must be in double quotes, got %q", key, v)}
	}
	value = v[1 : len(v)-1]
	if i := badChar(value, metaValueExtra); i >= 0 {
		return "", "", &ParseError{Err: ErrBadValue, Detail: fmt.Sprintf(
			"value of %q: character %q is not allowed (flux accepts letters, digits, space, tab and %s)",
			key, value[i], strings.TrimRight(metaValueExtra, " \t"))}
	}
	return key, value, nil
}

// ParseFile reads and parses a certificate file.
func ParseFile(path string) (*Cert, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
